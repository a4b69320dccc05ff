"""End to end, with the real Anthropic SDK through a real proxy: content-list documents with citations, and pause_turn.

* An agent sends a ``document`` whose source is a content list (text and a PNG),
  with a title, a context and citations enabled, beside a plain-text document; the
  fake provider answers with text citing both (``content_block_location``,
  ``char_location``). The agent prints what the citations say and sends the answer
  back with the document again. Recorded (the image by digest, once, in the media
  file), verified, and replayed strictly offline: the same output.
* A long web search the provider pauses: the first answer stops with
  ``pause_turn`` after a ``server_tool_use`` with no result; the agent sends the
  paused content back as-is, as Anthropic's docs say, and the provider continues
  with the search result and the answer. Recorded with the neutral stop ``pause``,
  verified, replayed strictly offline: the SDK gets ``pause_turn`` again and the
  continuation matches.

Each whole and streamed (SSE events scripted like the API's, citations as
``citations_delta``).
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import pytest
from anthropic_script import MODEL, answer, message, record_agent, replay_agent

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.cassette.media import load_media

pytestmark = pytest.mark.e2e

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7a69a0000000049454e44ae426082"
)


# --- documents with a content-list source, citations into them ---------------------------------

DOCUMENT_AGENT = f"""
import base64, sys
import anthropic

PNG = base64.b64decode({base64.b64encode(PNG).decode()!r})
client = anthropic.Anthropic()
stream = sys.argv[1] == "stream"
design = {{
    "type": "document",
    "source": {{"type": "content", "content": [
        {{"type": "text", "text": "The pipeline has three stages."}},
        {{"type": "image", "source": {{"type": "base64", "media_type": "image/png", "data": base64.b64encode(PNG).decode()}}}},
    ]}},
    "title": "Design notes",
    "context": "Written by the platform team",
    "citations": {{"enabled": True}},
}}
facts = {{"type": "document", "source": {{"type": "text", "media_type": "text/plain", "data": "The grass is green."}},
         "title": "facts.txt", "citations": {{"enabled": True}}}}
messages = [{{"role": "user", "content": [design, facts, {{"type": "text", "text": "Summarize both, with citations."}}]}}]

def ask():
    if stream:
        with client.messages.stream(model="{MODEL}", max_tokens=300, messages=messages) as s:
            return s.get_final_message()
    return client.messages.create(model="{MODEL}", max_tokens=300, messages=messages)

first = ask()
for block in first.content:
    cited = [f"{{c.type}}@{{c.document_index}}:{{c.cited_text}}" for c in block.citations or []]
    print(repr(block.text), cited)
messages += [{{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]}},
             {{"role": "user", "content": "Thanks."}}]
print(ask().content[0].text)
"""

CITED: list[dict[str, Any]] = [
    {"type": "text", "text": "The design says: "},
    {
        "type": "text",
        "text": "the pipeline has three stages",
        "citations": [
            {
                "type": "content_block_location",
                "cited_text": "The pipeline has three stages.",
                "document_index": 0,
                "document_title": "Design notes",
                "start_block_index": 0,
                "end_block_index": 1,
            }
        ],
    },
    {"type": "text", "text": "; the facts say "},
    {
        "type": "text",
        "text": "the grass is green",
        "citations": [
            {
                "type": "char_location",
                "cited_text": "The grass is green.",
                "document_index": 1,
                "document_title": "facts.txt",
                "start_char_index": 0,
                "end_char_index": 19,
            }
        ],
    },
    {"type": "text", "text": "."},
]


def _documents_model(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    if len(body["messages"]) > 1:
        return answer(
            body, message([{"type": "text", "text": "You're welcome."}], "end_turn", "msg_01Welcome", input_tokens=1500, output_tokens=25)
        )
    return answer(body, message(CITED, "end_turn", "msg_01Cited"))


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_content_list_document_with_citations_records_and_replays_strictly(stream: bool, tmp_path: Path, confdir: Path) -> None:
    cassette, rec, sent = record_agent(DOCUMENT_AGENT, tmp_path, confdir, _documents_model, stream)
    lines = rec.stdout.splitlines()
    assert lines[1] == "'the pipeline has three stages' ['content_block_location@0:The pipeline has three stages.']", rec.stdout
    assert lines[3] == "'the grass is green' ['char_location@1:The grass is green.']" and lines[-1] == "You're welcome."
    assert sent[-1]["messages"][1]["content"][1]["citations"][0]["type"] == "content_block_location"  # the SDK sent them back

    trace = load_trace(cassette)
    inputs = [s.payload for s in trace.steps if s.type == "model_input"]
    digest = hashlib.sha256(PNG).hexdigest()
    for model_input in inputs:  # the document, in both requests, the same part
        design = model_input["messages"][0]["content"][0]
        assert design == {
            "type": "document",
            "content": [
                {"type": "text", "text": "The pipeline has three stages."},
                {"type": "image", "mediaType": "image/png", "sha256": digest, "size": len(PNG)},
            ],
            "name": "Design notes",
            "context": "Written by the platform team",
            "citations": True,
        }
    answer = next(s.payload for s in trace.steps if s.type == "model_output")
    assert [p.get("citations") for p in answer["parts"]] == [b.get("citations") for b in CITED]
    document = load_media(cassette, trace)
    text_digest = hashlib.sha256(b"The grass is green.").hexdigest()
    assert document is not None and sorted(document["media"]) == sorted([digest, text_digest])  # each once, though sent twice
    assert b"msg_01" not in cassette.read_bytes()

    rep = replay_agent(cassette, tmp_path, confdir, stream)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert "2 of 2 model calls served from the recording, no divergence" in rep.stderr


# --- pause_turn --------------------------------------------------------------------------------

PAUSE_AGENT = f"""
import sys
import anthropic

