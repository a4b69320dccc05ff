"""End to end: a large server-side tool result is kept once in RUN.media.json, through a real proxy, with the real Anthropic SDK.

The fake provider answers like Anthropic's ``web_fetch_20250910`` tool on a long
page: a ``server_tool_use``, a ``web_fetch_tool_result`` of ~370 KB and text. The
agent (the anthropic SDK) sends that answer back in its next request, as agents
do. ``blackbox record`` keeps the result once, by digest, in the media file (the
two steps that hold it name it), ``verify`` passes, and a strict offline replay
gives the SDK the very same content and matches the history that sends it back.
"""

from __future__ import annotations

import base64
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import blackbox, remote_args
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.cassette.canonical import canonical_bytes
from blackbox_mitm.cassette.media import load_media, media_path

pytestmark = pytest.mark.e2e

KEY = "sk-ant-test-not-a-real-key-0000"
PAGE = "".join(f"Line {n}: the fetched page goes on and on, as long pages do.\n" for n in range(6000))
FETCHED = {
    "type": "web_fetch_result",
    "url": "https://docs.example.com/long.html",
    "retrieved_at": "2026-12-01T10:00:00Z",
    "content": {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": PAGE}, "title": "Long"},
}
AGENT = """
import hashlib, json, sys
import anthropic

client = anthropic.Anthropic()
tools = [{"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 1}]
messages = [{"role": "user", "content": "How long is https://docs.example.com/long.html?"}]
first = client.beta.messages.create(model="claude-sonnet-4-6", max_tokens=200, messages=messages, tools=tools)
[fetched] = [b for b in first.content if b.type == "web_fetch_tool_result"]
data = fetched.content.content.source.data
print(first.content[-1].text, len(data), hashlib.sha256(data.encode()).hexdigest())
messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]}, {"role": "user", "content": "Thanks."}]
second = client.beta.messages.create(model="claude-sonnet-4-6", max_tokens=200, messages=messages, tools=tools)
print(second.content[0].text)
"""


def _respond(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    if len(body["messages"]) > 1:
        return {"text": "You're welcome."}
    call = "srvtoolu_01AbCdEfGhIjKlMnOpQrStUv"
    content = [
        {"type": "server_tool_use", "id": call, "name": "web_fetch", "input": {"url": FETCHED["url"]}},
        {"type": "web_fetch_tool_result", "tool_use_id": call, "content": FETCHED},
        {"type": "text", "text": "The page has 6000 lines."},
    ]
    message = {"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant", "model": body["model"], "content": content}
    message |= {"stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 90000, "output_tokens": 12}}
    return {"raw": message}


def test_a_large_web_fetch_result_is_stored_once_in_the_media_file_and_replays_strictly(tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "fetch.py"
    agent.write_text(AGENT)
    cassette = tmp_path / "fetch.json"
    with FakeProvider(responder=_respond) as provider:
        rec = blackbox(
            "record", "-o", str(cassette), "--confdir", str(confdir), *remote_args(provider.url), "--",
            sys.executable, str(agent), env={"ANTHROPIC_API_KEY": KEY},
        )  # fmt: skip
        sent_back = [r["body"] for r in provider.requests if isinstance(r.get("body"), dict)][-1]
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout.split("\n")[0] == f"The page has 6000 lines. {len(PAGE)} {hashlib.sha256(PAGE.encode()).hexdigest()}"
    assert any(b.get("type") == "web_fetch_tool_result" for b in sent_back["messages"][1]["content"])  # the SDK sent it back

    data = canonical_bytes(FETCHED)
    digest = hashlib.sha256(data).hexdigest()
    trace = load_trace(cassette)
    named = [
        p
        for s in trace.steps
        for p in (
            s.payload.get("parts") or []
            if s.type == "model_output"
            else [q for m in s.payload.get("messages", []) for q in m["content"] if isinstance(m["content"], list)]
        )
        if p.get("type") == "server_tool_result"
    ]
    assert len(named) == 2  # the answer, and the history that sent it back
    assert all(
        p["resultMedia"] == {"type": "document", "mediaType": "application/json", "sha256": digest, "size": len(data)} for p in named
    )
    raw = cassette.read_bytes()
    assert PAGE[:300].encode() not in raw and len(raw) < len(data) // 4  # the cassette names it; it does not hold it
    assert media_path(cassette).read_bytes().count(base64.b64encode(data)) == 1  # stored once, however often it is sent
    document = load_media(cassette, trace)
    assert document is not None and list(document["media"]) == [digest]
    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0, checked.stdout

    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", sys.executable, str(agent), env=env)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert "2 of 2 model calls served from the recording, no divergence" in rep.stderr
