"""End to end: forking a recorded run of an unmodified agent through a real proxy.

(The refusals decided before a proxy starts are CliRunner tests in tests/cli/test_fork_cli.py.)

The parent is the OpenAI weather agent asking about Paris:
0 model_input, 1 model_output (get_weather Paris), 2 tool_call, 3 tool_result,
4 model_input, 5 model_output (final answer), 6 metadata.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import EXAMPLES, blackbox, remote_args
from fake_provider import FakeProvider
from once import shared

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

AGENT = [sys.executable, str(EXAMPLES / "openai_weather_agent.py"), "What's the weather in Paris?"]
SUN = '{"forecast": "sun", "celsius": 24}'


@pytest.fixture(scope="module")
def parent(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> Path:
    def make(folder: Path) -> Path:
        cassette = folder / "parent.json"
        with FakeProvider() as provider:
            rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *remote_args(provider.url), "--", *AGENT)
        assert rec.returncode == 0, rec.stderr
        assert rec.stdout.strip() == "Paris: cloudy, 18°C."
        trace = load_trace(cassette)
        assert [s.type for s in trace.steps] == [
            "model_input",
            "model_output",
            "tool_call",
            "tool_result",
            "model_input",
            "model_output",
            "metadata",
        ]
        return cassette

    return shared(tmp_path_factory, "fork-parent", make)  # once a test session (tests/once.py)


def _fork(parent: Path, confdir: Path, out: Path, *args: str, provider: FakeProvider | None = None) -> subprocess.CompletedProcess[str]:
    remote = remote_args(provider.url) if provider is not None else []
    return blackbox("fork", str(parent), *args, "-o", str(out), "--confdir", str(confdir), *remote, "--", *AGENT)


def test_tool_result_fork_live_changes_what_the_model_sees(parent: Path, confdir: Path) -> None:
    child_path = parent.with_name("sunny-live.json")
    with FakeProvider() as provider:
        proc = _fork(parent, confdir, child_path, "--at", "3", "--tool-result", SUN, provider=provider)
        assert proc.returncode == 0, proc.stderr
        # Only the call after the cut went upstream, and it carried the replacement, not the agent's own result.
        assert len(provider.requests) == 1
        tool_message = provider.requests[0]["body"]["messages"][-1]
        assert tool_message["role"] == "tool" and json.loads(tool_message["content"]) == {"forecast": "sun", "celsius": 24}
    assert proc.stdout.strip() == "Paris: sun, 24°C."

    p, c = load_trace(parent), load_trace(child_path)
    assert verify_trace(c) == []
    assert c.parentId == p.id and c.forkedFromStepId == p.steps[3].id
    assert [s.hash for s in c.steps[:3]] == [s.hash for s in p.steps[:3]]
    assert [s.timestamp for s in c.steps[:3]] == [s.timestamp for s in p.steps[:3]]
    assert c.steps[3].type == "tool_result"
    assert c.steps[3].payload == {"toolCallId": "call-0", "toolName": "get_weather", "result": '{"forecast":"sun","celsius":24}'}
    assert c.steps[3].timestamp == p.steps[3].timestamp
    assert c.steps[-1].payload == {"event": "run_completed", "status": "success", "result": "Paris: sun, 24°C."}

    diff = blackbox("diff", str(parent), str(child_path), "--json")
    assert diff.returncode == 1
    assert orjson.loads(diff.stdout)["firstDivergence"]["index"] == 3


def test_tool_result_fork_with_a_script_needs_no_provider(parent: Path, confdir: Path, tmp_path: Path) -> None:
    script = tmp_path / "answers.json"
    script.write_text(json.dumps([{"type": "final_answer", "text": "Sunny, 24°C in Paris: a scripted answer."}]))
    child_path = parent.with_name("sunny-script.json")
    proc = _fork(parent, confdir, child_path, "--at", "3", "--tool-result", SUN, "--script", str(script))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Sunny, 24°C in Paris: a scripted answer."
    child = load_trace(child_path)
    assert verify_trace(child) == []
    assert child.steps[5].payload == {"type": "final_answer", "text": "Sunny, 24°C in Paris: a scripted answer."}
    # The model_input after the cut shows what the model was asked: the replacement result.
    results = [
        p for m in child.steps[4].payload["messages"] if isinstance(m["content"], list) for p in m["content"] if p["type"] == "tool_result"
    ]
    assert json.loads(results[0]["result"]) == {"forecast": "sun", "celsius": 24}


def test_script_running_out_is_a_clear_error(parent: Path, confdir: Path, tmp_path: Path) -> None:
    script = tmp_path / "empty.json"
    script.write_text("[]")
    proc = _fork(parent, confdir, tmp_path / "child.json", "--at", "3", "--tool-result", SUN, "--script", str(script))
    assert proc.returncode != 0
    assert "script of answers ran out" in proc.stdout + proc.stderr


def test_response_fork_serves_the_edited_answer(parent: Path, confdir: Path, tmp_path: Path) -> None:
    child_path = tmp_path / "edited.json"
    edit = json.dumps({"content": "It is snowing in Paris (edited)."})  # an OpenAI assistant message shape
    proc = _fork(parent, confdir, child_path, "--at", "5", "--response", edit)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "It is snowing in Paris (edited)."
    p, c = load_trace(parent), load_trace(child_path)
    assert verify_trace(c) == []
    assert [s.hash for s in c.steps[:5]] == [s.hash for s in p.steps[:5]]
    assert c.steps[5].payload == {"type": "final_answer", "text": "It is snowing in Paris (edited)."}
    assert c.steps[5].timestamp == p.steps[5].timestamp
    diff = blackbox("diff", str(parent), str(child_path), "--json")
    assert orjson.loads(diff.stdout)["firstDivergence"]["index"] == 5
    assert orjson.loads(diff.stdout)["firstDivergence"]["kind"] == "decision"


def test_rewind_replays_the_prefix_then_goes_live(parent: Path, confdir: Path, tmp_path: Path) -> None:
    child_path = tmp_path / "rewound.json"
    with FakeProvider() as provider:
        proc = _fork(parent, confdir, child_path, "--live-after", "1", provider=provider)
        assert proc.returncode == 0, proc.stderr
        assert len(provider.requests) == 1  # the first call was answered from the recording
    assert proc.stdout.strip() == "Paris: cloudy, 18°C."
    p, c = load_trace(parent), load_trace(child_path)
    assert verify_trace(c) == []
    assert [s.hash for s in c.steps[:2]] == [s.hash for s in p.steps[:2]]
    assert [s.type for s in c.steps] == [s.type for s in p.steps]
    assert c.forkedFromStepId == p.steps[2].id


def test_a_prefix_that_does_not_re_run_as_recorded_writes_no_child(parent: Path, confdir: Path, tmp_path: Path) -> None:
    child_path = tmp_path / "never.json"
    agent = [sys.executable, str(EXAMPLES / "openai_weather_agent.py"), "What's the weather in Lyon?"]
    proc = blackbox("fork", str(parent), "--at", "3", "--tool-result", SUN, "-o", str(child_path), "--confdir", str(confdir), "--", *agent)
    assert proc.returncode != 0
    assert "content differs at character 22" in proc.stderr
    assert not child_path.exists()


def test_forks_lists_both_forks_newest_first(parent: Path, confdir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    p = folder / "parent.json"
    p.write_bytes(parent.read_bytes())
    script = tmp_path / "answers.json"
    script.write_text(json.dumps([{"type": "final_answer", "text": "scripted sun"}]))
    first = _fork(p, confdir, folder / "a.json", "--at", "3", "--tool-result", SUN, "--script", str(script))
    assert first.returncode == 0, first.stderr
    second = _fork(p, confdir, folder / "b.json", "--at", "5", "--response", '{"type": "final_answer", "text": "edited"}')
    assert second.returncode == 0, second.stderr
    (folder / "unrelated.json").write_text('{"name": "not a cassette"}')
    (folder / "old.json").write_text('{"version": 1, "id": "x", "createdAt": 0, "steps": []}')

    listing = blackbox("forks", str(p), "--json")
    assert listing.returncode == 0, listing.stderr
    data = orjson.loads(listing.stdout)
    assert [f["file"].rsplit("/", 1)[-1] for f in data["forks"]] == ["b.json", "a.json"]
    b, a = data["forks"]
    assert (a["fork_step"], a["first_divergence"]["index"], a["diverged_before_cut"]) == (3, 3, False)
    assert (b["fork_step"], b["first_divergence"]["index"], b["first_divergence"]["kind"]) == (5, 5, "decision")
    assert a["outcome"] == "completed" and a["delta"]["steps"] == 0
    assert [s["file"].rsplit("/", 1)[-1] for s in data["skipped"]] == ["old.json"]  # a cassette it cannot read, named
    text = blackbox("forks", str(p))
    assert "cut at step 3" in text.stdout and "cut at step 5" in text.stdout


def test_an_agent_that_never_reaches_the_cut_writes_no_child(parent: Path, confdir: Path, tmp_path: Path) -> None:
    child_path = tmp_path / "never.json"
    proc = blackbox("fork", str(parent), "--at", "3", "--tool-result", SUN, "-o", str(child_path), "--confdir", str(confdir), "--", "true")
    assert proc.returncode == 1
    assert "stopped before re-running" in proc.stderr
    assert not child_path.exists()
