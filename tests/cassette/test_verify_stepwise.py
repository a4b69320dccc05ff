"""`blackbox verify FILE` reads the file a step at a time, with exactly the results of a whole-document parse.

Each file below (good, tampered, a repeated key, a broken chain, a credential, a
lone surrogate, another key order, compressed) is verified by ``verify_file``
and by the whole-document path it used before (parse, build, verify with the
file's bytes); the problems, their order and their messages must be the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from cassette_builders import weather_trace

from blackbox_mitm.cassette import compression, stepwise
from blackbox_mitm.cassette.jsonfile import read_file
from blackbox_mitm.cassette.store import parse_document, save_trace, trace_from_json
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.codecs.verified import verify_file, verify_trace


def whole_document(path: Path) -> list[str]:
    raw = compression.decode(path, read_file(path))
    trace = trace_from_json(parse_document(raw, path=str(path)), path=str(path))
    return [str(p) for p in verify_trace(trace, source=raw)]


def _tamper(data: dict[str, Any]) -> None:
    data["steps"][3]["payload"]["result"]["celsius"] = 30


def _unchain(data: dict[str, Any]) -> None:
    data["steps"][3]["prevHash"] = "0" * 64


def _credential(data: dict[str, Any]) -> None:
    data["steps"][5]["payload"]["text"] = "key sk-proj-" + "A1b2C3d4" * 6


def _surrogate(data: dict[str, Any]) -> None:
    data["steps"][0]["payload"]["messages"][0]["content"] = "half \ud83d"


EDITS: dict[str, Callable[[dict[str, Any]], None] | None] = {
    "good": None,
    "tampered": _tamper,
    "chain": _unchain,
    "credential": _credential,
    "surrogate": _surrogate,
}


def _write(path: Path, data: dict[str, Any], *, indent: bool) -> Path:
    text = json.dumps(data, indent=2 if indent else None).encode()  # a lone surrogate as \\ud83d, as a JavaScript writer writes it
    path.write_bytes(compression.encode(path, text))
    return path


@pytest.mark.parametrize("suffix", [".json", ".json.zst"])
@pytest.mark.parametrize("edit", list(EDITS))
def test_verify_file_reads_step_by_step_with_the_results_of_a_whole_parse(
    tmp_path: Path, edit: str, suffix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data: dict[str, Any] = dict(weather_trace().to_json())  # edited below
    change = EDITS[edit]
    if change is not None:
        change(data)
    path = _write(tmp_path / f"run{suffix}", data, indent=True)
    used: list[object] = []
    real = stepwise.load_stepwise

    def recording(p: Any) -> Any:
        used.append(real(p))
        return used[-1]

    monkeypatch.setattr(stepwise, "load_stepwise", recording)
    result = verify_file(path)
    assert used and used[0] is not None  # the step-at-a-time reader read it (no whole-document parse)
    assert [str(p) for p in result.problems] == whole_document(path)
    assert (result.steps, bool(result.problems)) == (len(data["steps"]), edit != "good")


def test_a_repeated_key_is_found_as_before(tmp_path: Path) -> None:
    path = save_trace(weather_trace(), tmp_path / "run.json")
    text = path.read_bytes().replace(b'"forecast": "rain"', b'"forecast": "rain", "forecast": "sun"', 1)
    path.write_bytes(text)
    problems = [str(p) for p in verify_file(path).problems]
    assert problems == whole_document(path)
    assert any("appears twice in one object" in p for p in problems)


def test_a_file_the_step_reader_steps_aside_for_is_verified_whole_as_before(tmp_path: Path) -> None:
    data: dict[str, Any] = dict(weather_trace().to_json())  # edited below
    reordered = {"steps": data["steps"], **{k: v for k, v in data.items() if k != "steps"}}
    path = tmp_path / "run.json"
    path.write_bytes(orjson.dumps(reordered))
    assert stepwise.load_stepwise(path) is None
    assert [str(p) for p in verify_file(path).problems] == whole_document(path) == []
    broken = tmp_path / "v1.json"
    broken.write_bytes(orjson.dumps({**data, "version": 1}))
    assert [p.code for p in verify_file(broken).problems] and verify_file(broken).trace is None


def test_an_empty_trace_says_so_as_before(tmp_path: Path) -> None:
    path = save_trace(Trace.new("nothing", created_at=1), tmp_path / "run.json")
    assert [str(p) for p in verify_file(path).problems] == whole_document(path)
