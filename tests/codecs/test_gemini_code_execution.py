"""Gemini's codeExecution tool: the code Google ran and its result are kept with the answer and in the history, served back in place."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from blackbox_mitm.cassette.canonical import canonical_bytes
from blackbox_mitm.cassette.media import digests_in
from blackbox_mitm.cassette.media_bytes import collecting, resolving
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.codecs import gemini as codec
from blackbox_mitm.codecs.base import CallIds, SseEvent
from blackbox_mitm.codecs.sse import parse_sse
from blackbox_mitm.codecs.verified import verify_trace
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


def test_a_huge_output_is_kept_by_digest_in_the_media_file_and_served_back_whole() -> None:
    big = {"outcome": "OUTCOME_OK", "output": "".join(f"row {n}\n" for n in range(20000))}
    ids = CallIds()
    with collecting() as found:
        out = codec.decode_response(_answer([CODE, {"codeExecutionResult": big}]), ids, _request(ids, [USER]))
    digest = hashlib.sha256(canonical_bytes(big)).hexdigest()
    assert out["content"][1]["resultMedia"]["sha256"] == digest and "result" not in out["content"][1]
    assert list(digests_in(out)) == [digest]
    fresh = CallIds()
    with resolving({d: data for d, (_, data) in found.items()}):
        served = codec.encode_response(out, request=_request(fresh, [USER]), ids=fresh, created_ms=0)
    assert served["candidates"][0]["content"]["parts"][1] == {"codeExecutionResult": big}


def test_a_cassette_with_code_execution_verifies() -> None:
    ids = CallIds()
    request = _request(ids, [USER])
    output = codec.decode_response(_answer(PARTS), ids, request)
    history = _request(ids, [USER, {"role": "model", "parts": PARTS}, {"role": "user", "parts": [{"text": "Thanks"}]}])
    trace = Trace.new()
    trace.append("model_input", dict(request.model_input))
    trace.append("model_output", dict(output))
    trace.append("model_input", dict(history.model_input))
    trace.append("model_output", {"type": "final_answer", "text": "You're welcome."})
    trace.append("metadata", {"event": "run_completed", "status": "success", "result": "You're welcome."})
    assert verify_trace(trace) == []
