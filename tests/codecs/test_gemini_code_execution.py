"""Gemini's codeExecution tool: the code Google ran and its result are kept with the answer and in the history, served back in place."""

from __future__ import annotations

import json
from typing import Any

import pytest

from blackbox_mitm.codecs import gemini as codec
from blackbox_mitm.codecs.base import CallIds, SseEvent
from blackbox_mitm.codecs.sse import parse_sse
from blackbox_mitm.errors import BlackboxUnsupportedError

MODEL = "gemini-2.5-flash"
PATH = f"/v1beta/models/{MODEL}:generateContent"
STREAM_PATH = f"/v1beta/models/{MODEL}:streamGenerateContent"
USER = {"role": "user", "parts": [{"text": "Sum of the first 10 primes?"}]}
CODE = {"executableCode": {"language": "PYTHON", "code": "print(sum([2, 3, 5, 7, 11, 13, 17, 19, 23, 29]))"}}
RESULT = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "129\n"}}
PARTS = [{"text": "Let me compute it."}, CODE, RESULT, {"text": "The sum is 129."}]


def _request(ids: CallIds, contents: list[Any], path: str = PATH, query: str = "") -> Any:
    body = {"contents": contents, "tools": [{"codeExecution": {}}]}
    return codec.decode_request(json.dumps(body).encode(), ids, path=path, query=query)


def _answer(parts: list[Any]) -> bytes:
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
    return json.dumps({"candidates": [candidate], "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 9}}).encode()


def test_the_code_execution_tool_is_a_compared_builtin_definition() -> None:
    tools = _request(CallIds(), [USER]).model_input["tools"]
    assert tools == [{"name": "codeExecution", "builtin": {"codeExecution": {}}}]


def test_an_answer_keeps_code_and_result_in_place_with_one_call_id() -> None:
    ids = CallIds()
    out = codec.decode_response(_answer(PARTS), ids, _request(ids, [USER]))
    assert out["text"] == "Let me compute it.The sum is 129."
    assert out["content"] == [
        {"type": "text", "text": "Let me compute it."},
        {"type": "server_tool_call", "toolCallId": "call-0", "toolName": "codeExecution", "toolInput": CODE["executableCode"]},
        {"type": "server_tool_result", "toolCallId": "call-0", "kind": "codeExecutionResult", "result": RESULT["codeExecutionResult"]},
        {"type": "text", "text": "The sum is 129."},
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_replay_serves_code_and_result_back_in_place_and_in_order(stream: bool) -> None:
    ids = CallIds()
    request = _request(ids, [USER], *((STREAM_PATH, "alt=sse") if stream else ()))
    out = codec.decode_response(_answer(PARTS), ids, request)
    fresh = CallIds()
    replay = _request(fresh, [USER], *((STREAM_PATH, "alt=sse") if stream else ()))
    if stream:
        events = parse_sse(codec.encode_stream(out, request=replay, ids=fresh, created_ms=0))
        whole = codec.aggregate_stream([SseEvent(e.event, e.data) for e in events])
    else:
        whole = codec.encode_response(out, request=replay, ids=fresh, created_ms=0)
    assert [p for p in whole["candidates"][0]["content"]["parts"] if "thoughtSignature" not in p] == PARTS
    assert codec.decode_response(whole, CallIds(), replay)["content"] == out["content"]


def test_the_history_sends_them_back_as_the_same_call() -> None:
    ids = CallIds()
    out = codec.decode_response(_answer(PARTS), ids, _request(ids, [USER]))
    history = [USER, {"role": "model", "parts": PARTS}, {"role": "user", "parts": [{"text": "Thanks"}]}]
    turn = _request(ids, history).model_input["messages"][1]
    assert turn == {"role": "assistant", "content": out["content"]}


@pytest.mark.parametrize(
    ("part", "field"),
    [
        ({"executableCode": {"language": "PYTHON"}}, "candidates[0].content.parts[0].executableCode.code"),
        ({"executableCode": "print(1)"}, "candidates[0].content.parts[0].executableCode"),
        ({"codeExecutionResult": {"output": "1"}}, "candidates[0].content.parts[0].codeExecutionResult.outcome"),
        ({"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": 1}}, "candidates[0].content.parts[0].codeExecutionResult.output"),
    ],
)
def test_a_malformed_part_is_a_clear_error_naming_the_field(part: dict[str, Any], field: str) -> None:
    ids = CallIds()
    with pytest.raises(BlackboxUnsupportedError) as err:
        codec.decode_response(_answer([part]), ids, _request(ids, [USER]))
    assert field in str(err.value)


def test_a_malformed_part_in_the_history_names_its_field() -> None:
    history = [USER, {"role": "model", "parts": [{"executableCode": {"code": "1"}}]}]
    with pytest.raises(BlackboxUnsupportedError, match=r"contents\[1\]\.parts\[0\]\.executableCode\.language"):
        _request(CallIds(), history)
