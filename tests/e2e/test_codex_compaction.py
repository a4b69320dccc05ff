"""End to end: a long Codex CLI session that auto-compacts, recorded and replayed strictly through a real proxy.

The fake Responses API (examples/fake_responses_ws.py) reports usage past the
limit Codex is given (``model_auto_compact_token_limit``): after its first shell
command Codex sends its whole history with a ``compaction_trigger`` item; the
fake answers one ``compaction`` item (opaque ``encrypted_content``), and Codex
goes on from the compacted history (its context, the user's message, that item).
The recording keeps the trigger, the compaction and the token counts; the replay
(the fake stopped, no flags) serves the same usage, so Codex compacts at the same
step, sends the same compacted history, and the strict replay passes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_responses_ws import FakeResponsesWs
from test_codex import CODEX, KEY, TRANSPORTS, Codex, _blackbox, _to_the_fake

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

BLOB = "gAAAAABp-the-compacted-history-as-the-provider-encrypts-it=="
PROMPT = "Run echo one, then echo two, and tell me what they printed."
LIMIT = ["-c", "model_auto_compact_token_limit=8000"]


def _exec(cmd: str, n_in: int) -> dict[str, Any]:
    code = f'const r = await tools.exec_command({{cmd: "{cmd}", login: false}});\ntext(r.output);'
    return {"custom_tool": "exec", "input": code, "usage": {"input": n_in, "output": 500}}


# The first answer reports 9,500 tokens (past the 8,000 limit): Codex compacts before it goes on.
SCRIPT: list[dict[str, Any]] = [
    _exec("echo one", 9000),
    {"compaction": BLOB, "usage": {"input": 9600, "output": 300}},
    _exec("echo two", 1200),
    {"text": "They printed one and two.", "usage": {"input": 1400, "output": 12}},
]


def _command(codex: Codex, transport: str) -> list[str]:
    return [str(CODEX), "exec", "--skip-git-repo-check", "--ephemeral", "-C", str(codex.work), *TRANSPORTS[transport], *LIMIT, PROMPT]


def _kinds(call: dict[str, Any]) -> list[str]:
    return [str(item.get("type") or "message") for item in call["body"]["input"]]


@pytest.mark.parametrize("transport", ["https", "websocket"])
def test_an_auto_compacting_codex_session_records_and_replays_strictly(transport: str, tmp_path: Path, confdir: Path) -> None:
    codex = Codex(tmp_path, confdir)
    cassette = tmp_path / "long.json"
    with FakeResponsesWs(SCRIPT) as fake:
        args = ["record", "-o", str(cassette), "--confdir", str(confdir), *_to_the_fake(fake)]
        rec = _blackbox(*args, "--", *_command(codex, transport), env={**codex.env, "OPENAI_API_KEY": KEY})
        calls = [r for r in fake.requests if r["call"]]
    assert rec.returncode == 0, rec.stderr[-3000:]
    assert rec.stdout.strip().endswith("They printed one and two.")
    assert len(calls) == 4
    assert _kinds(calls[1])[-1] == "compaction_trigger"  # Codex compacted after the first answer
    assert "compaction" in _kinds(calls[2]) and "custom_tool_call" not in _kinds(calls[2])  # and went on from the compacted history

    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    inputs = [s.payload for s in trace.steps if s.type == "model_input"]
    outputs = [s.payload for s in trace.steps if s.type == "model_output"]
    assert inputs[1]["messages"][-1] == {"role": "user", "content": [{"type": "compaction_trigger"}]}
    assert outputs[1]["compaction"] == {"type": "compaction", "data": BLOB}
    assert outputs[1]["tokens"] == {"input": 9600, "output": 300}
    assert {"type": "compaction", "data": BLOB} in json.loads(json.dumps(inputs[2]["messages"]))[-1]["content"]
    assert b"cmp_" not in cassette.read_bytes()  # the provider's item id is not kept

    shown = _blackbox("show", str(cassette))
    assert "compacted the conversation" in shown.stdout

    rep = _blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *_command(codex, transport), env=codex.env)
    assert rep.returncode == 0, rep.stderr[-3000:]
    assert rep.stdout == rec.stdout


def test_without_the_recorded_usage_codex_would_not_compact(tmp_path: Path, confdir: Path) -> None:
    """The control: the same session with small usage never sends a compaction_trigger (what the replay relies on)."""
    codex = Codex(tmp_path, confdir)
    small = [{k: v for k, v in answer.items() if k != "usage"} for answer in SCRIPT if "compaction" not in answer]
    with FakeResponsesWs(small) as fake:
        args = ["record", "-o", str(tmp_path / "short.json"), "--confdir", str(confdir), *_to_the_fake(fake)]
        rec = _blackbox(*args, "--", *_command(codex, "https"), env={**codex.env, "OPENAI_API_KEY": KEY})
        calls = [r for r in fake.requests if r["call"]]
    assert rec.returncode == 0, rec.stderr[-3000:]
    assert len(calls) == 3 and all("compaction_trigger" not in _kinds(c) for c in calls)
