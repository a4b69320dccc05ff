"""End to end: @openai/agents (JS, pinned) with a zod tool over chat completions, recorded and replayed strictly.

The SDK sends every zod tool with ``strict: true`` (it cannot send one
non-strict): the tool definition's ``strict`` is recorded and compared, not
refused. ``blackbox record -- node agent.mjs`` through a real proxy to the fake
provider (one tool round, then the answer); ``verify``; the fake stopped, a
strict offline replay gives the same answer; a changed question diverges.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, blackbox, remote_args
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

CLIENT = ROOT / "tests" / "e2e" / "clients" / "openai-agents-js"
AGENT = ["node", str(CLIENT / "agent.mjs")]
QUESTION = "What's the weather in Paris?"
SCRIPT: list[dict[str, Any]] = [{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}, {"text": "Paris: cloudy, 18°C."}]


@pytest.fixture(scope="module")
def installed() -> None:
    if shutil.which("node") is None or not (CLIENT / "node_modules" / "@openai" / "agents").is_dir():
        pytest.fail(f"@openai/agents is not installed in {CLIENT}: scripts/setup-openai-agents-js installs it (npm ci)")


def test_a_zod_tool_agent_records_with_strict_and_replays_strictly(installed: None, tmp_path: Path, confdir: Path) -> None:
    cassette = tmp_path / "agents-js.json"
    with FakeProvider(SCRIPT) as provider:
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *remote_args(provider.url), "--", *AGENT, QUESTION)
        sent = [r["body"] for r in provider.requests]
    assert rec.returncode == 0, rec.stderr[-3000:]
    assert rec.stdout.strip() == "Paris: cloudy, 18°C."
    assert len(sent) == 2 and sent[0]["tools"][0]["function"]["strict"] is True  # what the SDK sends for a zod tool

    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    first = trace.steps[0].payload
    [tool] = first["tools"]
    assert tool["name"] == "get_weather" and tool["strict"] is True
    assert [s.type for s in trace.steps] == [
        "model_input",
        "model_output",
        "tool_call",
        "tool_result",
        "model_input",
        "model_output",
        "metadata",
    ]

    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *AGENT, QUESTION)
    assert rep.returncode == 0, rep.stderr[-3000:]
    assert rep.stdout == rec.stdout
    assert "2 of 2 model calls served from the recording, no divergence" in rep.stderr

    changed = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *AGENT, "What's the weather in Lyon?")
    assert changed.returncode != 0 and "diverged" in changed.stderr
