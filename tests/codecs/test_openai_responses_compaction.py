"""Codex's compaction in the Responses codec: the trigger, the compaction answer (whole and streamed), the compacted history."""

from __future__ import annotations

import json
from typing import Any

import pytest

from blackbox_mitm.cassette import Trace
from blackbox_mitm.codecs import openai_responses
from blackbox_mitm.codecs.base import CallIds
from blackbox_mitm.codecs.sse import parse_sse
from blackbox_mitm.codecs.verified import verify_trace
from blackbox_mitm.errors import BlackboxUnsupportedError

CREATED_MS = 1_764_580_000_123
BLOB = "gAAAAABp-compacted-history-opaque=="
CALL = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_a", "name": "exec", "input": "echo one"}
OUTPUT = {"type": "custom_tool_call_output", "id": "ctco_1", "call_id": "call_a", "output": "one\n"}
USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Run echo one."}]}
TOOLS = [{"type": "custom", "name": "exec"}]


def body(value: Any) -> bytes:
    return json.dumps(value).encode()


def request(*items: dict[str, Any]) -> dict[str, Any]:
    return {"model": "gpt-5", "stream": True, "store": False, "tools": TOOLS, "input": [USER, *items]}


def compaction_answer() -> dict[str, Any]:
    item = {"type": "compaction", "id": "cmp_0123", "encrypted_content": BLOB}
    usage = {"input_tokens": 9900, "output_tokens": 300, "input_tokens_details": {"cached_tokens": 0}}
    return {"id": "resp_c", "status": "completed", "output": [item], "usage": usage}


def test_the_trigger_is_a_user_turn_after_the_history_it_compacts() -> None:
    decoded = openai_responses.decode_request(body(request(CALL, OUTPUT, {"type": "compaction_trigger"})), CallIds())
    assert decoded.model_input["messages"][-3:] == [
        {"role": "assistant", "content": [{"type": "tool_use", "toolCallId": "call-0", "toolName": "exec", "toolInput": "echo one"}]},
        {"role": "user", "content": [{"type": "tool_result", "toolCallId": "call-0", "toolName": "exec", "result": "one\n"}]},
        {"role": "user", "content": [{"type": "compaction_trigger"}]},
    ]


def test_the_compaction_answer_is_kept_with_its_opaque_data_and_no_provider_id() -> None:
    ids = CallIds()
    decoded = openai_responses.decode_request(body(request({"type": "compaction_trigger"})), ids)
    output = openai_responses.decode_response(body(compaction_answer()), ids, decoded)
    assert output == {
        "type": "final_answer",
        "text": "",
        "tokens": {"input": 9900, "output": 300},
        "compaction": {"type": "compaction", "data": BLOB},
    }
    assert "cmp_0123" not in json.dumps(output)


@pytest.mark.parametrize("stream", [False, True])
def test_a_replay_serves_exactly_one_compaction_item_and_the_recorded_usage(stream: bool) -> None:
    ids = CallIds()
    decoded = openai_responses.decode_request(body(request({"type": "compaction_trigger"})), ids)
    output = openai_responses.decode_response(body(compaction_answer()), ids, decoded)
    served_ids = CallIds()
    if stream:
        events = parse_sse(openai_responses.encode_stream(output, request=decoded, ids=served_ids, created_ms=CREATED_MS))
        done = [json.loads(e.data)["item"] for e in events if e.event == "response.output_item.done"]
        response = openai_responses.aggregate_stream(events)
        assert done == response["output"]
    else:
        response = openai_responses.encode_response(output, request=decoded, ids=served_ids, created_ms=CREATED_MS)
    [item] = response["output"]
    assert item["type"] == "compaction" and item["encrypted_content"] == BLOB and item["id"].startswith("cmp_bb")
    assert response["usage"]["input_tokens"] == 9900 and response["usage"]["output_tokens"] == 300
    again = openai_responses.decode_response(response, CallIds(), decoded)  # what was served reads back as the answer
    assert again == output


def test_the_compacted_history_carries_the_compaction_as_an_assistant_part_and_ids_are_not_compared() -> None:
    kept = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Run echo one."}]}
    recorded = {"model": "gpt-5", "tools": TOOLS, "input": [kept, {"type": "compaction", "id": "cmp_0123", "encrypted_content": BLOB}]}
    replayed = {"model": "gpt-5", "tools": TOOLS, "input": [kept, {"type": "compaction", "id": "cmp_bbffff", "encrypted_content": BLOB}]}
    first = openai_responses.decode_request(body(recorded), CallIds()).model_input
    assert first["messages"] == [
        {"role": "user", "content": "Run echo one."},
        {"role": "assistant", "content": [{"type": "compaction", "data": BLOB}]},
    ]
    assert openai_responses.decode_request(body(replayed), CallIds()).model_input == first


def test_a_call_after_the_compaction_joins_its_assistant_turn() -> None:
    req = {"model": "gpt-5", "tools": TOOLS, "input": [USER, {"type": "compaction", "encrypted_content": BLOB}, CALL, OUTPUT]}
    messages = openai_responses.decode_request(body(req), CallIds()).model_input["messages"]
    assert messages[1]["content"] == [
        {"type": "compaction", "data": BLOB},
        {"type": "tool_use", "toolCallId": "call-0", "toolName": "exec", "toolInput": "echo one"},
    ]


def test_a_compaction_item_without_its_data_is_a_clear_error() -> None:
    req = {"model": "gpt-5", "input": [USER, {"type": "compaction", "id": "cmp_1"}]}
    with pytest.raises(BlackboxUnsupportedError, match="encrypted_content"):
        openai_responses.decode_request(body(req), CallIds())
    two = {**compaction_answer(), "output": [compaction_answer()["output"][0]] * 2}
    with pytest.raises(BlackboxUnsupportedError, match=r"output\[1\]"):
        openai_responses.decode_response(body(two), CallIds(), openai_responses.decode_request(body(request()), CallIds()))


def _trace(answer: dict[str, Any]) -> Trace:
    trace = Trace.new("compacted-1", created_at=CREATED_MS)
    trigger = {"messages": [{"role": "user", "content": "go"}, {"role": "user", "content": [{"type": "compaction_trigger"}]}], "tools": []}
    trace.append("model_input", trigger, timestamp=CREATED_MS + 1)
    trace.append("model_output", answer, timestamp=CREATED_MS + 2)
    return trace


def test_a_cassette_with_a_compaction_verifies_and_a_provider_id_in_it_does_not() -> None:
    assert verify_trace(_trace({"type": "final_answer", "text": "", "compaction": {"type": "compaction", "data": BLOB}})) == []
    bad = _trace({"type": "final_answer", "text": "", "compaction": {"type": "compaction", "data": BLOB, "id": "cmp_0123abc"}})
    assert [p.code for p in verify_trace(bad)] == ["provider_id"]
