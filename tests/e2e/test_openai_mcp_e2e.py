"""End to end, with the real ``openai`` Python SDK through a real proxy: the Responses API's hosted ``mcp`` tool.

The agent declares an MCP server (with an ``authorization`` token and a header), the
model lists its tools and asks for approval (``mcp_list_tools``,
``mcp_approval_request``), the agent approves (``mcp_approval_response``), and the
model's answer carries the ``mcp_call`` the provider made and its text. Recorded
with no credential and no provider id in the cassette, ``verify`` passes, and a strict
offline replay gives the agent the same items; a denial instead diverges. Whole and streamed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import blackbox, remote_args
from fake_responses import FakeResponses, events_of

from blackbox_mitm.cassette import load_trace

pytestmark = pytest.mark.e2e

AGENT = """
import sys
from openai import OpenAI

client = OpenAI()
mode, approve = sys.argv[1], sys.argv[2] == "yes"
tool = {
    "type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.example.com/mcp",
    "authorization": "tok-do-not-record-1", "headers": {"X-Team": "hdr-do-not-record-2"}, "require_approval": "always",
}
items = [{"role": "user", "content": "What transport does MCP use?"}]

def ask():
    kw = dict(model="gpt-4.1", tools=[tool], input=items)
    if mode == "stream":
        with client.responses.stream(**kw) as stream:
            return stream.get_final_response()
    return client.responses.create(**kw)

first = ask()
print([o.type for o in first.output])
[request] = [o for o in first.output if o.type == "mcp_approval_request"]
print("approve?", request.server_label, request.name, request.arguments)
items += [o.model_dump(exclude_none=True) for o in first.output]
items.append({"type": "mcp_approval_response", "approval_request_id": request.id, "approve": approve})
second = ask()
[call] = [o for o in second.output if o.type == "mcp_call"]
print("called", call.name, call.output, call.approval_request_id == request.id)
print(second.output_text)
"""

LISTED = {
    "id": "mcpl_68a1b2c3",
    "type": "mcp_list_tools",
    "server_label": "deepwiki",
    "tools": [{"name": "ask_question", "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}],
}
APPROVAL = {
    "id": "mcpr_68a1b2d4",
    "type": "mcp_approval_request",
    "server_label": "deepwiki",
    "name": "ask_question",
    "arguments": '{"q":"transport"}',
}
CALL = {
    "id": "mcp_68a1b2e5",
    "type": "mcp_call",
    "status": "completed",
    "server_label": "deepwiki",
    "name": "ask_question",
    "arguments": '{"q":"transport"}',
    "output": "JSON-RPC over stdio or HTTP.",
    "approval_request_id": "mcpr_68a1b2d4",
}
DONE = {
    "id": "msg_68a1b2f6",
    "type": "message",
    "status": "completed",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "MCP speaks JSON-RPC.", "annotations": [], "logprobs": []}],
}


def _response(rid: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    usage = {
        "input_tokens": 40,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 6,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 46,
    }
    head = {"id": rid, "object": "response", "created_at": 1_764_000_000, "status": "completed", "model": "gpt-4.1"}
    return {**head, "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "usage": usage}


def _script(mode: str) -> list[dict[str, Any]]:
    answers = [_response("resp_68a1aa", [LISTED, APPROVAL]), _response("resp_68a1bb", [CALL, DONE])]
    return [{"raw_events": events_of(r)} if mode == "stream" else {"raw": r} for r in answers]


@pytest.mark.parametrize("mode", ["whole", "stream"])
def test_an_mcp_approval_round_records_without_credentials_and_replays_strictly(mode: str, tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "mcp_agent.py"
    agent.write_text(AGENT)
    cassette = tmp_path / "mcp.json"
    argv = [sys.executable, str(agent), mode]
    with FakeResponses(_script(mode)) as fake:
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *remote_args(fake.url), "--", *argv, "yes")
        sent = fake.calls()
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout.splitlines() == [
        "['mcp_list_tools', 'mcp_approval_request']",
        'approve? deepwiki ask_question {"q":"transport"}',
        "called ask_question JSON-RPC over stdio or HTTP. True",
        "MCP speaks JSON-RPC.",
    ]
    assert sent[0]["tools"][0]["authorization"] == "tok-do-not-record-1"  # the provider got the tool as sent

    text = cassette.read_text()
    for secret in ("tok-do-not-record-1", "hdr-do-not-record-2", "mcpr_68a1b2d4", "mcpl_68a1b2c3", "mcp_68a1b2e5", "resp_68a1"):
        assert secret not in text
    trace = load_trace(cassette)
    last = [s.payload for s in trace.steps if s.type == "model_input"][-1]
    assert last["tools"][0]["name"] == "mcp:deepwiki" and last["tools"][0]["builtin"]["headers"] == ["X-Team"]
    assert last["messages"][-1]["content"][0]["result"] == {"approve": True}
    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0, checked.stdout + checked.stderr

    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *argv, "yes")  # the fake is gone: offline
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    denied = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *argv, "no")
    assert denied.returncode != 0
    assert "differ" in denied.stderr, denied.stderr
