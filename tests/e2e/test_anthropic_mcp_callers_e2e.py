"""End to end, with the real Anthropic SDK (``client.beta``) through a real proxy: the MCP connector and programmatic tool calling.

* The MCP connector: an agent sends ``mcp_servers`` (with an ``authorization_token``)
  and an ``mcp_toolset``; the fake provider answers with text, an ``mcp_tool_use``,
  its ``mcp_tool_result`` and more text. The agent prints the blocks and sends the
  turn back. Recorded (the token nowhere in the cassette, the provider got it),
  verified, and replayed strictly offline with ANOTHER token: the same output.
* Programmatic tool calling: the provider's code execution calls the agent's
  ``read`` tool (a ``tool_use`` with a ``caller``); the agent runs it, returns a
  ``tool_result``, and the provider finishes. Recorded with the caller kept,
  verified, replayed strictly offline: the SDK gets the caller again, naming the
  served code execution call.

Each whole and streamed (SSE events scripted like the API's, tool input as JSON pieces).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from anthropic_script import MODEL, answer, message, record_agent, replay_agent

from blackbox_mitm.cassette import load_trace

pytestmark = pytest.mark.e2e

TOKEN = "mcp-oauth-token-Zx81Qw-do-not-record"


# --- the MCP connector -------------------------------------------------------------------------

MCP_AGENT = f"""
import os, sys
import anthropic

client = anthropic.Anthropic()
stream = sys.argv[1] == "stream"
servers = [{{"type": "url", "url": "https://mcp.example.com/sse", "name": "wiki",
            "authorization_token": os.environ["MCP_TOKEN"]}}]
tools = [{{"type": "mcp_toolset", "mcp_server_name": "wiki"}}]
messages = [{{"role": "user", "content": "What is the capital of France? Ask the wiki."}}]
betas = ["mcp-client-2025-11-20"]

def ask():
    args = dict(model="{MODEL}", max_tokens=300, messages=messages, mcp_servers=servers, tools=tools, betas=betas)
    if stream:
        with client.beta.messages.stream(**args) as s:
            return s.get_final_message()
    return client.beta.messages.create(**args)

first = ask()
for block in first.content:
    if block.type == "mcp_tool_use":
        print(block.type, block.server_name, block.name, block.input)
    elif block.type == "mcp_tool_result":
        print(block.type, block.is_error, [c.text for c in block.content])
    else:
        print(block.type, repr(block.text))
messages += [{{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]}},
             {{"role": "user", "content": "Thanks."}}]
print(ask().content[0].text)
"""

MCP_ID = "mcptoolu_01WikiAskWikiAsk01"
MCP_CONTENT: list[dict[str, Any]] = [
    {"type": "text", "text": "Asking the wiki."},
    {"type": "mcp_tool_use", "id": MCP_ID, "name": "ask", "server_name": "wiki", "input": {"question": "capital of France"}},
    {"type": "mcp_tool_result", "tool_use_id": MCP_ID, "is_error": False, "content": [{"type": "text", "text": "Paris"}]},
    {"type": "text", "text": "The capital of France is Paris."},
]


def _mcp_model(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    assert body["mcp_servers"][0]["authorization_token"] == TOKEN  # the provider gets the token, at record
    if len(body["messages"]) > 1:
        assert [b["type"] for b in body["messages"][1]["content"]] == [b["type"] for b in MCP_CONTENT]
        return answer(body, message([{"type": "text", "text": "You're welcome."}], "end_turn", "msg_01Welcome"))
    return answer(body, message(MCP_CONTENT, "end_turn", "msg_01Wiki"))


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_the_mcp_connector_records_without_its_token_and_replays_strictly(stream: bool, tmp_path: Path, confdir: Path) -> None:
    cassette, rec, sent = record_agent(MCP_AGENT, tmp_path, confdir, _mcp_model, stream, {"MCP_TOKEN": TOKEN})
    assert rec.stdout.splitlines() == [
        "text 'Asking the wiki.'",
        "mcp_tool_use wiki ask {'question': 'capital of France'}",
        "mcp_tool_result False ['Paris']",
        "text 'The capital of France is Paris.'",
        "You're welcome.",
    ], rec.stdout
    assert len(sent) == 2 and sent[1]["messages"][1]["content"][1]["id"] == MCP_ID  # the turn went back as it came

    raw = cassette.read_bytes()
    assert TOKEN.encode() not in raw and b"authorization_token" not in raw and b"mcptoolu_" not in raw and b"msg_01" not in raw
    trace = load_trace(cassette)
    first_input = next(s.payload for s in trace.steps if s.type == "model_input")
    assert [t["name"] for t in first_input["tools"]] == ["mcp_toolset:wiki", "mcp_server:wiki"]
    assert first_input["tools"][1]["builtin"] == {"type": "url", "url": "https://mcp.example.com/sse"}
    answer = next(s.payload for s in trace.steps if s.type == "model_output")
    assert answer["parts"][1]["serverName"] == "wiki" and answer["parts"][2]["kind"] == "mcp_tool_result"

    rep = replay_agent(cassette, tmp_path, confdir, stream, {"MCP_TOKEN": "another-token-at-replay"})
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert "2 of 2 model calls served from the recording, no divergence" in rep.stderr


# --- programmatic tool calling -----------------------------------------------------------------

CALLER_AGENT = f"""
import sys
import anthropic

