"""The Responses API's hosted ``mcp`` tool: the definition without credentials, listed tools and calls, approval rounds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from blackbox_mitm.codecs import openai_responses
from blackbox_mitm.codecs.base import CallIds
from blackbox_mitm.codecs.sse import parse_sse
from blackbox_mitm.errors import BlackboxUnsupportedError

CREATED_MS = 1_764_580_000_123
TOOL = {
    "type": "mcp",
    "server_label": "deepwiki",
    "server_url": "https://mcp.example.com/mcp",
    "headers": {"X-Api-Key": "sk-secret-header"},
    "authorization": "Bearer sk-secret-token",
    "allowed_tools": ["ask_question"],
    "require_approval": "always",
}
LISTED = {
    "id": "mcpl_native1",
    "type": "mcp_list_tools",
    "server_label": "deepwiki",
    "tools": [{"name": "ask_question", "input_schema": {"type": "object"}}],
}
APPROVAL = {
    "id": "mcpr_native1",
    "type": "mcp_approval_request",
    "server_label": "deepwiki",
    "name": "ask_question",
    "arguments": '{"q":"What is MCP?"}',
}
ANSWER = {"type": "mcp_approval_response", "approval_request_id": "mcpr_native1", "approve": True}
MCP_CALL = {
    "id": "mcp_native1",
    "type": "mcp_call",
    "server_label": "deepwiki",
    "name": "ask_question",
    "arguments": '{"q":"What is MCP?"}',
    "output": "A protocol.",
    "error": None,
    "approval_request_id": "mcpr_native1",
}
TEXT = {"id": "msg_native1", "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is a protocol."}]}
USER = {"role": "user", "content": "What is MCP?"}


def body(value: Any) -> bytes:
    return json.dumps(value).encode()


def _decode(ids: CallIds, items: list[Any], output: list[Any]) -> tuple[Any, dict[str, Any]]:
    request = openai_responses.decode_request(body({"model": "gpt-4.1", "tools": [TOOL], "input": items}), ids)
    out: dict[str, Any] = dict(openai_responses.decode_response(body({"status": "completed", "output": output}), ids, request))
    return request, out


def test_the_mcp_tool_is_compared_without_its_credentials() -> None:
    request, _ = _decode(CallIds(), [USER], [LISTED, APPROVAL])
    [tool] = request.model_input["tools"]
    assert tool["name"] == "mcp:deepwiki"
    assert tool["builtin"]["headers"] == ["X-Api-Key"] and "authorization" not in tool["builtin"]
    assert "sk-secret" not in json.dumps(request.model_input)


def test_an_approval_request_is_a_tool_call_and_the_listing_a_server_call() -> None:
    _, out = _decode(CallIds(), [USER], [LISTED, APPROVAL])
    assert out["type"] == "tool_calls"
    assert out["calls"] == [
        {"toolCallId": "call-1", "toolName": "mcp:deepwiki", "toolInput": {"name": "ask_question", "arguments": APPROVAL["arguments"]}}
    ]
    assert [p["type"] for p in out["parts"]] == ["server_tool_call", "tool_use"]
    assert out["parts"][0]["toolName"] == "mcp_list_tools" and "native" not in json.dumps(out)


def test_the_approval_response_is_its_tool_result_and_the_mcp_call_names_the_approval() -> None:
    ids = CallIds()
    _decode(ids, [USER], [LISTED, APPROVAL])
    request, out = _decode(ids, [USER, LISTED, APPROVAL, ANSWER], [MCP_CALL, TEXT])
    messages: Any = request.model_input["messages"]
    assert messages[-1]["content"] == [
        {"type": "tool_result", "toolCallId": "call-1", "toolName": "mcp:deepwiki", "result": {"approve": True}}
    ]
    assert out["type"] == "final_answer" and out["text"] == "It is a protocol."
    assert out["parts"][0]["toolInput"]["approval_request_id"] == "call-1"
    assert "native" not in json.dumps([messages, out])


def test_a_replay_serves_the_approval_and_the_call_with_our_ids_and_the_echo_maps_back() -> None:
    recorded = CallIds()
    first, ask = _decode(recorded, [USER], [LISTED, APPROVAL])
    second, done = _decode(recorded, [USER, LISTED, APPROVAL, ANSWER], [MCP_CALL, TEXT])
    replay = CallIds()
    replay.register_calls(ask)
    served = openai_responses.encode_response(ask, request=first, ids=replay, created_ms=CREATED_MS)["output"]
    assert [i["type"] for i in served] == ["mcp_list_tools", "mcp_approval_request"]
    assert served[1]["id"] == "mcpr_bb1" and served[1]["server_label"] == "deepwiki"
    echo = [USER, *served, {**ANSWER, "approval_request_id": served[1]["id"]}]
    again = openai_responses.decode_request(body({"model": "gpt-4.1", "tools": [TOOL], "input": echo}), replay)
    assert again.model_input == second.model_input
    final = openai_responses.encode_response(done, request=again, ids=replay, created_ms=CREATED_MS)["output"]
    assert final[0]["type"] == "mcp_call" and final[0]["approval_request_id"] == "mcpr_bb1"


def test_a_stream_serves_the_items_whole_and_aggregates_to_the_same_answer() -> None:
    request, out = _decode(CallIds(), [USER], [LISTED, APPROVAL])
    events = parse_sse(openai_responses.encode_stream(out, request=request, ids=CallIds(), created_ms=CREATED_MS))
    kinds = [json.loads(e.data)["type"] for e in events]
    assert kinds.count("response.output_item.added") == 2 and kinds.count("response.output_item.done") == 2
    again: Any = openai_responses.decode_response(openai_responses.aggregate_stream(events), CallIds(), request)
    assert again["calls"][0]["toolInput"] == out["calls"][0]["toolInput"]


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({**ANSWER, "approve": "yes"}, "input[1].approve"),
        ({**ANSWER, "approval_request_id": None}, "input[1].approval_request_id"),
        ({**APPROVAL, "name": None}, "input[1].name"),
    ],
)
def test_malformed_mcp_items_name_the_field(item: dict[str, Any], field: str) -> None:
    with pytest.raises(BlackboxUnsupportedError) as err:
        openai_responses.decode_request(body({"model": "m", "tools": [TOOL], "input": [USER, item]}), CallIds())
    assert field in str(err.value)


def test_an_mcp_tool_without_a_server_label_names_the_field() -> None:
    with pytest.raises(BlackboxUnsupportedError, match=r"tools\[0\]\.server_label"):
        openai_responses.decode_request(body({"model": "m", "tools": [{"type": "mcp"}], "input": "x"}), CallIds())
