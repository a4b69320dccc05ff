"""A streamed chat's history (google-genai: one model content per chunk) keeps its calls' call-N and pairs their results.

google-genai's ``chat.send_message_stream`` sends an answer back as one content
per streamed chunk, so an id-less function call that came after streamed text
sits in the turn's 4th content, not its first. Its place counts from the turn's
first content (where the answer noted it), so it is the answer's call-N, and the
function response pairs with it — in the recording (the provider's chunks) and
in the replay (our own) alike. A one-content turn decodes as it always did.
"""

from __future__ import annotations

import json
from typing import Any

from blackbox_mitm.codecs import gemini
from blackbox_mitm.codecs.base import CallIds

PATH = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
QUESTION: dict[str, Any] = {"role": "user", "parts": [{"text": "Weather in Zurich?"}]}
CALL: dict[str, Any] = {"functionCall": {"name": "get_weather", "args": {"city": "Zurich"}}}
RESULT: dict[str, Any] = {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"forecast": "sunny"}}}]}


def _request(contents: list[dict[str, Any]], ids: CallIds) -> Any:
    return gemini.decode_request(json.dumps({"contents": contents}).encode(), ids, path=PATH, query="alt=sse")


def _answer(ids: CallIds) -> str:
    """The model's streamed answer to the question (text, then a call), as recorded: its call's call-N."""
    first = _request([QUESTION], ids)
    whole = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Let me check that."}, CALL]}, "finishReason": "STOP"}]}
    output = gemini.decode_response(whole, ids, first)
    assert output["type"] == "tool_calls"
    return str(output["calls"][0]["toolCallId"])


def _parts(messages: list[Any], kind: str) -> list[Any]:
    return [p for m in messages if isinstance(m["content"], list) for p in m["content"] if p["type"] == kind]


def test_a_call_in_a_later_chunk_of_the_turn_is_the_answers_call() -> None:
    ids = CallIds()
    call_id = _answer(ids)
    chunks = [{"role": "model", "parts": [{"text": piece}]} for piece in ("Let me", " check", " that.")]
    history = [QUESTION, *chunks, {"role": "model", "parts": [CALL]}, RESULT]
    messages = _request(history, ids).model_input["messages"]
    assert len(messages) == 6  # one message per content, as sent
    [use] = _parts(messages, "tool_use")
    [result] = _parts(messages, "tool_result")
    assert use["toolCallId"] == result["toolCallId"] == call_id


def test_the_same_turn_in_one_content_decodes_as_before() -> None:
    ids = CallIds()
    call_id = _answer(ids)
    history = [QUESTION, {"role": "model", "parts": [{"text": "Let me check that."}, CALL]}, RESULT]
    messages = _request(history, ids).model_input["messages"]
    assert _parts(messages, "tool_use")[0]["toolCallId"] == _parts(messages, "tool_result")[0]["toolCallId"] == call_id


def test_two_calls_in_two_chunks_keep_their_order() -> None:
    ids = CallIds()
    first = _request([QUESTION], ids)
    other = {"functionCall": {"name": "get_time", "args": {"city": "Zurich"}}}
    whole = {"candidates": [{"content": {"role": "model", "parts": [CALL, other]}, "finishReason": "STOP"}]}
    calls = gemini.decode_response(whole, ids, first)["calls"]  # type: ignore[typeddict-item]
    history = [QUESTION, {"role": "model", "parts": [CALL]}, {"role": "model", "parts": [other]}]
    uses = _parts(_request(history, ids).model_input["messages"], "tool_use")
    assert [u["toolCallId"] for u in uses] == [c["toolCallId"] for c in calls]
    assert [u["toolName"] for u in uses] == ["get_weather", "get_time"]


def test_a_model_content_after_a_user_content_is_a_new_turn() -> None:
    """An agent-built history with the same call in two turns: two places, two call-N."""
    ids = CallIds()
    history = [QUESTION, {"role": "model", "parts": [CALL]}, RESULT, {"role": "model", "parts": [CALL]}]
    uses = _parts(_request(history, ids).model_input["messages"], "tool_use")
    assert len({u["toolCallId"] for u in uses}) == 2
