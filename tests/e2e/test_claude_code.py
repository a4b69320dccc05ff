"""End to end: Claude Code itself (npm @anthropic-ai/claude-code, pinned) recorded, then replayed strictly with no flags.

Claude Code runs with its default settings: a fresh HOME (so no user settings),
a fake ANTHROPIC_API_KEY, and the proxy and CA variables ``blackbox`` sets —
nothing else (no telemetry or traffic switches). Its model calls go to the fake
provider on 127.0.0.1, scripted by ``examples/claude_code_model.py`` to make it
use its tools; its other traffic to api.anthropic.com (settings, policy limits,
event logging, bootstrap) is passed through while recording and answered with a
provider-shaped 404 in replay.

What has to hold, from the issue: the built-in masks (the billing line, agent
ids, the subagents' usage) and tool results in call order make every replay
strict and flag-free; with background subagents, ``--pace recorded`` keeps
when they finish, so ten replays out of ten are the recording. Background
subagents the provider answers within milliseconds of each other end, in a
replay with no flags, in the order the recording completed them
(``session/release.py``), strict or ``--match sequence``; a subagent that ended
while the main loop's turn reporting the other was still being answered ends,
in a replay, only once that turn was asked (happens-before). The tool-use ids
Claude Code writes into its notifications are ``call-N`` in the cassette.

And Claude Code with ``blackbox mcp`` registered as its docs say (``claude mcp
add blackbox -- blackbox mcp``): the model calls ``mcp__blackbox__list_forks``,
the answer carries the listing, and that MCP tool round replays strictly offline.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from claude_code_model import respond
from conftest import ROOT, remote_args
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_file, verify_trace
from blackbox_mitm.matcher.recorded import recorded_calls_of
from blackbox_mitm.session.release import ReleaseOrder, overlaps

sys.path.insert(0, str(ROOT / "tests" / "mcp_server"))  # the blackbox mcp tests' runs (a parent and its two forks)

pytestmark = pytest.mark.e2e

CLAUDE = ROOT / "tests" / "e2e" / "clients" / "claude-code" / "node_modules" / ".bin" / "claude"
NOTES = "Blackbox notes\nsecond line\n"
EXTRA_ENV: dict[str, str] = {}  # a test's own additions to Claude Code's environment (monkeypatched)


@pytest.fixture(scope="module")
def claude() -> Path:
    if not CLAUDE.exists():
        pytest.fail(f"Claude Code is not installed at {CLAUDE}; scripts/setup installs it (npm ci in tests/e2e/clients/claude-code)")
    return CLAUDE


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    with FakeProvider(responder=respond) as p:
        yield p


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text(NOTES)
    (tmp_path / "home").mkdir()
    return work


def claude_env(cwd: Path) -> dict[str, str]:
    """What a user must set to run Claude Code offline in ``cwd``: a HOME and a (fake) key."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and not k.startswith(("CLAUDE", "ANTHROPIC"))}
    env.update(EXTRA_ENV)
    env["HOME"] = str(cwd.parent / "home")
    env["ANTHROPIC_API_KEY"] = "sk-ant-test-not-a-real-key-0000"
    env["BLACKBOX_CONFIG"] = ""  # no project config: the defaults (tests/e2e/test_masks_e2e.py tests the config)
    return env