client = anthropic.Anthropic()
stream = sys.argv[1] == "stream"
tools = [{{"type": "web_search_20250305", "name": "web_search", "max_uses": 3}}]
messages = [{{"role": "user", "content": "What is the weather in Paris? Search the web."}}]
stops = []
for _ in range(4):
    if stream:
        with client.messages.stream(model="{MODEL}", max_tokens=300, messages=messages, tools=tools) as s:
            reply = s.get_final_message()
    else:
        reply = client.messages.create(model="{MODEL}", max_tokens=300, messages=messages, tools=tools)
    stops.append(reply.stop_reason)
    print(reply.stop_reason, [b.type for b in reply.content])
    if reply.stop_reason != "pause_turn":
        break
    # A paused turn: send it back as it came, so the model continues it.
    if messages[-1]["role"] == "assistant":
        messages[-1]["content"] += [b.model_dump(exclude_none=True) for b in reply.content]
    else:
        messages.append({{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]}})
print(" ".join(b.text for b in reply.content if b.type == "text"))
"""

SEARCH_ID = "srvtoolu_01PauseSearchPauseSearch01"
PAUSED: list[dict[str, Any]] = [
    {"type": "text", "text": "Let me search for that."},
    {"type": "server_tool_use", "id": SEARCH_ID, "name": "web_search", "input": {"query": "paris weather"}},
]
RESUMED: list[dict[str, Any]] = [
    {
        "type": "web_search_tool_result",
        "tool_use_id": SEARCH_ID,
        "content": [
            {
                "type": "web_search_result",
                "url": "https://weather.example/paris",
                "title": "Paris",
                "encrypted_content": "EqgfCioIARgB",
                "page_age": "1 day",
            }
        ],
    },
    {"type": "text", "text": "It is sunny in Paris, 24 °C."},
]


def _pausing_model(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """Pauses the first turn after the search call; continues it when the agent sends the paused turn back."""
    last = body["messages"][-1]
    if last["role"] == "assistant":
        assert [b["type"] for b in last["content"]] == ["text", "server_tool_use"], last
        return answer(body, message(RESUMED, "end_turn", "msg_01Resumed"))
    return answer(body, message(PAUSED, "pause_turn", "msg_01Paused"))


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_paused_server_tool_turn_records_and_replays_strictly(stream: bool, tmp_path: Path, confdir: Path) -> None:
    cassette, rec, sent = record_agent(PAUSE_AGENT, tmp_path, confdir, _pausing_model, stream)
    assert rec.stdout.splitlines() == [
        "pause_turn ['text', 'server_tool_use']",
        "end_turn ['web_search_tool_result', 'text']",
        "It is sunny in Paris, 24 °C.",
    ], rec.stdout
    assert len(sent) == 2 and sent[1]["messages"][-1]["content"][1]["id"] == SEARCH_ID  # the paused turn went back as it came

    trace = load_trace(cassette)
    paused, resumed = [s.payload for s in trace.steps if s.type == "model_output"]
    assert paused["stop"] == "pause" and paused["type"] == "final_answer"
    assert [p["type"] for p in paused["parts"]] == ["text", "server_tool_call"]
    assert "stop" not in resumed and resumed["parts"][0]["toolCallId"] == paused["parts"][1]["toolCallId"]
    continuation = [s.payload for s in trace.steps if s.type == "model_input"][1]
    assert continuation["messages"][-1] == {"role": "assistant", "content": paused["parts"]}
    assert b"srvtoolu_" not in cassette.read_bytes()

    rep = replay_agent(cassette, tmp_path, confdir, stream)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout  # pause_turn again, and the continuation matched
    assert "2 of 2 model calls served from the recording, no divergence" in rep.stderr
