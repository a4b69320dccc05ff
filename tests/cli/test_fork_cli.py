"""``blackbox fork``'s refusals, through click's CliRunner: each is decided before a proxy starts.

(Moved from the end-to-end fork tests, assertions unchanged: exit 2, the message
says what to change, and no child cassette — nor journal — is left behind.)
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "session"))
from fork_parent import weather_cassette

from blackbox_mitm.cli import main

SUN = '{"forecast": "sun", "celsius": 24}'


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def parent(tmp_path: Path) -> Path:
    return weather_cassette(tmp_path / "parent.json")


def _fork(parent: Path, out: Path, *args: str) -> Result:
    return cli("fork", str(parent), *args, "-o", str(out), "--", sys.executable, "-c", "raise SystemExit('the agent ran')")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--at", "99", "--tool-result", SUN], "past the run's last step"),
        (["--at", "6", "--tool-result", SUN], "terminal marker"),
        (["--at", "1", "--tool-result", SUN], "--response"),
        (["--at", "3", "--response", '{"content": "x"}'], "--tool-result"),
        (["--at", "3", "--tool-result", SUN, "--live-after", "1"], "after the live point"),
        (["--at", "3", "--at", "3", "--tool-result", SUN], "two edits of step 3"),
        (["--at", "5", "--response", '{"type": "final_answer", "text": ""}'], "neither text nor a tool call"),
        (["--at", "3", "--tool-result", "{not json"], "must be JSON"),
        (["--live-after", "42"], "past the run's last step"),
        ([], "nothing to fork"),
    ],
)
def test_refusals_exit_2_and_say_what_to_change(parent: Path, tmp_path: Path, args: list[str], says: str) -> None:
    result = _fork(parent, tmp_path / "child.json", *args)
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert not (tmp_path / "child.json").exists()
    assert not (tmp_path / "child.json.journal").exists()
    assert "the agent ran" not in result.output


def test_a_parent_that_does_not_verify_is_refused(parent: Path, tmp_path: Path) -> None:
    data = orjson.loads(parent.read_bytes())
    data["steps"][3]["payload"]["result"] = "tampered"
    bad = tmp_path / "tampered.json"
    bad.write_bytes(orjson.dumps(data))
    result = _fork(bad, tmp_path / "child.json", "--at", "3", "--tool-result", SUN)
    assert result.exit_code == 2
    assert "does not verify" in result.output


def test_live_and_script_together_are_refused(parent: Path, tmp_path: Path) -> None:
    script = tmp_path / "answers.json"
    script.write_text("[]")
    result = _fork(parent, tmp_path / "child.json", "--at", "3", "--tool-result", SUN, "--live", "--script", str(script))
    assert result.exit_code == 2
    assert "give one of them" in result.output


def test_an_existing_child_is_refused_with_the_flag_that_would_replace_it(parent: Path, tmp_path: Path) -> None:
    child = tmp_path / "child.json"
    child.write_text("mine")
    result = _fork(parent, child, "--at", "3", "--tool-result", SUN)
    assert result.exit_code == 2
    assert "the child cassette already exists" in result.output and "(--overwrite)" in result.output
    assert child.read_text() == "mine"
