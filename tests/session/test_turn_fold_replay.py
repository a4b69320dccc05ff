"""A replay compares adjacent messages as one turn when the agent's codec says so (Gemini), and only then.

The session chooses the fold with the agent's first model call, as it chooses an
agent profile (``Session._choose_profile``, ``matcher.turns.with_one_turn``).
A Gemini history whose model turn came back in other pieces than recorded is
served; an OpenAI chat history split the same way is still a divergence.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from blackbox_mitm.matcher.masks import CompareRules
from blackbox_mitm.session.build import record_session, replay_session
from blackbox_mitm.session.engine import Answer, Forward, ModelRequest

GEMINI = "/v1beta/models/gemini-2.5-flash:generateContent"
CHAT = "/v1/chat/completions"
KEY = {"x-goog-api-key": "AIzaSyBx9Q2mZ7kL4pW1cV8nR3tY6uH0jF5dG2a"}
ANSWER = "Zurich sits at the northern end of Lake Zurich."


def _gemini(*turn: str) -> bytes:
    """The first question, or (with the model's turn, one content per piece) the second."""
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "Zurich?"}]}]
    if turn:
        contents += [{"role": "model", "parts": [{"text": piece}]} for piece in turn]
        contents.append({"role": "user", "parts": [{"text": "And its lake?"}]})
    return json.dumps({"contents": contents}).encode()


def _gemini_answer(text: str) -> bytes:
    return orjson.dumps({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}]})


def _chat(*turn: str) -> bytes:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Zurich?"}]
    if turn:
        messages += [{"role": "assistant", "content": piece} for piece in turn] + [{"role": "user", "content": "And its lake?"}]
    return json.dumps({"model": "gpt-4.1", "messages": messages}).encode()


def _chat_answer(text: str) -> bytes:
    message = {"role": "assistant", "content": text}
    return orjson.dumps(
        {"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    )


def _record(path: Path, calls: list[tuple[str, bytes, bytes]]) -> None:
    session = record_session(path)
    for route, body, answer in calls:
        action = session.on_request(ModelRequest(route, dict(KEY), body))
        assert isinstance(action, Forward)
        session.on_response(action.ticket, 200, answer)
    assert session.recorder is not None
    session.recorder.finish(path, exit_code=0)


def _replay(path: Path, calls: list[tuple[str, bytes]]) -> list[Answer]:
    session = replay_session(path, rules=CompareRules.build())
    out = []
    for route, body in calls:
        answer = session.on_request(ModelRequest(route, {}, body))
        assert isinstance(answer, Answer)
        out.append(answer)
    return out


def test_a_gemini_turn_in_other_pieces_is_served(tmp_path: Path) -> None:
    path = tmp_path / "gemini.json"
    pieces = (ANSWER[:7], ANSWER[7:30], ANSWER[30:])  # the provider's chunks, as google-genai sends them back
    _record(path, [(GEMINI, _gemini(), _gemini_answer(ANSWER)), (GEMINI, _gemini(*pieces), _gemini_answer("40 km long."))])
    first, second = _replay(path, [(GEMINI, _gemini()), (GEMINI, _gemini(ANSWER))])  # a replay's one piece
    assert first.status == 200 and second.status == 200 and second.replayed
    assert b"40 km long." in second.body
    changed = _replay(path, [(GEMINI, _gemini()), (GEMINI, _gemini(ANSWER.replace("northern", "north")))])[1]
    assert changed.status == 400  # another text still differs
    assert b"messages 1-3 of the recording's request and message 1 of the agent's" in changed.body


def test_an_openai_chat_history_split_otherwise_still_diverges(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    _record(path, [(CHAT, _chat(), _chat_answer(ANSWER)), (CHAT, _chat(ANSWER[:7], ANSWER[7:]), _chat_answer("40 km long."))])
    first, second = _replay(path, [(CHAT, _chat()), (CHAT, _chat(ANSWER))])
    assert first.status == 200 and second.status == 400  # the spec compares every message: the codec declares no fold
    assert _replay(path, [(CHAT, _chat()), (CHAT, _chat(ANSWER[:7], ANSWER[7:]))])[1].status == 200
