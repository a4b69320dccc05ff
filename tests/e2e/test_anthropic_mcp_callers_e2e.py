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

Each whole and streamed (SSE events scripted like the API's, tool input as JSON pieces). One process runs the three
agents (``COMBINED_AGENT``: each under a ``# PART`` line, each conversation under a ``== MODE`` line), recorded and
replayed once per module; each test checks its own conversation, its requests and its steps.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from anthropic_script import MODEL, answer, message, record_agent, replay_agent
from once import shared

from blackbox_mitm.cassette import load_trace

pytestmark = pytest.mark.e2e

TOKEN = "mcp-oauth-token-Zx81Qw-do-not-record"
MODES = ["whole", "stream"]  # each part's arguments: one conversation each, in this order
PARTS = ["mcp", "caller", "rag"]  # the agents below, run one after the other in one process (COMBINED_AGENT)


@dataclass
class Session:
    """One run of the three agents, each with a whole and a streamed conversation: recorded (verified), then replayed strictly offline."""

    cassette: Path
    rec: subprocess.CompletedProcess[str]
    sent: list[dict[str, Any]]
    rep: subprocess.CompletedProcess[str]

    def lines(self, proc: subprocess.CompletedProcess[str], part: str, stream: bool) -> list[str]:
        """What ``proc`` printed for one conversation (after its part's ``# PART`` line, its ``== MODE`` line, before the next)."""
        out = proc.stdout.splitlines()
        start = out.index("== " + MODES[stream], out.index("# " + part)) + 1
        rest = [i for i in range(start, len(out)) if out[i].startswith(("== ", "# "))]
        return out[start : rest[0] if rest else len(out)]

    def requests(self, part: str, stream: bool) -> list[dict[str, Any]]:
        return [body for body in self.sent if _part_of(body) == part and bool(body.get("stream")) == stream]

    def payloads(self, kind: str, part: str, stream: bool) -> list[dict[str, Any]]:
        """One conversation's steps of ``kind`` (each conversation makes 2 model calls; the parts in order, whole first)."""
        steps = [s.payload for s in load_trace(self.cassette).steps if s.type == kind]
        assert len(steps) == 2 * len(MODES) * len(PARTS), steps
        first = 2 * (len(MODES) * PARTS.index(part) + stream)
        return steps[first : first + 2]


def _assert_replayed(session: Session, part: str, stream: bool) -> None:
    assert session.rep.returncode == 0, session.rep.stderr
    assert session.lines(session.rep, part, stream) == session.lines(session.rec, part, stream)
    assert session.rep.stdout == session.rec.stdout
    assert "12 of 12 model calls served from the recording, no divergence" in session.rep.stderr  # the 2 of each conversation


# Each agent's one way to ask: whole (messages.create) or streamed (messages.stream, its final message).
ASK = """
def ask(stream, **args):
    if stream:
        with client.beta.messages.stream(**args) as s:
            return s.get_final_message()
    return client.beta.messages.create(**args)
"""


# --- the MCP connector -------------------------------------------------------------------------

MCP_AGENT = f"""
import os, sys
import anthropic

client = anthropic.Anthropic()
servers = [{{"type": "url", "url": "https://mcp.example.com/sse", "name": "wiki",
            "authorization_token": os.environ["MCP_TOKEN"]}}]
tools = [{{"type": "mcp_toolset", "mcp_server_name": "wiki"}}]
betas = ["mcp-client-2025-11-20"]

{ASK}

def ask_wiki(stream, messages):
    return ask(stream, model="{MODEL}", max_tokens=300, messages=messages, mcp_servers=servers, tools=tools, betas=betas)

for mode in sys.argv[1:]:
    print("==", mode)
    stream = mode == "stream"
    messages = [{{"role": "user", "content": "What is the capital of France? Ask the wiki."}}]
    first = ask_wiki(stream, messages)
    for block in first.content:
        if block.type == "mcp_tool_use":
            print(block.type, block.server_name, block.name, block.input)
        elif block.type == "mcp_tool_result":
            print(block.type, block.is_error, [c.text for c in block.content])
        else:
            print(block.type, repr(block.text))
    messages += [{{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]}},
                 {{"role": "user", "content": "Thanks."}}]
    print(ask_wiki(stream, messages).content[0].text)
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
def test_the_mcp_connector_records_without_its_token_and_replays_strictly(stream: bool, session: Session) -> None:
    cassette, rec, sent = session.cassette, session.rec, session.requests("mcp", stream)
    assert session.lines(rec, "mcp", stream) == [
        "text 'Asking the wiki.'",
        "mcp_tool_use wiki ask {'question': 'capital of France'}",
        "mcp_tool_result False ['Paris']",
        "text 'The capital of France is Paris.'",
        "You're welcome.",
    ], rec.stdout
    assert len(sent) == 2 and sent[1]["messages"][1]["content"][1]["id"] == MCP_ID  # the turn went back as it came

    raw = cassette.read_bytes()
    assert TOKEN.encode() not in raw and b"authorization_token" not in raw and b"mcptoolu_" not in raw and b"msg_01" not in raw
    first_input = session.payloads("model_input", "mcp", stream)[0]
    assert [t["name"] for t in first_input["tools"]] == ["mcp_toolset:wiki", "mcp_server:wiki"]
    assert first_input["tools"][1]["builtin"] == {"type": "url", "url": "https://mcp.example.com/sse"}
    answer = session.payloads("model_output", "mcp", stream)[0]
    assert answer["parts"][1]["serverName"] == "wiki" and answer["parts"][2]["kind"] == "mcp_tool_result"

    _assert_replayed(session, "mcp", stream)


# --- programmatic tool calling -----------------------------------------------------------------

CALLER_AGENT = f"""
import sys
import anthropic

client = anthropic.Anthropic()
{ASK}
tools = [{{"type": "code_execution_20250825", "name": "code_execution"}},
         {{"name": "read", "description": "Read a file", "input_schema": {{"type": "object", "properties": {{"path": {{"type": "string"}}}}}},
          "allowed_callers": ["code_execution_20250825"]}}]
betas = ["advanced-tool-use-2025-11-20"]
for mode in sys.argv[1:]:
    print("==", mode)
    stream = mode == "stream"
    messages = [{{"role": "user", "content": "Sum the numbers in a.txt using code."}}]
    for _ in range(4):
        reply = ask(stream, model="{MODEL}", max_tokens=300, messages=messages, tools=tools, betas=betas)
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
def test_a_call_from_the_providers_code_records_with_its_caller_and_replays_strictly(stream: bool, session: Session) -> None:
    cassette, rec, sent = session.cassette, session.rec, session.requests("caller", stream)
    assert session.lines(rec, "caller", stream) == [
        "call read {'path': 'a.txt'} code_execution_20250825 server_tool_use",
        "end_turn The sum is 6.",
    ], rec.stdout
    assert len(sent) == 2

    raw = cassette.read_bytes()
    assert b"srvtoolu_" not in raw and b"toolu_01" not in raw and b"container_01" not in raw
    outputs = session.payloads("model_output", "caller", stream)
    code_call = outputs[0]["parts"][0]["toolCallId"]
    assert outputs[0]["calls"][0]["caller"] == {"type": "code_execution_20250825", "toolCallId": code_call}
    continuation = session.payloads("model_input", "caller", stream)[1]
    assert continuation["messages"][1]["content"][1]["caller"] == {"type": "code_execution_20250825", "toolCallId": code_call}

    _assert_replayed(session, "caller", stream)  # the caller names the served code execution call again


# --- search results and container uploads -------------------------------------------------------

RAG_AGENT = f"""
import sys
import anthropic

client = anthropic.Anthropic()
{ASK}
tools = [{{"name": "kb", "description": "Search the knowledge base", "input_schema": {{"type": "object"}}}},
         {{"type": "code_execution_20250825", "name": "code_execution"}}]
betas = ["code-execution-2025-08-25", "files-api-2025-04-14"]
for mode in sys.argv[1:]:
    print("==", mode)
    stream = mode == "stream"
    messages = [{{"role": "user", "content": [{{"type": "text", "text": "How big is Paris? Look it up, and plot data.csv."}},
                                            {{"type": "container_upload", "file_id": "file_011CsvData"}}]}}]
    for _ in range(3):
        reply = ask(stream, model="{MODEL}", max_tokens=300, messages=messages, tools=tools, betas=betas)
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
def test_search_results_and_a_container_upload_record_and_replay_strictly(stream: bool, session: Session) -> None:
    rec, sent = session.rec, session.requests("rag", stream)
    assert session.lines(rec, "rag", stream) == [
        "text 'Paris has ' []",
        "text '2.1 million people' ['search_result_location:https://kb.example/paris:It has 2.1M people.']",
        "text '.' []",
    ], rec.stdout
    assert len(sent) == 2

    inputs = session.payloads("model_input", "rag", stream)
    assert inputs[0]["messages"][0]["content"][1] == {"type": "container_upload", "file": "file_011CsvData"}
    found = inputs[1]["messages"][2]["content"][0]["result"][0]
    assert found["type"] == "search_result" and found["citations"] is True and len(found["content"]) == 2
    answer = session.payloads("model_output", "rag", stream)[1]
    assert answer["parts"][1]["citations"][0]["type"] == "search_result_location"

    _assert_replayed(session, "rag", stream)


# --- the three in one run ------------------------------------------------------------------------

COMBINED_AGENT = f"""
import sys
for part, source in {list(zip(PARTS, [MCP_AGENT, CALLER_AGENT, RAG_AGENT], strict=True))!r}:
    print("#", part, flush=True)
    exec(compile(source, part, "exec"), {{"__name__": "__main__"}})
    sys.stdout.flush()
"""


def _part_of(body: dict[str, Any]) -> str:
    """Which agent sent a request: the MCP connector's carries mcp_servers, the caller's a tool with allowed_callers."""
    if "mcp_servers" in body:
        return "mcp"
    return "caller" if any("allowed_callers" in t for t in body.get("tools") or []) else "rag"


def _model(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"mcp": _mcp_model, "caller": _calling_model, "rag": _rag_model}[_part_of(body)](kind, body)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> Session:
    def make(folder: Path) -> Session:
        cassette, rec, sent = record_agent(COMBINED_AGENT, folder, confdir, _model, False, {"MCP_TOKEN": TOKEN}, args=MODES)
        rep = replay_agent(cassette, folder, confdir, False, {"MCP_TOKEN": "another-token-at-replay"}, args=MODES)
        return Session(cassette, rec, sent, rep)

    return shared(tmp_path_factory, "anthropic-mcp-callers", make)  # once a test session (tests/once.py)
