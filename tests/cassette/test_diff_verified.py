"""`blackbox diff` checks both hash chains first: a tampered cassette never diffs as identical."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cassette_builders import CASSETTES, edit_file, save, weather_trace
from click.testing import CliRunner, Result

from blackbox_mitm.cassette.verify import UnverifiedCassetteError
from blackbox_mitm.cli import main
from blackbox_mitm.codecs.verified import diff_verified
from blackbox_mitm.errors import CassetteError


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _payload(step: int) -> Callable[[dict[str, Any]], None]:
    def change(d: dict[str, Any]) -> None:
        d["steps"][step]["payload"]["tampered"] = True

    return change


def _prev_hash(step: int) -> Callable[[dict[str, Any]], None]:
    def change(d: dict[str, Any]) -> None:
        d["steps"][step]["prevHash"] = "0" * 64

    return change


def _timestamp(step: int) -> Callable[[dict[str, Any]], None]:
    def change(d: dict[str, Any]) -> None:
        d["steps"][step]["timestamp"] += 1

    return change


def _swap(d: dict[str, Any]) -> None:
    # Two steps' contents swapped, every stored field left as it was.
    a, b = d["steps"][1], d["steps"][2]
    a["payload"], b["payload"] = b["payload"], a["payload"]


# Twelve tamperings, stored hashes left stale, as the probe tried them.
TAMPERINGS: dict[str, Callable[[dict[str, Any]], None]] = {
    **{f"payload of step {i}": _payload(i) for i in (0, 3, 6)},
    **{f"prevHash of step {i}": _prev_hash(i) for i in (0, 3, 6)},
    **{f"timestamp of step {i}": _timestamp(i) for i in (0, 3, 6)},
    "two payloads swapped": _swap,
    "a step's type": lambda d: d["steps"][5].update(type="tool_call"),
    "the result text": lambda d: d["steps"][3]["payload"]["result"].update(forecast="sun"),
}


@pytest.mark.parametrize("tampering", list(TAMPERINGS))
@pytest.mark.parametrize("side", ["a", "b"])
def test_a_tampered_cassette_never_diffs_as_identical(tmp_path: Path, tampering: str, side: str) -> None:
    original = save(weather_trace(), tmp_path / "original.json")
    tampered = edit_file(Path(shutil.copy(original, tmp_path / "tampered.json")), TAMPERINGS[tampering])
    a, b = (tampered, original) if side == "a" else (original, tampered)

    with pytest.raises(UnverifiedCassetteError) as caught:
        diff_verified(a, b)
    assert caught.value.path == str(tampered) and caught.value.problems
    assert isinstance(caught.value, CassetteError)

    result = run("diff", a, b)
    assert result.exit_code == 2, result.output
    assert f"{tampered}: the cassette does not verify" in result.output
    assert "identical" not in result.output
    as_json = run("diff", "--json", a, b)
    assert as_json.exit_code == 2 and '"identical"' not in as_json.output


def test_two_copies_of_a_valid_cassette_are_identical(tmp_path: Path) -> None:
    original = save(weather_trace(), tmp_path / "original.json")
    copy = Path(shutil.copy(original, tmp_path / "copy.json"))
    found = diff_verified(original, copy)
    assert found.divergence is None and len(found.a.steps) == 7
    result = run("diff", original, copy)
    assert result.exit_code == 0 and "identical: the same 7 steps in both" in result.output


def test_a_fork_and_its_parent_still_diff_at_the_fork_step() -> None:
    found = diff_verified(CASSETTES / "js_weather.json", CASSETTES / "js_weather_sunny.json")
    assert found.divergence is not None and found.divergence.index == 3


def test_a_cassette_that_holds_a_credential_is_not_compared(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "Zx9Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz"
    leaky = save(weather_trace(result={"env": f"ANTHROPIC_API_KEY={key}"}), tmp_path / "leaky.json")
    clean = save(weather_trace(), tmp_path / "clean.json")
    result = run("diff", clean, leaky)
    assert result.exit_code == 2 and "does not verify" in result.output and key not in result.output