client = anthropic.Anthropic()
stream = sys.argv[1] == "stream"
tools = [{{"type": "code_execution_20250825", "name": "code_execution"}},
         {{"name": "read", "description": "Read a file", "input_schema": {{"type": "object", "properties": {{"path": {{"type": "string"}}}}}},
          "allowed_callers": ["code_execution_20250825"]}}]
messages = [{{"role": "user", "content": "Sum the numbers in a.txt using code."}}]
betas = ["advanced-tool-use-2025-11-20"]
for _ in range(4):
    args = dict(model="{MODEL}", max_tokens=300, messages=messages, tools=tools, betas=betas)
    if stream:
        with client.beta.messages.stream(**args) as s:
            reply = s.get_final_message()
    else:
        reply = client.beta.messages.create(**args)
    ids = {{b.id: b.type for b in reply.content if b.type == "server_tool_use"}}
    messages.append({{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]}})
    results = []
    for b in reply.content:
        if b.type == "tool_use":
            print("call", b.name, b.input, b.caller.type, ids.get(b.caller.tool_id))
            results.append({{"type": "tool_result", "tool_use_id": b.id, "content": "1 2 3"}})
    if not results:
        break
    messages.append({{"role": "user", "content": results}})
print(reply.stop_reason, " ".join(b.text for b in reply.content if b.type == "text"))
"""

CODE_ID = "srvtoolu_01CodeSumCodeSum01"
CALL_CONTENT: list[dict[str, Any]] = [
    {"type": "server_tool_use", "id": CODE_ID, "name": "code_execution", "input": {"code": "print(sum(map(int, read('a.txt').split())))"}},
    {
        "type": "tool_use",
        "id": "toolu_01ReadReadRead01",
        "name": "read",
        "input": {"path": "a.txt"},
        "caller": {"type": "code_execution_20250825", "tool_id": CODE_ID},
    },
]
DONE_CONTENT: list[dict[str, Any]] = [
    {
        "type": "code_execution_tool_result",
        "tool_use_id": CODE_ID,
        "content": {"type": "code_execution_result", "stdout": "6\n", "stderr": "", "return_code": 0, "content": []},
    },
    {"type": "text", "text": "The sum is 6."},
]
CONTAINER = {"id": "container_01Sum", "expires_at": "2026-12-02T12:00:00Z"}


def _calling_model(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    if len(body["messages"]) > 1:
        assert body["messages"][-1]["content"][0]["tool_use_id"] == "toolu_01ReadReadRead01"
        assert body["messages"][1]["content"][1]["caller"]["tool_id"] == CODE_ID
        return answer(body, message(DONE_CONTENT, "end_turn", "msg_01Done", container=CONTAINER))
    return answer(body, message(CALL_CONTENT, "tool_use", "msg_01Call", container=CONTAINER))


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_call_from_the_providers_code_records_with_its_caller_and_replays_strictly(stream: bool, tmp_path: Path, confdir: Path) -> None:
    cassette, rec, sent = record_agent(CALLER_AGENT, tmp_path, confdir, _calling_model, stream, {"MCP_TOKEN": TOKEN})
    assert rec.stdout.splitlines() == [
        "call read {'path': 'a.txt'} code_execution_20250825 server_tool_use",
        "end_turn The sum is 6.",
    ], rec.stdout
    assert len(sent) == 2

    raw = cassette.read_bytes()
    assert b"srvtoolu_" not in raw and b"toolu_01" not in raw and b"container_01" not in raw
    trace = load_trace(cassette)
    outputs = [s.payload for s in trace.steps if s.type == "model_output"]
    code_call = outputs[0]["parts"][0]["toolCallId"]
    assert outputs[0]["calls"][0]["caller"] == {"type": "code_execution_20250825", "toolCallId": code_call}
    continuation = [s.payload for s in trace.steps if s.type == "model_input"][1]
    assert continuation["messages"][1]["content"][1]["caller"] == {"type": "code_execution_20250825", "toolCallId": code_call}

    rep = replay_agent(cassette, tmp_path, confdir, stream, {"MCP_TOKEN": "another-token-at-replay"})
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout  # the caller names the served code execution call again
    assert "2 of 2 model calls served from the recording, no divergence" in rep.stderr


# --- search results and container uploads -------------------------------------------------------

RAG_AGENT = f"""
import sys
import anthropic

