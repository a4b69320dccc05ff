"""A scripted Anthropic Messages answer for the e2e fakes, and one record and replay of an agent script.

``message`` builds a Message; ``answer`` gives it to ``FakeProvider`` whole, or as the API streams it (``message_events``:
blocks opened empty, text and its citations as deltas, any block with an ``input`` given as JSON pieces). ``record_agent``
runs an agent script (``agent.py stream|whole``, or the ``args`` given) under ``blackbox record`` against a responder and
verifies the cassette; ``replay_agent`` runs the same script under ``blackbox replay`` with no API key.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from conftest import blackbox, remote_args
from fake_provider import FakeProvider

KEY = "sk-ant-test-not-a-real-key-0000"
MODEL = "claude-sonnet-4-6"

Json = dict[str, Any]


def message(
    content: list[Json], stop_reason: str, message_id: str, *, input_tokens: int = 900, output_tokens: int = 20, **extra: Any
) -> Json:
    """A Message with ``content``, its stop and usage (``extra``: more top-level keys, e.g. ``container``)."""
    usage = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    return {"id": message_id, "type": "message", "role": "assistant", "model": MODEL, "content": content} | {
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
        **extra,
    }


def message_events(msg: Json) -> list[Json]:
    """``msg`` as the API streams it."""
    head = {**msg, "content": [], "stop_reason": None, "usage": {**msg["usage"], "output_tokens": 0}}
    events: list[Json] = [{"type": "message_start", "message": head}]
    for i, block in enumerate(msg["content"]):
        if block["type"] == "text":
            start: Json = {"type": "text", "text": ""} | ({"citations": []} if "citations" in block else {})
            events.append({"type": "content_block_start", "index": i, "content_block": start})
            for citation in block.get("citations") or []:
                events.append({"type": "content_block_delta", "index": i, "delta": {"type": "citations_delta", "citation": citation}})
            events.append({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": block["text"]}})
        elif "input" in block:
            events.append({"type": "content_block_start", "index": i, "content_block": {**block, "input": {}}})
            partial = json.dumps(block["input"])
            for piece in (partial[:6], partial[6:]):
                events.append({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": piece}})
        else:
            events.append({"type": "content_block_start", "index": i, "content_block": block})
        events.append({"type": "content_block_stop", "index": i})
    delta = {"stop_reason": msg["stop_reason"], "stop_sequence": None}
    events.append({"type": "message_delta", "delta": delta, "usage": {"output_tokens": msg["usage"]["output_tokens"]}})
    events.append({"type": "message_stop"})
    return events


def answer(body: Mapping[str, Any], msg: Json) -> Json:
    """The fake provider's answer: ``msg`` streamed when the request asked for a stream, else whole."""
    return {"raw_events": message_events(msg)} if body.get("stream") else {"raw": msg}


def record_agent(
    agent_source: str,
    tmp_path: Path,
    confdir: Path,
    respond: Callable[[str, Json], Json],
    stream: bool,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] | None = None,
) -> tuple[Path, subprocess.CompletedProcess[str], list[Json]]:
    """Record ``agent_source`` (run as ``agent.py stream|whole``, or ``agent.py *args``) against ``respond``; verified.

    (cassette, the run, the bodies sent)
    """
    agent = tmp_path / "agent.py"
    agent.write_text(agent_source)
    cassette = tmp_path / "run.json"
    with FakeProvider(responder=respond) as provider:
        rec = blackbox(
            "record", "-o", str(cassette), "--confdir", str(confdir), *remote_args(provider.url), "--",
            sys.executable, str(agent), *_args(stream, args), env={"ANTHROPIC_API_KEY": KEY, **(env or {})},
        )  # fmt: skip
        sent = [r["body"] for r in provider.requests if isinstance(r.get("body"), dict)]
    assert rec.returncode == 0, rec.stderr
    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return cassette, rec, sent


def replay_agent(
    cassette: Path,
    tmp_path: Path,
    confdir: Path,
    stream: bool,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Replay the agent ``record_agent`` wrote, strictly and offline, without the API key (``env``: what else it sees)."""
    environ = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"} | dict(env or {})
    agent = tmp_path / "agent.py"
    return blackbox("replay", str(cassette), "--confdir", str(confdir), "--", sys.executable, str(agent), *_args(stream, args), env=environ)


def _args(stream: bool, args: Sequence[str] | None) -> list[str]:
    return list(args) if args is not None else ["stream" if stream else "whole"]
