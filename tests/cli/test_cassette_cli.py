"""`blackbox verify`, `show`, `diff` and `recover` through click's CliRunner: output and exit codes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cassette"))  # the shared cassette builders
from cassette_builders import CASSETTES, edit_file, save, weather_trace, write_json
from click.testing import CliRunner, Result

from blackbox_mitm.cassette import Journal, Trace, journal_path, load_trace
from blackbox_mitm.cli import main

PARENT = CASSETTES / "js_weather.json"
CHILD = CASSETTES / "js_weather_sunny.json"


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return save(weather_trace(), tmp_path / "good.json")


@pytest.fixture
def tampered(tmp_path: Path) -> Path:
    path = save(weather_trace(), tmp_path / "tampered.json")
    return edit_file(path, lambda d: d["steps"][3]["payload"]["result"].update(forecast="sun"))


# -- verify -------------------------------------------------------------------------------------


def test_verify_valid_files_exits_0(good: Path) -> None:
    result = run("verify", good, PARENT, CHILD)
    assert result.exit_code == 0
    assert result.output.splitlines() == [f"OK {good} (7 steps)", f"OK {PARENT} (7 steps)", f"OK {CHILD} (7 steps)"]


def test_verify_a_tampered_file_exits_1_naming_the_step(good: Path, tampered: Path) -> None:
    result = run("verify", good, tampered)
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == f"OK {good} (7 steps)"
    assert lines[1].startswith(f"FAIL {tampered}: step 3: hash ")


def test_verify_lists_every_problem_with_all(tmp_path: Path) -> None:
    path = save(weather_trace(), tmp_path / "run.json")

    def retime(data: dict[str, Any]) -> None:
        for n in (2, 5):
            data["steps"][n]["timestamp"] = 1

    edit_file(path, retime)
    short = run("verify", path)
    assert short.output.splitlines()[1] == "  (and 1 more problem; --all lists them)"
    full = run("verify", "--all", path)
    assert full.output.splitlines()[1].startswith("  step 5: hash ")


def test_verify_a_v1_cassette_fails_with_re_record(tmp_path: Path) -> None:
    data = weather_trace().to_json()
    data["version"] = 1
    path = write_json(tmp_path / "old.json", data)
    result = run("verify", path)
    assert result.exit_code == 1
    assert result.output.startswith(f"FAIL {path}: ") and "re-record the run" in result.output


def test_verify_a_neutrality_leak_fails(tmp_path: Path) -> None:
    trace = weather_trace()
    trace.append("model_output", {"type": "final_answer", "text": "hi", "usage": {"output_tokens": 3}})
    path = save(trace, tmp_path / "leak.json")
    result = run("verify", path)
    assert result.exit_code == 1
    assert result.output.startswith(f"FAIL {path}: step 7: payload.usage: ")


def test_verify_an_unreadable_file_exits_2(good: Path, tampered: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("not json")
    result = run("verify", good, tampered, broken, tmp_path / "missing.json")
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert lines[0].startswith("OK ") and lines[1].startswith("FAIL ")
    assert lines[2].startswith(f"ERROR {broken}: the file is not valid JSON")
    assert lines[3].startswith(f"ERROR {tmp_path / 'missing.json'}: no such file; check the path")


def test_verify_without_files_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["verify"])
    assert result.exit_code == 2
    assert "Missing argument" in result.output


# -- show ---------------------------------------------------------------------------------------


def test_show_prints_the_timeline(good: Path) -> None:
    result = run("show", good)
    assert result.exit_code == 0
    out = result.output
    assert out.startswith("run weather-1\nrecorded 2024-11-30 15:40:00 UTC · 7 steps over 1.10s · ended: run completed\n")
    for summary in (
        'gpt-4o-mini · 1 message · user: "What\'s the weather in Paris?"',
        'calls get_weather({"city":"Paris"})',
        'get_weather → {"forecast":"rain","celsius":12}',
        'answer: "It is raining in Paris, 12 °C."',
        'run completed: "It is raining in Paris, 12 °C."',
    ):
        assert summary in out
    assert "+0.41s" in out


def test_show_a_fork_names_its_parent() -> None:
    out = run("show", CHILD).output
    assert "forked from js-weather at step 3 (js-weather:3)" in out
    assert 'get_weather → {"forecast":"sun","celsius":24}' in out


def test_show_json_parses(good: Path) -> None:
    result = run("show", "--json", good)
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["run"] == "weather-1" and data["steps"] == 7
    assert [r["type"] for r in data["timeline"]] == [s.type for s in weather_trace().steps]
    assert data["timeline"][2]["summary"] == 'get_weather({"city":"Paris"})'


def test_show_json_with_a_lone_surrogate_is_valid_json(tmp_path: Path) -> None:
    path = save(weather_trace(answer="cut \ud83d"), tmp_path / "cut.json")
    data = json.loads(run("show", "--json", path).output)
    assert data["terminal"]["result"] == "cut \ud83d"  # the JSON escape reads back as the same string
    assert data["timeline"][5]["summary"] == 'answer: "cut \\ud83d"'  # printable text


def test_show_an_unreadable_file_exits_2(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("[1, 2")
    result = run("show", tmp_path / "x.json")
    assert result.exit_code == 2
    assert "is truncated" in result.output and str(tmp_path / "x.json") in result.output


# -- diff ---------------------------------------------------------------------------------------


def test_diff_identical_runs_exits_0(good: Path, tmp_path: Path) -> None:
    other = save(weather_trace("another-id"), tmp_path / "other.json")
    result = run("diff", good, other)
    assert result.exit_code == 0
    assert result.output.splitlines()[-1] == "identical: the same 7 steps in both (every hash matches)"


def test_diff_a_fork_against_its_parent_exits_1() -> None:
    result = run("diff", PARENT, CHILD)
    assert result.exit_code == 1
    out = result.output
    assert "first divergence at step 3 (input): step 3 (tool_result get_weather): different input: payload.result differs" in out
    assert "steps 0–2 are the same in both runs" in out
    assert '  3  tool_result   get_weather → {"forecast":"sun","celsius":24}' in out
    assert '  5  model_output  answer: "Sunny in Paris: 24 °C."' in out
    assert '  5  model_output  answer: "It is raining in Paris: 12.5 °C."' in out


def test_diff_tail_limits_the_listing() -> None:
    out = run("diff", "--tail", "1", PARENT, CHILD).output
    assert out.count("… and 3 more steps (--tail 0 lists them all)") == 2


def test_diff_a_shorter_run(good: Path, tmp_path: Path) -> None:
    trace = weather_trace()
    del trace.steps[5:]
    short = save(trace, tmp_path / "short.json")
    result = run("diff", short, good)
    assert result.exit_code == 1
    assert "first divergence at step 5 (length): a ended after 5 steps and b goes on with 2 more steps" in result.output
    assert "a ends here, after 5 steps" in result.output


def test_diff_json_parses() -> None:
    result = run("diff", "--json", PARENT, CHILD)
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["identical"] is False
    assert data["a"] == {"path": str(PARENT), "run": "js-weather", "steps": 7}
    first = data["firstDivergence"]
    assert (first["index"], first["kind"], first["field"]) == (3, "input", "payload.result")
    assert len(first["tails"]["a"]) == 4


def test_diff_an_unreadable_file_exits_2(good: Path, tmp_path: Path) -> None:
    result = run("diff", good, tmp_path / "missing.json")
    assert result.exit_code == 2
    assert "no such file" in result.output


# -- recover ------------------------------------------------------------------------------------


def _interrupted(cassette: Path) -> None:
    source = weather_trace("rec")
    trace = Trace.new("rec", created_at=source.createdAt)
    journal = Journal(cassette, trace, fsync=False)
    journal.append([trace.append(s.type, s.payload, timestamp=s.timestamp) for s in source.steps[:2]])
    journal.append([trace.append(s.type, s.payload, timestamp=s.timestamp) for s in source.steps[2:4]])
    journal.close()
    raw = journal_path(cassette).read_bytes()
    journal_path(cassette).write_bytes(raw[:-25])  # the last write torn


def test_recover_writes_a_valid_cassette(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    _interrupted(cassette)
    shown = run("show", cassette)
    assert shown.exit_code == 2 and "blackbox recover" in shown.output  # show does not recover on its own
    result = run("recover", cassette)
    assert result.exit_code == 0
    assert result.output.splitlines()[0].startswith(
        f"recovered {cassette} (3 steps); it ends with step 2: run failed: recording_interrupted"
    )
    assert run("verify", cassette).output == f"OK {cassette} (3 steps)\n"
    assert [s.type for s in load_trace(cassette, recover=False).steps] == ["model_input", "model_output", "metadata"]


def test_recover_accepts_the_journal_path(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    _interrupted(cassette)
    assert run("recover", journal_path(cassette)).exit_code == 0
    assert cassette.exists() and not journal_path(cassette).exists()


def test_recover_with_nothing_to_recover_exits_2(good: Path) -> None:
    before = good.read_bytes()
    result = run("recover", good)
    assert result.exit_code == 2
    assert "no journal to recover" in result.output
    assert good.read_bytes() == before
