"""`blackbox golden add|list|remove`, and `blackbox test`'s usage errors, through click's CliRunner."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from blackbox_mitm.cassette import Trace, save_trace
from blackbox_mitm.cli import main

T0 = 1_732_981_200_000
TOOLS = [
    {
        "name": "get_weather",
        "description": "Weather by city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


def weather_run(path: Path, run_id: str, question: str = "What's the weather in Paris?") -> Path:
    """A small verified cassette: one tool round, then the answer."""
    call = {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}}
    trace = Trace.new(run_id, created_at=T0)
    trace.append("model_input", {"messages": [{"role": "user", "content": question}], "tools": TOOLS}, timestamp=T0 + 1)
    trace.append("model_output", {"type": "tool_calls", "calls": [dict(call)]}, timestamp=T0 + 2)
    trace.append("tool_call", dict(call), timestamp=T0 + 3)
    trace.append("tool_result", {"toolCallId": "call-0", "toolName": "get_weather", "result": {"forecast": "rain"}}, timestamp=T0 + 4)
    history = [
        {"role": "user", "content": question},
        {"role": "assistant", "content": [{"type": "tool_use", **call}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather", "result": {"forecast": "rain"}}],
        },
    ]
    trace.append("model_input", {"messages": history, "tools": TOOLS}, timestamp=T0 + 5)
    trace.append("model_output", {"type": "final_answer", "text": "Rain in Paris."}, timestamp=T0 + 6)
    trace.append("metadata", {"event": "run_completed", "status": "success", "result": "Rain in Paris."}, timestamp=T0 + 7)
    return save_trace(trace, path)


def tamper(path: Path) -> Path:
    data = json.loads(path.read_text())
    data["steps"][5]["payload"]["text"] = "Sun in Paris."  # the hash chain no longer holds
    path.write_text(json.dumps(data))
    return path


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def goldens(tmp_path: Path) -> Path:
    return tmp_path / "goldens"


def test_add_copies_a_verified_cassette_byte_for_byte(tmp_path: Path, goldens: Path) -> None:
    source = weather_run(tmp_path / "weather.json", "weather-1")
    result = cli("golden", "add", str(source), "--goldens", str(goldens))
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"added golden weather (run weather-1, 7 steps, 2 model calls) as {goldens / 'weather.json'}"
    assert (goldens / "weather.json").read_bytes() == source.read_bytes()

    named = weather_run(tmp_path / "other.json", "other-1")
    assert cli("golden", "add", str(named), "--name", "sunny.json", "--goldens", str(goldens)).exit_code == 0
    assert sorted(p.name for p in goldens.iterdir()) == ["sunny.json", "weather.json"]


def test_add_refuses_a_cassette_that_does_not_verify(tmp_path: Path, goldens: Path) -> None:
    source = tamper(weather_run(tmp_path / "weather.json", "weather-1"))
    result = cli("golden", "add", str(source), "--goldens", str(goldens))
    assert result.exit_code == 1
    assert "does not verify" in result.output
    assert not (goldens / "weather.json").exists()


def test_add_refuses_a_run_that_failed(tmp_path: Path, goldens: Path) -> None:
    trace = Trace.new("crashed-1", created_at=T0)
    trace.append("model_input", {"messages": [{"role": "user", "content": "Paris?"}], "tools": TOOLS}, timestamp=T0 + 1)
    trace.append("model_output", {"type": "final_answer", "text": "Rain."}, timestamp=T0 + 2)
    trace.append("metadata", {"event": "run_failed", "status": "error", "reason": "process_exit", "exitCode": 1}, timestamp=T0 + 3)
    source = save_trace(trace, tmp_path / "crashed.json")
    result = cli("golden", "add", str(source), "--goldens", str(goldens))
    assert result.exit_code == 1
    assert "the recorded run failed (process_exit, exit code 1)" in result.output
    assert not (goldens / "crashed.json").exists()


def test_add_never_overwrites_unless_asked(tmp_path: Path, goldens: Path) -> None:
    first = weather_run(tmp_path / "a" / "weather.json", "weather-1")
    second = weather_run(tmp_path / "b" / "weather.json", "weather-2", question="What's the weather in Lyon?")
    assert cli("golden", "add", str(first), "--goldens", str(goldens)).exit_code == 0
    refused = cli("golden", "add", str(second), "--goldens", str(goldens))
    assert refused.exit_code == 1
    assert "a golden named 'weather' already exists; pass --overwrite" in refused.output
    assert (goldens / "weather.json").read_bytes() == first.read_bytes()

    replaced = cli("golden", "add", str(second), "--goldens", str(goldens), "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    assert (goldens / "weather.json").read_bytes() == second.read_bytes()


def test_add_refuses_a_run_already_golden_under_another_name(tmp_path: Path, goldens: Path) -> None:
    source = weather_run(tmp_path / "weather.json", "weather-1")
    assert cli("golden", "add", str(source), "--goldens", str(goldens)).exit_code == 0
    again = cli("golden", "add", str(source), "--name", "copy", "--goldens", str(goldens))
    assert again.exit_code == 1
    assert "run weather-1 is already golden as 'weather'" in again.output
    assert not (goldens / "copy.json").exists()


@pytest.mark.parametrize("name", ["../escape", "a/b", ".hidden", "", "with space"])
def test_add_refuses_a_bad_name_as_a_usage_error(tmp_path: Path, goldens: Path, name: str) -> None:
    source = weather_run(tmp_path / "weather.json", "weather-1")
    result = cli("golden", "add", str(source), "--name", name, "--goldens", str(goldens))
    assert result.exit_code == 2
    assert "is not a golden name" in result.output
    assert not goldens.exists()


def test_list_shows_name_run_steps_calls_and_input(tmp_path: Path, goldens: Path) -> None:
    for name, run, question in (("paris", "paris-1", "What's the weather in Paris?"), ("lyon", "lyon-1", "Weather\nin Lyon?")):
        cli("golden", "add", str(weather_run(tmp_path / f"{name}.json", run, question)), "--goldens", str(goldens))
    (goldens / "broken.json").write_text("{")
    (goldens / "README.md").write_text("not a golden")

    table = cli("golden", "list", "--goldens", str(goldens))
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    assert lines[0].split() == ["NAME", "RUN", "STEPS", "CALLS", "INPUT"]
    assert lines[1].startswith("broken ") and "ERROR:" in lines[1] and "truncated" in lines[1]
    assert lines[2].split() == ["lyon", "lyon-1", "7", "2", "Weather\\nin", "Lyon?"]
    assert lines[3].split(maxsplit=4) == ["paris", "paris-1", "7", "2", "What's the weather in Paris?"]
    assert len(lines) == 4

    listed = json.loads(cli("golden", "list", "--json", "--goldens", str(goldens)).output)
    assert [g["name"] for g in listed] == ["broken", "lyon", "paris"]
    assert listed[2] == {
        "name": "paris",
        "path": str(goldens / "paris.json"),
        "run": "paris-1",
        "steps": 7,
        "model_calls": 2,
        "input": "What's the weather in Paris?",
        "error": None,
    }
    assert listed[0]["run"] is None and "truncated" in listed[0]["error"]


def test_list_of_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    result = cli("golden", "list", "--goldens", str(tmp_path / "nowhere"))
    assert result.exit_code == 2
    assert "there is no goldens folder" in result.output


def test_remove_by_name_or_run_id(tmp_path: Path, goldens: Path) -> None:
    cli("golden", "add", str(weather_run(tmp_path / "paris.json", "paris-1")), "--goldens", str(goldens))
    cli("golden", "add", str(weather_run(tmp_path / "lyon.json", "lyon-1")), "--goldens", str(goldens))

    by_name = cli("golden", "remove", "paris", "--goldens", str(goldens))
    assert by_name.exit_code == 0, by_name.output
    assert by_name.output.strip() == f"removed golden {goldens / 'paris.json'}"
    by_run = cli("golden", "remove", "lyon-1", "--goldens", str(goldens))
    assert by_run.exit_code == 0, by_run.output
    assert list(goldens.iterdir()) == []

    unknown = cli("golden", "remove", "tokyo", "--goldens", str(goldens))
    assert unknown.exit_code == 1
    assert "no golden named 'tokyo'" in unknown.output


def test_a_journal_beside_a_golden_makes_it_an_error_and_is_left_alone(tmp_path: Path, goldens: Path) -> None:
    cli("golden", "add", str(weather_run(tmp_path / "paris.json", "paris-1")), "--goldens", str(goldens))
    journal = goldens / "paris.json.journal"
    journal.write_text("{}\n")
    before = (goldens / "paris.json").read_bytes()
    listed = json.loads(cli("golden", "list", "--json", "--goldens", str(goldens)).output)
    assert "journal" in listed[0]["error"]
    assert (goldens / "paris.json").read_bytes() == before and journal.exists()


def test_test_without_a_folder_or_with_an_empty_one(tmp_path: Path, goldens: Path) -> None:
    missing = cli("test", "--goldens", str(goldens), "--", "true")
    assert missing.exit_code == 2
    assert f"there is no goldens folder at {goldens}" in missing.output

    goldens.mkdir()
    junit = tmp_path / "junit.xml"
    empty = cli("test", "--goldens", str(goldens), "--junit", str(junit), "--", "true")
    assert empty.exit_code == 1
    assert "a suite that tests nothing fails (pass --allow-empty" in empty.output
    assert ET.parse(junit).getroot().get("tests") == "0"
    assert cli("test", "--goldens", str(goldens), "--allow-empty", "--junit", str(junit), "--", "true").exit_code == 0


@pytest.mark.parametrize("args", [["--timeout", "0"], ["-j", "0"], []])
def test_test_usage_errors(goldens: Path, args: list[str]) -> None:
    goldens.mkdir()
    command = ["--", "true"] if args else []
    result = cli("test", "--goldens", str(goldens), *args, *command)
    assert result.exit_code == 2