def run(args: list[str], *, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``blackbox ARGS`` in ``cwd``, with ``claude_env``."""
    env = claude_env(cwd)
    return subprocess.run([sys.executable, "-m", "blackbox_mitm", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def record(
    cassette: Path, prompt: str, *claude_args: str, cwd: Path, provider: FakeProvider, confdir: Path
) -> subprocess.CompletedProcess[str]:
    proc = run(
        [
            *("record", "-o", str(cassette), "--confdir", str(confdir), "-v", *remote_args(provider.url)),
            *("--", str(CLAUDE), "-p", prompt, *claude_args),
        ],
        cwd=cwd,
    )
    assert proc.returncode == 0, proc.stderr
    assert verify_trace(load_trace(cassette)) == []
    return proc


def replay(
    cassette: Path, prompt: str, *flags: str, cwd: Path, confdir: Path, claude_args: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return run(["replay", str(cassette), "--confdir", str(confdir), "-v", *flags, "--", str(CLAUDE), "-p", prompt, *claude_args], cwd=cwd)


def assert_same_run(proc: subprocess.CompletedProcess[str], recorded: subprocess.CompletedProcess[str], calls: int) -> None:
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == recorded.stdout
    assert f"{calls} of {calls} model calls served from the recording, no divergence" in proc.stderr
    assert "offline: refused" not in proc.stderr  # Claude Code talked to no host but the provider's


def test_claude_code_with_its_defaults_replays_strictly_with_no_flags(
    claude: Path, provider: FakeProvider, workdir: Path, confdir: Path
) -> None:
    cassette = workdir.parent / "read.json"
    prompt = "BB-READ: what is the first line of notes.txt?"
    rec = record(cassette, prompt, cwd=workdir, provider=provider, confdir=confdir)
    assert rec.stdout.strip() == "The first line of notes.txt is: Blackbox notes"
    # Its other traffic went through and was noted, not recorded.
    assert "passed through non-model endpoint GET api.anthropic.com/api/claude_code/settings" in rec.stderr
    assert "/api/event_logging/" in rec.stderr
    trace = load_trace(cassette)
    system = trace.steps[0].payload["systemPrompt"]
    assert "cch=" in system and "cc_prompt_id=" in system  # the cassette keeps what was sent: masks only change what is compared
    assert [s.type for s in trace.steps] == [
        "model_input",
        "model_output",
        "tool_call",
        "tool_result",
        "model_input",
        "model_output",
        "metadata",
    ]
    for _ in range(3):
        rep = replay(cassette, prompt, cwd=workdir, confdir=confdir)
        assert_same_run(rep, rec, 2)
        assert "answered from the recording: non-model endpoint GET api.anthropic.com/api/claude_code/settings" in rep.stderr
    # Without the built-in masks the billing line alone makes it diverge, at the system prompt.
    bare = replay(cassette, prompt, "--no-default-masks", cwd=workdir, confdir=confdir)
    assert bare.returncode != 0
    assert "system prompt differs" in bare.stderr and "cch=" in bare.stderr


def test_two_parallel_foreground_subagents_and_a_read(claude: Path, provider: FakeProvider, workdir: Path, confdir: Path) -> None:
    cassette = workdir.parent / "agents.json"
    prompt = "BB-AGENTS: count the letters of two words with two agents and read notes.txt"
    rec = record(cassette, prompt, cwd=workdir, provider=provider, confdir=confdir)
    assert rec.stdout.strip() == "Done. The word alpha has 5 letters. The word beta has 4 letters."
    trace = load_trace(cassette)
    answer = next(s for s in trace.steps if s.type == "model_output" and s.payload.get("type") == "tool_calls")
    assert [c["toolName"] for c in answer.payload["calls"]] == ["Agent", "Agent", "Read"]
    # The tool results are recorded in call order, as steps and in the next request, whatever order they finished in.
    results = [s.payload["toolCallId"] for s in trace.steps if s.type == "tool_result"]
    assert results == [c["toolCallId"] for c in answer.payload["calls"]]
    last = [s for s in trace.steps if s.type == "model_input"][-1].payload["messages"][-1]["content"]
    assert [p["toolCallId"] for p in last if p["type"] == "tool_result"] == results
    assert any("agentId: a" in str(p.get("result")) for p in last)  # the random ids are in the cassette, masked only when compared
    for _ in range(3):
        assert_same_run(replay(cassette, prompt, cwd=workdir, confdir=confdir), rec, 4)


def test_background_subagents_replay_with_the_recorded_pace_ten_times_in_ten(
    claude: Path, provider: FakeProvider, workdir: Path, confdir: Path
) -> None:
    cassette = workdir.parent / "background.json"
    prompt = "BB-BACKGROUND: count the letters of two words with two background agents"
    rec = record(cassette, prompt, cwd=workdir, provider=provider, confdir=confdir)
    assert "Both agents finished" in rec.stdout
    calls = sum(1 for s in load_trace(cassette).steps if s.type == "model_input")
    assert calls == 6  # the launch, "waiting", two subagents, and one notification of each finishing
    for _ in range(10):
        assert_same_run(replay(cassette, prompt, "--pace", "recorded", cwd=workdir, confdir=confdir), rec, calls)
    # Without --pace their ends are only the order gap apart (they overlapped), not 1.3 s: whether Claude Code then
    # reports them in one turn or two is its own race, so the recorded pace is what this run needs.


def test_claude_code_calls_blackbox_mcp_list_forks_and_the_round_replays_strictly(
    claude: Path, provider: FakeProvider, workdir: Path, confdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_runs import make_folder

    # Claude Code -p sends its first request while MCP servers may still be starting, and then tells the model
    # which servers are "still connecting" instead of their tools: a race that would make the first request differ
    # between record and replay. This pinned version waits for them up to CLAUDE_CODE_MCP_STARTUP_WAIT_MS.
    monkeypatch.setitem(EXTRA_ENV, "CLAUDE_CODE_MCP_STARTUP_WAIT_MS", "60000")

    make_folder(workdir)  # workdir/runs: weather.json, its forks sunny.json (cut at 3) and snowy.json (cut at 5), ...
    blackbox = Path(sys.executable).parent / "blackbox"
    added = subprocess.run(
        [str(claude), "mcp", "add", "blackbox", "--", str(blackbox), "mcp"],  # as docs/mcp.md says, in the isolated HOME
        cwd=workdir,
        env=claude_env(workdir),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert added.returncode == 0, added.stderr + added.stdout
    cassette = workdir.parent / "forks.json"
    prompt = "BB-FORKS: which forks does runs/weather.json have, and where did each part from it?"
    allow = ("--allowedTools", "mcp__blackbox__list_forks")
    rec = record(cassette, prompt, *allow, cwd=workdir, provider=provider, confdir=confdir)
    # The answer carries what the tool returned: each fork, its cut and its first divergence.
    assert rec.stdout.startswith("The forks of runs/weather.json, as blackbox lists them:"), rec.stdout + rec.stderr
    for line in (
        "fork snowy-1 (runs/snowy.json)",
        "cut at step 5; completed; 7 steps",
        "fork sunny-1 (runs/sunny.json)",
        "cut at step 3; completed; 7 steps",
        "first divergence: step 3 (input): step 3 (tool_result get_weather): different input: payload.result.celsius differs: 12 in a, 24 in b",
        "first divergence: step 3 (input): step 3 (tool_result get_weather): different input: payload.result.celsius differs: 12 in a, -2 in b",
    ):
        assert line in rec.stdout, rec.stdout
    trace = load_trace(cassette)
    announced = json.dumps(trace.steps[0].payload)  # Claude Code lists the server's tools to the model (as deferred tools)
    for name in ("list_runs", "show_run", "list_forks", "diff_runs", "verify_run", "replay_report"):
        assert f"mcp__blackbox__{name}" in announced
    call = next(s for s in trace.steps if s.type == "tool_call")
    assert call.payload["toolName"] == "mcp__blackbox__list_forks" and call.payload["toolInput"] == {"run": "runs/weather.json"}
    result = str(next(s for s in trace.steps if s.type == "tool_result").payload["result"])
    assert "BEGIN UNTRUSTED DATA" in result and "cut at step 3" in result  # the tool's answer, fenced, as the model saw it
    assert sum(1 for s in trace.steps if s.type == "model_input") == 2
    # Replayed strictly and offline: Claude Code starts `blackbox mcp` again, which says the same.
    assert_same_run(replay(cassette, prompt, cwd=workdir, confdir=confdir, claude_args=allow), rec, 2)


def test_a_subagent_ends_only_after_the_turn_that_reported_the_one_before(
    claude: Path, provider: FakeProvider, workdir: Path, confdir: Path
) -> None:
    cassette = workdir.parent / "behind.json"
    prompt = "BB-BEHIND: count the letters of two words with two background agents"
    rec = record(cassette, prompt, cwd=workdir, provider=provider, confdir=confdir)
    assert "Both agents finished" in rec.stdout
    calls = recorded_calls_of(load_trace(cassette))
    beta = next(c for c in calls if "BB-SUB beta" in str(c.input["messages"][0]["content"]))
    turn = next(c for c in calls if "Count alpha" in str(c.input["messages"][-1]["content"]) and c.number > beta.number)
    # The turn reporting alpha arrived before beta's answer completed and was answered after it: a gate, not a
    # predecessor. Without the gate beta ends an order gap after alpha and Claude Code reports both in one turn.
    assert turn.input_timestamp is not None and turn.input_timestamp < beta.timestamp
    order = ReleaseOrder(calls)
    assert order.arrivals.index(turn.number) < order.gates[beta.number]
    assert "toolu_" not in cassette.read_text()
    for _ in range(3):  # by hand: 14 of 14 (before the gates: 0 of 4, both ends reported in one turn)
        assert_same_run(replay(cassette, prompt, cwd=workdir, confdir=confdir), rec, len(calls))


def replay_once_more_on_a_split_turn(cassette: Path, prompt: str, *, cwd: Path, confdir: Path) -> subprocess.CompletedProcess[str]:
    """A strict replay, and a second one only when the first missed in the one way docs/replay-and-divergence.md
    says no release schedule rules out: Claude Code began its next turn between two subagent ends released an order
    gap apart, so that turn names fewer task notifications than the recorded one (measured 19 to 20 of 20 identical
    on a loaded machine). Any other difference fails at once; two misses in a row fail too."""
    first = replay(cassette, prompt, cwd=cwd, confdir=confdir)
    split = "</task-notification>" in first.stderr and "content differs" in first.stderr
    if first.returncode == 0 or not split:
        return first
    return replay(cassette, prompt, cwd=cwd, confdir=confdir)


# Two and three subagents (three: one record and one strict replay). By hand (docs/replay-and-divergence.md), at load
# 7 to 10 on 2 cores, with the settle and the 1 s quoted-order window: 10 of 10 strict and 10 of 10 sequence each.
@pytest.mark.parametrize("agents", [2, 3])
def test_background_subagents_answered_together_end_in_the_recorded_order(
    agents: int, claude: Path, provider: FakeProvider, workdir: Path, confdir: Path
) -> None:
    cassette = workdir.parent / f"together-{agents}.json"
    prompt = f"BB-TOGETHER-{agents}: count the letters of {agents} words with {agents} background agents"
    rec = record(cassette, prompt, cwd=workdir, provider=provider, confdir=confdir)
    assert "All agents finished, in this order:" in rec.stdout  # the order Claude Code saw them finish in
    calls = recorded_calls_of(load_trace(cassette))
    subagents = [c for c in calls if "BB-SUB" in str(c.input["messages"][0]["content"])]
    assert len(subagents) == agents
    # The provider sent the answers milliseconds apart (TOGETHER_SPACING_MS); the cassette says the calls overlapped.
    later = {c.number for c in subagents[1:]}
    assert later <= set(overlaps(calls))
    # Claude Code wrote each Agent call's id into its notifications (<tool-use-id>): the cassette holds call-N there.
    text = cassette.read_text()
    assert "toolu_" not in text
    assert text.count("<tool-use-id>call-") == agents
    assert_same_run(replay_once_more_on_a_split_turn(cassette, prompt, cwd=workdir, confdir=confdir), rec, len(calls))
    if agents == 2:  # three: one record and one strict replay (each Claude Code session costs seconds of CPU)
        assert_same_run(replay(cassette, prompt, "--match", "sequence", cwd=workdir, confdir=confdir), rec, len(calls))


# A 1x1 PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360606060000000050001a5f645400000000049454e44ae426082"
)


# A one-page PDF, written by hand (the smallest a PDF reader accepts).
PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
    b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 72 72]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)


def test_claude_code_reads_a_png_and_a_pdf_and_thinks_recorded_and_replayed_strictly(
    claude: Path, provider: FakeProvider, workdir: Path, confdir: Path
) -> None:
    """The issue's "reads a PNG or a PDF" session: recorded (the image and the PDF by digest, the thinking with its
    signature, the token counts), verified, and replayed strictly offline with no flags."""
    import hashlib

    (workdir / "img.png").write_bytes(PNG)
    (workdir / "doc.pdf").write_bytes(PDF)
    cassette = workdir.parent / "image.json"
    prompt = "BB-IMAGE: what is in img.png and doc.pdf?"
    rec = record(cassette, prompt, cwd=workdir, provider=provider, confdir=confdir)
    trace = load_trace(cassette)
    results = [s.payload for s in trace.steps if s.type == "tool_result"]
    assert rec.stdout.strip() == "The Read results held: image, document+text."
    [image] = [p for p in results[0]["result"] if p["type"] == "image"]
    [pdf] = [p for p in results[1]["result"] if p["type"] == "document"]
    assert pdf == {"type": "document", "mediaType": "application/pdf", "sha256": hashlib.sha256(PDF).hexdigest(), "size": len(PDF)}
    assert image == {"type": "image", "mediaType": "image/png", "sha256": hashlib.sha256(PNG).hexdigest(), "size": len(PNG)}
    # The bytes: once each in the run's media file (every later request re-sends both), sealed and verified.
    from blackbox_mitm.cassette.media import load_media, media_path

    document = load_media(cassette, trace)
    assert document is not None and sorted(document["media"]) == sorted(hashlib.sha256(b).hexdigest() for b in (PNG, PDF))
    assert base64.b64decode(document["media"][hashlib.sha256(PDF).hexdigest()]["data"]) == PDF
    side = media_path(cassette).read_bytes()
    assert side.count(base64.b64encode(PNG)) == 1 and side.count(base64.b64encode(PDF)) == 1
    assert verify_file(cassette).ok
    answers = [s.payload for s in trace.steps if s.type == "model_output" and "reasoning" in s.payload]
    assert answers and all(a["reasoning"][0]["signature"].startswith("Eq") for a in answers)
    assert all(s.payload.get("tokens", {}).get("input", 0) > 0 for s in trace.steps if s.type == "model_output")
    rep = replay(cassette, prompt, cwd=workdir, confdir=confdir)
    calls = sum(1 for s in trace.steps if s.type == "model_input")
    assert_same_run(rep, rec, calls)
    # Another picture is another digest: the strict replay diverges at the tool result.
    (workdir / "img.png").write_bytes(PNG[:-12] + bytes(12))
    other = replay(cassette, prompt, cwd=workdir, confdir=confdir)
    assert other.returncode != 0 and "diverged" in other.stderr


def test_claude_code_tool_search_round_records_tool_references_and_replays_strictly(
    claude: Path, provider: FakeProvider, workdir: Path, confdir: Path
) -> None:
    """ToolSearch answers with tool_reference blocks: recorded as neutral parts (no refusal), replayed strictly."""
    cassette = workdir.parent / "toolsearch.json"
    prompt = "BB-TOOLSEARCH: fetch a page"
    rec = record(cassette, prompt, cwd=workdir, provider=provider, confdir=confdir)
    assert rec.stdout.strip() == "Loaded: WebFetch."
    trace = load_trace(cassette)
    [result] = [s.payload for s in trace.steps if s.type == "tool_result"]
    assert result["toolName"] == "ToolSearch"
    assert {"type": "tool_reference", "toolName": "WebFetch"} in result["result"]
    calls = sum(1 for s in trace.steps if s.type == "model_input")
    assert_same_run(replay(cassette, prompt, cwd=workdir, confdir=confdir), rec, calls)
