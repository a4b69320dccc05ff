"""A paused server-tool turn (Anthropic's pause_turn, the neutral stop "pause") in the session engine: served back, or refused by name.

Recorded through the Anthropic codec, replayed: the Anthropic path gets
``pause_turn`` again. The same recorded call asked for through chat completions
(its neutral input is the same) is refused, naming the stop, because that API
has no paused stop to give; nothing is served as a finished turn.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.session.build import record_session, replay_session
from blackbox_mitm.session.engine import Answer, Forward, ModelRequest

QUESTION = [{"role": "user", "content": "Weather in Paris?"}]
PAUSED = {
    "id": "msg_01Paused",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [
        {"type": "text", "text": "Let me search."},
        {"type": "server_tool_use", "id": "srvtoolu_01P", "name": "web_search", "input": {"query": "paris weather"}},
    ],
    "stop_reason": "pause_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 5},
}


def _anthropic(body: dict[str, object]) -> ModelRequest:
    return ModelRequest(path="/v1/messages", headers={"x-api-key": "sk-ant-test-0123456789abcdef"}, body=json.dumps(body).encode())


def _recorded(tmp_path: Path) -> Path:
    path = tmp_path / "paused.json"
    session = record_session(path)
    action = session.on_request(_anthropic({"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": QUESTION}))
    assert isinstance(action, Forward), action
    assert session.on_response(action.ticket, 200, orjson.dumps(PAUSED)) is None
    assert session.recorder is not None
    session.recorder.finish(path, exit_code=0)
    return path


def test_a_paused_turn_is_recorded_with_the_pause_stop_and_served_back(tmp_path: Path) -> None:
    path = _recorded(tmp_path)
    [answer] = [s.payload for s in load_trace(path).steps if s.type == "model_output"]
    assert answer["stop"] == "pause"
    action = replay_session(path).on_request(_anthropic({"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": QUESTION}))
    assert isinstance(action, Answer) and action.replayed and action.status == 200
    served = json.loads(action.body)
    assert served["stop_reason"] == "pause_turn" and [b["type"] for b in served["content"]] == ["text", "server_tool_use"]


def test_a_paused_turn_asked_for_through_an_api_without_one_is_refused_by_name(tmp_path: Path) -> None:
    session = replay_session(_recorded(tmp_path))
    body = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": QUESTION}
    request = ModelRequest(
        path="/v1/chat/completions", headers={"authorization": "Bearer sk-test-0123456789abcdef"}, body=json.dumps(body).encode()
    )
    action = session.on_request(request)
    assert isinstance(action, Answer) and not action.replayed and action.status == 400
    message = json.loads(action.body)["error"]["message"]
    assert message.startswith("BlackboxUnsupportedError: stop: ") and '(it was "pause")' in message
    assert "openai" in message and "paused" in message