client = anthropic.Anthropic()
stream = sys.argv[1] == "stream"
tools = [{{"name": "kb", "description": "Search the knowledge base", "input_schema": {{"type": "object"}}}},
         {{"type": "code_execution_20250825", "name": "code_execution"}}]
messages = [{{"role": "user", "content": [{{"type": "text", "text": "How big is Paris? Look it up, and plot data.csv."}},
                                        {{"type": "container_upload", "file_id": "file_011CsvData"}}]}}]
betas = ["code-execution-2025-08-25", "files-api-2025-04-14"]
for _ in range(3):
    args = dict(model="{MODEL}", max_tokens=300, messages=messages, tools=tools, betas=betas)
    if stream:
        with client.beta.messages.stream(**args) as s:
            reply = s.get_final_message()
    else:
        reply = client.beta.messages.create(**args)
    messages.append({{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]}})
    calls = [b for b in reply.content if b.type == "tool_use"]
    if not calls:
        break
    found = {{"type": "search_result", "source": "https://kb.example/paris", "title": "Paris facts",
             "content": [{{"type": "text", "text": "Paris is the capital."}}, {{"type": "text", "text": "It has 2.1M people."}}],
             "citations": {{"enabled": True}}}}
    messages.append({{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": calls[0].id, "content": [found]}}]}})
for block in reply.content:
    cited = [f"{{c.type}}:{{c.source}}:{{c.cited_text}}" for c in getattr(block, "citations", None) or []]
    print(block.type, repr(getattr(block, "text", None)), cited)
"""

RAG_CITED: list[dict[str, Any]] = [
    {"type": "text", "text": "Paris has "},
    {
        "type": "text",
        "text": "2.1 million people",
        "citations": [
            {
                "type": "search_result_location",
                "source": "https://kb.example/paris",
                "title": "Paris facts",
                "cited_text": "It has 2.1M people.",
                "search_result_index": 0,
                "start_block_index": 1,
                "end_block_index": 2,
            }
        ],
    },
    {"type": "text", "text": "."},
]


def _rag_model(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    assert body["messages"][0]["content"][1] == {"type": "container_upload", "file_id": "file_011CsvData"}
    if len(body["messages"]) > 1:
        assert body["messages"][2]["content"][0]["content"][0]["type"] == "search_result"
        return answer(body, message(RAG_CITED, "end_turn", "msg_01Cited"))
    call = {"type": "tool_use", "id": "toolu_01KbKbKbKb01", "name": "kb", "input": {"q": "paris population"}}
    return answer(body, message([call], "tool_use", "msg_01Kb"))


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_search_results_and_a_container_upload_record_and_replay_strictly(stream: bool, tmp_path: Path, confdir: Path) -> None:
    cassette, rec, sent = record_agent(RAG_AGENT, tmp_path, confdir, _rag_model, stream, {"MCP_TOKEN": TOKEN})
    assert rec.stdout.splitlines() == [
        "text 'Paris has ' []",
        "text '2.1 million people' ['search_result_location:https://kb.example/paris:It has 2.1M people.']",
        "text '.' []",
    ], rec.stdout
    assert len(sent) == 2

    trace = load_trace(cassette)
    inputs = [s.payload for s in trace.steps if s.type == "model_input"]
    assert inputs[0]["messages"][0]["content"][1] == {"type": "container_upload", "file": "file_011CsvData"}
    found = inputs[1]["messages"][2]["content"][0]["result"][0]
    assert found["type"] == "search_result" and found["citations"] is True and len(found["content"]) == 2
    answer = [s.payload for s in trace.steps if s.type == "model_output"][1]
    assert answer["parts"][1]["citations"][0]["type"] == "search_result_location"

    rep = replay_agent(cassette, tmp_path, confdir, stream, {"MCP_TOKEN": "another-token-at-replay"})
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert "2 of 2 model calls served from the recording, no divergence" in rep.stderr
