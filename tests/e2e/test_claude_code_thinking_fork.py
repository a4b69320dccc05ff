"""End to end: ``blackbox fork … --live`` after a Claude Code turn with extended thinking, against a provider that checks it.

The fake Anthropic provider answers with ``respond_checking_thinking``
(examples/claude_code_model.py): like Anthropic with thinking on, it rejects a
history whose tool-use turn does not start with its signed thinking block
(400 ``Expected `thinking` or `redacted_thinking`, but found `tool_use```), and a
signature it never made. Claude Code (``BB-THINK``) thinks, reads notes.txt,
thinks and answers. The fork cuts at the Read's result with another text and
goes live: the turn before the cut is served from the cassette, and Claude Code
sends it back upstream with the recorded thinking block and signature, so a
new provider instance accepts the continued conversation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import test_claude_code
from claude_code_model import respond_checking_thinking, thinking_error
from conftest import remote_args
from fake_provider import FakeProvider
from test_claude_code import CLAUDE, record, run

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

claude, workdir = test_claude_code.claude, test_claude_code.workdir  # Claude Code's fixtures
PROMPT = "BB-THINK: what is the first line of notes.txt?"
EDITED = "     1\tForked notes\n     2\tsecond line\n"


def test_the_fake_rejects_a_tool_use_turn_without_its_signed_thinking() -> None:
    """The control: what the fork below must not send (a turn stripped of its thinking, or a forged signature)."""
    tool_use = {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {}}
    bare: dict[str, Any] = {
        "thinking": {"type": "adaptive"},
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [tool_use]}],
    }
    assert "Expected `thinking` or `redacted_thinking`, but found `tool_use`" in str(thinking_error(bare))
    forged = {"type": "thinking", "thinking": "x", "signature": "Eq" + "0" * 40}
    bare["messages"][1]["content"] = [forged, tool_use]
    assert "Invalid `signature`" in str(thinking_error(bare))


def test_fork_live_after_a_thinking_turn_is_accepted_by_a_provider_that_checks_thinking(claude: Path, workdir: Path, confdir: Path) -> None:
    parent = workdir.parent / "think.json"
    with FakeProvider(responder=respond_checking_thinking) as provider:
        rec = record(parent, PROMPT, cwd=workdir, provider=provider, confdir=confdir)
    assert rec.stdout.strip() == "The first line of notes.txt is: Blackbox notes"
    trace = load_trace(parent)
    steps = [s.type for s in trace.steps]
    cut = steps.index("tool_result")
    first_answer = trace.steps[steps.index("model_output")].payload
    assert first_answer["reasoning"][0]["signature"].startswith("Eq")  # the signed thinking was kept with the answer

    child = workdir.parent / "think-fork.json"
    with FakeProvider(responder=respond_checking_thinking) as upstream:  # another instance: it knows only the key
        args = ["fork", str(parent), "--at", str(cut), "--tool-result", json.dumps(EDITED), "--live", "-o", str(child)]
        forked = run([*args, "--confdir", str(confdir), *remote_args(upstream.url), "--", str(CLAUDE), "-p", PROMPT], cwd=workdir)
        live = [r["body"] for r in upstream.requests if "BB-THINK" in json.dumps(r.get("body"))]
    assert forked.returncode == 0, forked.stderr[-3000:]
    assert forked.stdout.strip() == "The first line of notes.txt is: Forked notes"
    assert live, "the call after the cut went upstream"
    assert live[0]["thinking"]["type"] in ("adaptive", "enabled")  # thinking on: the provider checks the history
    turn = next(m for m in live[0]["messages"] if m["role"] == "assistant")
    assert turn["content"][0] == {
        "type": "thinking",
        "thinking": "The user wants the first line: read the file.",
        "signature": first_answer["reasoning"][0]["signature"],
    }
    assert verify_trace(load_trace(child)) == []
