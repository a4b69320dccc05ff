"""End to end: the Responses API's WebSocket mode through a real proxy, with a small real socket client.

examples/responses_ws_agent.py opens wss://api.openai.com/v1/responses (the
proxy variables and CA from ``blackbox``; ``--map-remote`` sends the host to
examples/fake_responses_ws.py on 127.0.0.1), warms up with ``generate: false``
and continues each turn on the socket with ``previous_response_id`` and
``store: false``. Record -> verify -> offline replay -> a changed prompt gets
the divergence as the API's error frame; a socket cut mid-answer records
nothing for that call and says why.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, blackbox
from fake_responses_ws import FakeResponsesWs

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

AGENT = [sys.executable, str(EXAMPLES / "responses_ws_agent.py")]
QUESTION = "What's the weather in Paris?"
SCRIPT: list[dict[str, Any]] = [{"function": "get_weather", "arguments": '{"city": "Paris"}'}, {"text": "Paris: cloudy, 18°C."}]


def _record(cassette: Path, confdir: Path, fake: FakeResponsesWs, *args: str) -> Any:
    remote = ["--map-remote", rf"|https://api\.openai\.com|{fake.url}"]
    return blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *remote, "--", *AGENT, *args)


def _replay(cassette: Path, confdir: Path, *args: str) -> Any:
    return blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *AGENT, *args)


def test_a_socket_records_one_step_per_turn_and_replays_offline(tmp_path: Path, confdir: Path) -> None:
    cassette = tmp_path / "run.json"
    with FakeResponsesWs(SCRIPT) as fake:
        rec = _record(cassette, confdir, fake, QUESTION)
        assert rec.returncode == 0, rec.stderr
        messages = fake.messages("ws")
    assert rec.stdout.strip() == "Paris: cloudy, 18°C."
    assert [m["body"].get("generate") for m in messages] == [False, None, None]
    assert messages[2]["body"]["previous_response_id"] == "resp_fake1"  # continued on the socket, store: false
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    assert [s.type for s in trace.steps].count("model_input") == 2  # the warm-up is no model call
    raw = cassette.read_bytes()
    for native in (b"resp_fake", b"call_1", b"fc_1", b"sk-test", b"generate"):
        assert native not in raw, native

    replay = _replay(cassette, confdir, QUESTION)  # the fake is stopped: nothing answers but the cassette
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout == rec.stdout
    assert "2 of 2 model calls served" in replay.stderr

    changed = _replay(cassette, confdir, "What's the weather in Lyon?")
    assert changed.returncode == 1
    assert '"type": "error", "status": 400' in changed.stderr  # the API's error frame reached the agent
    assert "replay_divergence" in changed.stderr and "What's the weather in Lyon?" in changed.stderr


def test_a_replay_serves_a_recording_made_without_a_warm_up(tmp_path: Path, confdir: Path) -> None:
    cassette = tmp_path / "run.json"
    with FakeResponsesWs(SCRIPT) as fake:
        rec = _record(cassette, confdir, fake, QUESTION, "--no-warm-up")
        assert rec.returncode == 0, rec.stderr
    replay = _replay(cassette, confdir, QUESTION)  # now with a warm-up: it is no model call, so the run is the same
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout == rec.stdout


def test_a_socket_cut_mid_answer_records_nothing_for_that_call_and_says_why(tmp_path: Path, confdir: Path) -> None:
    cassette = tmp_path / "run.json"
    with FakeResponsesWs([{**SCRIPT[0], "cut": True}]) as fake:
        rec = _record(cassette, confdir, fake, QUESTION)
    assert rec.returncode == 1  # the agent saw its socket close
    assert "closed the socket" in rec.stderr and "before the answer's final frame" in rec.stderr
    trace = load_trace(cassette)
    assert [s.type for s in trace.steps].count("model_input") == 0
    assert verify_trace(trace) == []
