"""End to end: a strict replay that explains itself, through a real proxy and the real openai SDK.

A baseline run is recorded once; then the agent is replayed with one knob turned,
and the report (`--report` JSON and the human text on stderr) must name the place.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import ROOT, blackbox, remote_args
from fake_provider import FakeProvider
from once import shared

from blackbox_mitm.cassette import load_trace

pytestmark = pytest.mark.e2e

AGENT = [sys.executable, str(ROOT / "tests" / "e2e" / "agents" / "knobs_agent.py")]
QUESTION = "What's the weather in Paris?"
BASE = ["--temperature", "0.2"]


def _record(path: Path, confdir: Path, args: list[str], script: list[dict[str, Any]] | None = None) -> str:
    with FakeProvider(script) as provider:
        remote = remote_args(provider.url)
        rec = blackbox("record", "-o", str(path), "--confdir", str(confdir), *remote, "--", *AGENT, *args)
    assert rec.returncode == 0, rec.stderr
    return rec.stdout


def _replay(path: Path, confdir: Path, tmp_path: Path, args: list[str], *options: str) -> tuple[Any, dict[str, Any]]:
    report = tmp_path / "report.json"
    proc = blackbox("replay", str(path), "--confdir", str(confdir), "--report", str(report), *options, "--", *AGENT, *args)
    return proc, orjson.loads(report.read_bytes())


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> Path:
    def make(folder: Path) -> Path:
        path = folder / "baseline.json"
        out = _record(path, confdir, [QUESTION, *BASE])
        assert out.strip() == "Paris: cloudy, 18°C."
        return path

    return shared(tmp_path_factory, "divergence-baseline", make)  # once a test session (tests/once.py)


def test_the_unchanged_agent_replays_clean(baseline: Path, confdir: Path, tmp_path: Path) -> None:
    proc, status = _replay(baseline, confdir, tmp_path, [QUESTION, *BASE])
    assert proc.returncode == 0, proc.stderr
    assert status["verdict"] == "ok" and status["model_calls_served"] == 2 and status["incomplete"] == []


def test_changed_user_message(baseline: Path, confdir: Path, tmp_path: Path) -> None:
    proc, status = _replay(baseline, confdir, tmp_path, ["What's the weather in Lyon?", *BASE])
    assert proc.returncode == 1
    d = status["first_divergence"]
    assert d["step"] == 0
    assert {k: d["difference"][k] for k in ("message", "role", "field", "at_char")} == {
        "message": 0,
        "role": "user",
        "field": "content",
        "at_char": 22,
    }
    assert d["difference"]["recorded"] == "What's the weather in Paris?" and d["difference"]["got"] == "What's the weather in Lyon?"
    assert d["expected_digest"] != d["got_digest"]
    assert "the agent diverged from recorded run" in proc.stderr
    assert 'got:      "What\'s the weather in Lyon?"' in proc.stderr
    assert "(the recording's request has 1 message, the agent's 1)" in proc.stderr


def test_changed_tool_definition(baseline: Path, confdir: Path, tmp_path: Path) -> None:
    proc, status = _replay(baseline, confdir, tmp_path, [QUESTION, *BASE, "--describe", "The weather."])
    assert proc.returncode == 1
    diff = status["first_divergence"]["difference"]
    assert diff["field"] == "tools"
    assert "Current weather for a city." in diff["recorded"] and "The weather." in diff["got"]


def test_changed_temperature(baseline: Path, confdir: Path, tmp_path: Path) -> None:
    proc, status = _replay(baseline, confdir, tmp_path, [QUESTION, "--temperature", "0.7"])
    assert proc.returncode == 1
    diff = status["first_divergence"]["difference"]
    assert diff["field"] == "params.temperature"
    assert (diff["recorded"], diff["got"]) == ("0.2", "0.7")
    assert "params.temperature" in proc.stderr


def test_a_missing_message(baseline: Path, confdir: Path, tmp_path: Path) -> None:
    proc, status = _replay(baseline, confdir, tmp_path, [QUESTION, *BASE, "--forget-results"])
    assert proc.returncode == 1
    d = status["first_divergence"]
    assert d["step"] == 4  # the second model call
    assert d["difference"]["field"] == "missing" and d["difference"]["message"] == 2
    assert (d["difference"]["recorded_messages"], d["difference"]["got_messages"]) == (3, 2)


def test_an_extra_call_is_exhausted(baseline: Path, confdir: Path, tmp_path: Path) -> None:
    proc, status = _replay(baseline, confdir, tmp_path, [QUESTION, *BASE, "--extra-call"])
    assert proc.returncode != 0
    assert status["exhausted_calls"] == 1 and status["verdict"] == "overran"
    assert "overran" in proc.stderr


def test_an_agent_that_stops_early_is_incomplete(baseline: Path, confdir: Path, tmp_path: Path) -> None:
    proc, status = _replay(baseline, confdir, tmp_path, [QUESTION, *BASE, "--stop-after", "1"])
    assert proc.stdout.strip() == "stopped early"
    assert proc.returncode == 1  # the agent exited 0, the replay did not pass
    assert status["incomplete"] == [4] and status["verdict"] == "incomplete"


def test_sequence_mode_serves_whatever_is_asked(baseline: Path, confdir: Path, tmp_path: Path) -> None:
    proc, status = _replay(baseline, confdir, tmp_path, ["What's the weather in Lyon?", *BASE], "--match", "sequence")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Paris: cloudy, 18°C."
    assert status["verdict"] == "ok"


def test_identical_parallel_requests_are_served_in_arrival_order(confdir: Path, tmp_path: Path) -> None:
    path = tmp_path / "twins.json"
    out = _record(path, confdir, ["Hello there", "--twins"], script=[{"text": "first"}, {"text": "second"}])
    assert out.split() == ["first", "second"]
    calls = [s for s in load_trace(path).steps if s.type == "model_input"]
    assert len(calls) == 2 and calls[0].payload == calls[1].payload
    proc, status = _replay(path, confdir, tmp_path, ["Hello there", "--twins"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["first", "second"]  # each twin got one recorded answer, none refused
    assert status["model_calls_served"] == 2 and status["divergences"] == 0


def test_identical_parallel_tool_calls_keep_their_own_ids(confdir: Path, tmp_path: Path) -> None:
    path = tmp_path / "same-tool.json"
    script: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_weather", "arguments": {"city": "Paris"}}]},
        {"text": "done"},
    ]
    assert _record(path, confdir, [QUESTION], script=script).strip() == "done"
    trace = load_trace(path)
    assert [c["toolCallId"] for c in trace.steps[1].payload["calls"]] == ["call-0", "call-1"]
    results = [s.payload for s in trace.steps if s.type == "tool_result"]
    assert [r["toolCallId"] for r in results] == ["call-0", "call-1"]
    assert json.loads(results[0]["result"]) == json.loads(results[1]["result"])
    proc, status = _replay(path, confdir, tmp_path, [QUESTION])
    assert proc.returncode == 0, proc.stderr
    assert status["verdict"] == "ok"
