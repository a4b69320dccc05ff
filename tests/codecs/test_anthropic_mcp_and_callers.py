"""The Anthropic codec's MCP connector and programmatic tool calling.

The MCP connector's ``mcp_servers`` are compared tool definitions
(``mcp_server:<name>``) without their ``authorization_token``; ``mcp_tool_use`` /
``mcp_tool_result`` blocks are server-tool parts with the server's name, served
back (whole and streamed) with ids of our own and parsed by the SDK's beta types.
A ``tool_use`` made by the provider's code keeps its ``caller`` (the code
execution's call-N), in the answer and in the history, and is served back with
the served id of that code execution call.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.codecs import anthropic_messages as codec
from blackbox_mitm.codecs import parse_stream
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.codecs.verified import verify_trace
from blackbox_mitm.errors import BlackboxUnsupportedError

CREATED_MS = 1_767_225_600_000
TOKEN = "mcp-secret-0123456789abcdef"
SERVER = {
    "type": "url",
    "url": "https://mcp.example.com/sse",
    "name": "wiki",
    "authorization_token": TOKEN,
    "tool_configuration": {"enabled": True, "allowed_tools": ["ask"]},
}
MCP_USE = {"type": "mcp_tool_use", "id": "mcptoolu_01AbC", "name": "ask", "server_name": "wiki", "input": {"q": "Paris"}}
MCP_RESULT = {
    "type": "mcp_tool_result",
    "tool_use_id": "mcptoolu_01AbC",
    "is_error": False,
    "content": [{"type": "text", "text": "Capital"}],
}
MCP_ANSWER: dict[str, Any] = {
    "id": "msg_01X",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [{"type": "text", "text": "Asking the wiki."}, MCP_USE, MCP_RESULT, {"type": "text", "text": "Paris is the capital."}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 10, "output_tokens": 5},
}
CODE_USE = {"type": "server_tool_use", "id": "srvtoolu_01Code", "name": "code_execution", "input": {"code": "read('a')"}}
CALLER = {"type": "code_execution_20250825", "tool_id": "srvtoolu_01Code"}
PTC_ANSWER: dict[str, Any] = {
    "id": "msg_01Y",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [CODE_USE, {"type": "tool_use", "id": "toolu_01Read", "name": "read", "input": {"path": "a"}, "caller": CALLER}],
    "stop_reason": "tool_use",
    "container": {"id": "container_01", "expires_at": "2026-12-01T12:00:00Z"},
    "usage": {"input_tokens": 10, "output_tokens": 5},
}


def _body(**extra: Any) -> bytes:
    return json.dumps({"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": [{"role": "user", "content": "Hi"}], **extra}).encode()


def _request(stream: bool = False) -> DecodedRequest:
    request = codec.decode_request(_body(mcp_servers=[SERVER]), CallIds())
    request.stream = stream
    return request


def _served(output: Any, stream: bool) -> dict[str, Any]:
    if stream:
        body = codec.encode_stream(output, request=_request(True), ids=CallIds(), created_ms=CREATED_MS)
        return dict(codec.aggregate_stream(parse_stream(codec, body)))
    return codec.encode_response(output, request=_request(), ids=CallIds(), created_ms=CREATED_MS)


def test_mcp_servers_are_compared_definitions_without_the_token() -> None:
    toolset = {"type": "mcp_toolset", "mcp_server_name": "wiki", "default_config": {"enabled": True}}
    tools = codec.decode_request(_body(mcp_servers=[SERVER], tools=[toolset]), CallIds()).model_input["tools"]
    assert tools == [
        {"name": "mcp_toolset:wiki", "builtin": toolset},
        {
            "name": "mcp_server:wiki",
            "builtin": {"type": "url", "url": "https://mcp.example.com/sse", "tool_configuration": SERVER["tool_configuration"]},
        },
    ]
    assert TOKEN not in json.dumps(tools) and "authorization_token" not in json.dumps(tools)
    other = dict(SERVER, url="https://mcp.example.com/other")
    assert codec.decode_request(_body(mcp_servers=[other]), CallIds()).model_input["tools"] != tools[1:]
    same = dict(SERVER, authorization_token="another-token")  # a new token is the same server
    assert codec.decode_request(_body(mcp_servers=[same]), CallIds()).model_input["tools"] == tools[1:]


@pytest.mark.parametrize("server", [{"type": "url", "name": "wiki"}, {"type": "url", "url": 3, "name": "wiki"}, "wiki"])
def test_a_malformed_mcp_server_is_a_named_error(server: Any) -> None:
    with pytest.raises(BlackboxUnsupportedError) as err:
        codec.decode_request(_body(mcp_servers=[server]), CallIds())
    assert "mcp_servers[0]" in str(err.value) and "name and url" in str(err.value)


def test_an_mcp_answer_is_server_tool_parts_with_the_server_name() -> None:
    output = codec.decode_response(json.dumps(MCP_ANSWER).encode(), CallIds(), _request())
    assert output["type"] == "final_answer" and output["text"] == "Asking the wiki.Paris is the capital."
    assert output["parts"][1:3] == [
        {"type": "server_tool_call", "toolCallId": "call-0", "toolName": "ask", "toolInput": {"q": "Paris"}, "serverName": "wiki"},
        {"type": "server_tool_result", "toolCallId": "call-0", "kind": "mcp_tool_result", "result": MCP_RESULT["content"]},
    ]
    failed = {**MCP_ANSWER, "content": [MCP_USE, {**MCP_RESULT, "is_error": True}, {"type": "text", "text": "It failed."}]}
    assert codec.decode_response(json.dumps(failed).encode(), CallIds(), _request())["parts"][1]["isError"] is True
    assert "mcptoolu_" not in json.dumps(output)


@pytest.mark.parametrize("answer", [MCP_ANSWER, PTC_ANSWER], ids=["mcp", "caller"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_the_answer_round_trips_with_served_ids(answer: dict[str, Any], stream: bool) -> None:
    output = codec.decode_response(json.dumps(answer).encode(), CallIds(), _request())
    served = _served(output, stream)
    assert [b["type"] for b in served["content"]] == [b["type"] for b in answer["content"]]
    assert codec.decode_response(served, CallIds(), _request()) == output
    text = json.dumps(served)
    assert "_01" not in text  # no recorded provider id is served back


def test_the_sdk_beta_types_parse_the_served_mcp_blocks() -> None:
    from anthropic.types.beta import BetaMessage

    output = codec.decode_response(json.dumps(MCP_ANSWER).encode(), CallIds(), _request())
    message = BetaMessage.model_validate(_served(output, False))
    use, result = message.content[1], message.content[2]
    assert use.type == "mcp_tool_use" and use.server_name == "wiki" and use.id.startswith("mcptoolu_bb")
    assert result.type == "mcp_tool_result" and result.tool_use_id == use.id and result.is_error is False


def test_a_call_from_the_providers_code_keeps_its_caller() -> None:
    ids = CallIds()
    output: Any = codec.decode_response(json.dumps(PTC_ANSWER).encode(), ids, _request())
    assert output["calls"] == [
        {
            "toolCallId": "call-1",
            "toolName": "read",
            "toolInput": {"path": "a"},
            "caller": {"type": "code_execution_20250825", "toolCallId": "call-0"},
        }
    ]
    served = codec.encode_response(output, request=_request(), ids=(replay := CallIds()), created_ms=CREATED_MS)
    code, read = served["content"]
    assert read["caller"] == {"type": "code_execution_20250825", "tool_id": code["id"]}
    # The agent sends the served turn back with its result: the same call-N, the caller kept in the history.
    history = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": served["content"]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": read["id"], "content": "A"}]},
    ]
    messages: Any = codec.decode_request(json.dumps({"model": "m", "max_tokens": 9, "messages": history}).encode(), replay).model_input[
        "messages"
    ]
    assert messages[1]["content"][1] == {
        "type": "tool_use",
        "toolCallId": "call-1",
        "toolName": "read",
        "toolInput": {"path": "a"},
        "caller": {"type": "code_execution_20250825", "toolCallId": "call-0"},
    }
    assert messages[2]["content"][0]["toolCallId"] == "call-1"


def test_a_direct_caller_is_as_if_absent() -> None:
    direct = {"type": "tool_use", "id": "toolu_01D", "name": "read", "input": {}, "caller": {"type": "direct"}}
    output: Any = codec.decode_response(json.dumps({**PTC_ANSWER, "content": [direct], "container": None}).encode(), CallIds(), _request())
    assert "caller" not in output["calls"][0]


def test_a_cassette_with_mcp_parts_and_callers_verifies_and_a_leaked_token_is_flagged() -> None:
    ids = CallIds()
    trace = Trace.new()
    trace.append("model_input", dict(codec.decode_request(_body(mcp_servers=[SERVER]), ids).model_input))
    trace.append("model_output", dict(codec.decode_response(json.dumps(MCP_ANSWER).encode(), ids, _request())))
    trace.append("model_output", dict(codec.decode_response(json.dumps(PTC_ANSWER).encode(), ids, _request())))
    trace.append("metadata", {"event": "run_completed", "status": "success", "result": "done"})
    assert verify_trace(trace) == []
    leaked = Trace.new()
    server = {"name": "mcp_server:wiki", "builtin": {"type": "url", "url": "u", "authorization_token": "Bearer " + "a1B2c3D4e5" * 4}}
    leaked.append("model_input", {"messages": [{"role": "user", "content": "Hi"}], "tools": [server]})
    assert any(p.code == "credential" for p in verify_trace(leaked))
    opaque = Trace.new()  # a token of no known shape is flagged by its field's name
    server = {"name": "mcp_server:wiki", "builtin": {"type": "url", "url": "u", "authorization_token": TOKEN}}
    opaque.append("model_input", {"messages": [{"role": "user", "content": "Hi"}], "tools": [server]})
    problems = verify_trace(opaque)
    assert [p.code for p in problems] == ["credential"] and "authorization_token" in str(problems[0].where)


# --- container uploads and search results -----------------------------------------------------

SEARCH_RESULT = {
    "type": "search_result",
    "source": "https://kb.example/paris",
    "title": "Paris facts",
    "content": [
        {"type": "text", "text": "Paris is the capital."},
        {"type": "text", "text": "It has 2M people.", "cache_control": {"type": "ephemeral"}},
    ],
    "citations": {"enabled": True},
}
SEARCH_PART = {
    "type": "search_result",
    "source": "https://kb.example/paris",
    "title": "Paris facts",
    "content": [{"type": "text", "text": "Paris is the capital."}, {"type": "text", "text": "It has 2M people."}],
    "citations": True,
}


def _messages(*messages: dict[str, Any]) -> Any:
    return codec.decode_request(json.dumps({"model": "m", "max_tokens": 9, "messages": list(messages)}).encode(), CallIds()).model_input[
        "messages"
    ]


def test_a_container_upload_is_a_file_reference() -> None:
    upload = {"type": "container_upload", "file_id": "file_011Data"}
    content = _messages({"role": "user", "content": [{"type": "text", "text": "Analyse it."}, upload]})[0]["content"]
    assert content == [{"type": "text", "text": "Analyse it."}, {"type": "container_upload", "file": "file_011Data"}]
    other = _messages({"role": "user", "content": [{"type": "text", "text": "Analyse it."}, {**upload, "file_id": "file_2"}]})
    assert other[0]["content"] != content  # another file is another request
    with pytest.raises(BlackboxUnsupportedError) as err:
        _messages({"role": "user", "content": [{"type": "container_upload"}]})
    assert "messages[0].content[0].file_id" in str(err.value)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_container_upload_in_an_answer_is_served_back(stream: bool) -> None:
    answer = {**PTC_ANSWER, "content": [{"type": "container_upload", "file_id": "file_011Data"}, {"type": "text", "text": "Done."}]}
    answer["stop_reason"] = "end_turn"
    output: Any = codec.decode_response(json.dumps(answer).encode(), CallIds(), _request())
    assert output["parts"][0] == {"type": "container_upload", "file": "file_011Data"}
    served = _served(output, stream)
    assert served["content"][0] == {"type": "container_upload", "file_id": "file_011Data"}
    assert codec.decode_response(served, CallIds(), _request()) == output


def test_a_search_result_is_a_compared_part_in_user_content_and_tool_results() -> None:
    user = _messages({"role": "user", "content": [SEARCH_RESULT, {"type": "text", "text": "Cite it."}]})[0]["content"]
    assert user == [SEARCH_PART, {"type": "text", "text": "Cite it."}]
    round_trip: list[dict[str, Any]] = [
        {"role": "user", "content": "Find it."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01K", "name": "kb", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01K", "content": [SEARCH_RESULT]}]},
    ]
    result = _messages(*round_trip)[2]["content"][0]
    assert result["result"] == [SEARCH_PART]
    changed = {**SEARCH_RESULT, "content": [{"type": "text", "text": "Paris is the capital."}]}
    assert _messages({"role": "user", "content": [changed]})[0]["content"] != [SEARCH_PART]
    uncited = {k: v for k, v in SEARCH_RESULT.items() if k != "citations"}
    assert "citations" not in _messages({"role": "user", "content": [uncited, {"type": "text", "text": "x"}]})[0]["content"][0]


def test_a_malformed_search_result_is_a_named_error() -> None:
    with pytest.raises(BlackboxUnsupportedError) as err:
        _messages({"role": "user", "content": [{"type": "search_result", "source": 3, "title": "t", "content": []}]})
    assert "messages[0].content[0]" in str(err.value) and "string source and title" in str(err.value)


def test_a_history_with_search_results_and_uploads_verifies() -> None:
    body = {
        "model": "m",
        "max_tokens": 9,
        "messages": [{"role": "user", "content": [SEARCH_RESULT, {"type": "container_upload", "file_id": "file_011Data"}]}],
    }
    trace = Trace.new()
    trace.append("model_input", dict(codec.decode_request(json.dumps(body).encode(), CallIds()).model_input))
    trace.append("model_output", {"type": "final_answer", "text": "ok"})
    trace.append("metadata", {"event": "run_completed", "status": "success", "result": "ok"})
    assert verify_trace(trace) == []
