"""End to end: Claude Code compacting in a long session, recorded, then replayed strictly with no flags.

The scripted model (``BB-COMPACT`` in examples/claude_code_model.py) reports
995,000 input tokens on its first answer, near the 1M-token window of Claude
Code's default model. Claude Code compacts before its next call: it asks for a
summary of the conversation, then continues from the summary. The answers' token
counts are in the cassette and a replay reports them, so the replayed Claude Code
compacts at the same step, and the strict replay, three times over, is the run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_claude_code
from claude_code_model import CONTINUED, SUMMARY_ASKED
from fake_provider import FakeProvider
from test_claude_code import assert_same_run, record, replay

from blackbox_mitm.cassette import load_trace

pytestmark = pytest.mark.e2e

# Claude Code's fixtures (its binary, the fake provider with the scripted model, a working directory with notes.txt).
claude, provider, workdir = test_claude_code.claude, test_claude_code.provider, test_claude_code.workdir
PROMPT = "BB-COMPACT: what is the first line of notes.txt?"


def _texts(payload: dict[str, object]) -> str:
    return json.dumps(payload["messages"])


def test_claude_code_compacts_at_the_same_step_in_the_replay(claude: Path, provider: FakeProvider, workdir: Path, confdir: Path) -> None:
    cassette = workdir.parent / "compact.json"
    rec = record(cassette, PROMPT, cwd=workdir, provider=provider, confdir=confdir)
    assert rec.stdout.strip() == "After compacting: the first line of notes.txt is Blackbox notes."
    trace = load_trace(cassette)
    inputs = [s.payload for s in trace.steps if s.type == "model_input"]
    outputs = [s.payload for s in trace.steps if s.type == "model_output"]
    main = [n for n, p in enumerate(inputs) if "BB-COMPACT" in _texts(p)]
    asked = [n for n in main if SUMMARY_ASKED in _texts(inputs[n])]
    continued = [n for n in main if CONTINUED in _texts(inputs[n])]
    assert len(asked) == 1 and len(continued) == 1 and asked[0] < continued[0]  # it compacted once, then went on
    assert outputs[main[0]]["tokens"]["input"] == 995_000  # the usage that made it compact is in the cassette
    for _ in range(3):
        assert_same_run(replay(cassette, PROMPT, cwd=workdir, confdir=confdir), rec, len(inputs))
