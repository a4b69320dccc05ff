"""End to end: mini-swe-agent (pinned, its own venv) with its default cost tracking, recorded and replayed strictly.

mini-swe-agent asks litellm for each call's cost and treats a cost of zero as an
error (``cost_tracking: default``): a replay that reported zero usage would stop
it. The fake provider (chat completions) scripts one bash command and the
agent's submit command; the replay, offline with no flags, reports the recorded
token counts, so the agent's cost tracker computes the recording's cost and the
run ends as recorded. ``LITELLM_LOCAL_MODEL_COST_MAP`` keeps litellm on the
price table it ships (it would fetch one from the internet, which a test never
reaches).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import ROOT, blackbox, remote_args
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

# scripts/setup-streaming-clis installs it there; BLACKBOX_MINI_SWE_AGENT names another venv.
VENV = Path(os.environ.get("BLACKBOX_MINI_SWE_AGENT") or ROOT / ".venv-clis" / "mini-swe-agent")
MINI = VENV / "bin" / "mini"


def _script(work: Path) -> list[dict[str, object]]:
    """One bash command (the agent runs it where blackbox runs, so the path is absolute), then the submit command."""
    read = {"name": "bash", "arguments": {"command": f"cat {work / 'notes.txt'}"}}
    submit = {"name": "bash", "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}
    return [{"text": "Let me read the file.", "tool_calls": [read]}, {"text": "Done.", "tool_calls": [submit]}]


ZERO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    if not MINI.exists():
        pytest.fail(f"mini-swe-agent is not installed at {VENV}: scripts/setup-streaming-clis installs it")
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("hello notes\n")
    (tmp_path / "home").mkdir()
    return work


def _env(work: Path) -> dict[str, str]:
    return {"HOME": str(work.parent / "home"), "MSWEA_CONFIGURED": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def _command(work: Path) -> list[str]:
    return [str(MINI), "-y", "--exit-immediately", "-m", "openai/gpt-4o", "-t", "Print notes.txt", "-o", str(work / "traj.json")]


def _stats(work: Path) -> dict[str, float]:
    stats: dict[str, float] = json.loads((work / "traj.json").read_text())["info"]["model_stats"]
    return stats


def test_mini_swe_agent_records_and_replays_strictly_with_its_cost(work: Path, tmp_path: Path, confdir: Path) -> None:
    cassette = tmp_path / "mini.json"
    with FakeProvider(_script(work)) as provider:
        args = ["record", "-o", str(cassette), "--confdir", str(confdir), *remote_args(provider.url), "--", *_command(work)]
        rec = blackbox(*args, env=_env(work))
    assert rec.returncode == 0, rec.stderr[-3000:]
    recorded = _stats(work)
    assert recorded["api_calls"] == 2 and recorded["instance_cost"] > 0
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    assert all(s.payload["tokens"]["input"] > 0 for s in trace.steps if s.type == "model_output")
    assert "hello notes" in json.dumps([s.payload for s in trace.steps if s.type == "tool_result"])

    (work / "traj.json").unlink()
    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *_command(work), env={**_env(work), "OPENAI_API_KEY": ""})
    assert rep.returncode == 0, rep.stderr[-3000:]
    assert "2 of 2 model calls served from the recording, no divergence" in rep.stderr
    assert _stats(work) == recorded  # the same cost: the replay reported the recorded usage
    assert rep.stdout == rec.stdout


def test_without_usage_the_cost_tracker_stops_the_agent(work: Path) -> None:
    """The control: an answer reporting zero usage (what a replay gave before token counts were kept) stops it."""
    raw = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": ZERO_USAGE,
    }
    with FakeProvider([{"raw": raw}]) as provider:
        import subprocess

        env = {**os.environ, **_env(work), "OPENAI_API_KEY": "sk-test-0000", "OPENAI_API_BASE": provider.url + "/v1"}
        env = {k: v for k, v in env.items() if not k.lower().endswith("_proxy")}
        proc = subprocess.run(_command(work), cwd=work, env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert "Error calculating cost" in proc.stdout + proc.stderr
