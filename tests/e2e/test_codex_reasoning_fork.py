"""End to end: Codex's reasoning items (``encrypted_content``) kept, and sent back by a ``fork --live`` to a provider that demands them.

The fake Responses API answers Codex's first call with a reasoning item and the
``exec`` call, and (``demand_reasoning``) refuses, as OpenAI does for a reasoning
model with ``store: false``, a call item sent back without the reasoning item it
came with. The fork cuts at the command's result with another output and goes
live against a new fake that knows the same reasoning: the turn before the cut
is served from the cassette with the recorded reasoning, Codex sends it back,
and the provider accepts the continued conversation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_responses_ws import FakeResponsesWs, missing_reasoning
from test_codex import KEY, SCRIPT, Codex, _blackbox, _to_the_fake

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

BLOB = "gAAAAABp-codex-reasoning-encrypted-by-the-provider=="
THINKING: list[dict[str, Any]] = [{**SCRIPT[0], "reasoning": BLOB}, SCRIPT[1]]


def test_the_fake_refuses_a_call_sent_back_without_its_reasoning() -> None:
    call = {"type": "custom_tool_call", "id": "ctc_0", "call_id": "call_0", "name": "exec", "input": "ls"}
    assert "without its required 'reasoning' item" in str(missing_reasoning({"input": [call]}, {BLOB}))
    assert missing_reasoning({"input": [{"type": "reasoning", "encrypted_content": BLOB}, call]}, {BLOB}) is None


def test_fork_live_sends_the_recorded_reasoning_back_and_the_provider_accepts_it(tmp_path: Path, confdir: Path) -> None:
    codex = Codex(tmp_path, confdir)
    parent = tmp_path / "run.json"
    with FakeResponsesWs(THINKING, demand_reasoning={BLOB}) as fake:
        args = ["record", "-o", str(parent), "--confdir", str(confdir), *_to_the_fake(fake)]
        rec = _blackbox(*args, "--", *codex.command("https"), env={**codex.env, "OPENAI_API_KEY": KEY})
    assert rec.returncode == 0, rec.stderr[-3000:]
    trace = load_trace(parent)
    answer = next(s.payload for s in trace.steps if s.type == "model_output")
    assert answer["reasoning"] == [{"type": "thinking", "signature": BLOB}]
    cut = [s.type for s in trace.steps].index("tool_result")

    child = tmp_path / "fork.json"
    edit = json.dumps("Script completed\nOutput:\nsomething-else\n")
    with FakeResponsesWs([{"text": "It printed something-else."}], demand_reasoning={BLOB}) as upstream:
        args = ["fork", str(parent), "--at", str(cut), "--tool-result", edit, "--live", "-o", str(child), "--confdir", str(confdir)]
        forked = _blackbox(*args, *_to_the_fake(upstream), "--", *codex.command("https"), env={**codex.env, "OPENAI_API_KEY": KEY})
        live = [r["body"] for r in upstream.requests if r["call"]]
    assert forked.returncode == 0, forked.stderr[-3000:]
    assert forked.stdout.strip().endswith("It printed something-else.")
    [request] = live
    kinds = [item.get("type") for item in request["input"]]
    at = kinds.index("custom_tool_call")
    assert request["input"][at - 1]["type"] == "reasoning" and request["input"][at - 1]["encrypted_content"] == BLOB
    assert "something-else" in json.dumps(request["input"][-1])
    assert verify_trace(load_trace(child)) == []
