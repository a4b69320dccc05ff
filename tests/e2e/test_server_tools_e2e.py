"""End to end: server-side tools are model output — each real program uses its provider's web search, recorded, replayed strictly offline.

One test per program, each through a real proxy with the program itself as the
client and a fake provider on 127.0.0.1 scripted to make it search:

* Claude Code's WebSearch (tool search off, as the issue says): its sub-call
  offers ``web_search_20250305`` and the answer holds ``server_tool_use``, a
  ``web_search_tool_result`` and cited text (``examples/claude_code_model.py``,
  ``BB-SEARCH``).
* Codex with ``-m gpt-5``, which sends the ``web_search`` tool on every request:
  one answer holds a ``web_search_call`` item and a url citation.
* Gemini CLI's ``google_web_search``: a call with ``googleSearch`` whose answer
  carries ``groundingMetadata``.

Each records, verifies (no provider id in the cassette), and replays strictly
offline with no flags, the program printing what it printed at record.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from claude_code_model import SEARCH_QUERY, SEARCH_RESULTS, respond
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace

pytestmark = pytest.mark.e2e

E2E = Path(__file__).resolve().parent
sys.path.insert(0, str(E2E))
import test_claude_code as cc  # noqa: E402  (its runner: isolated HOME, fake key, record / replay helpers)


@pytest.fixture
def claude_provider() -> Iterator[FakeProvider]:
    with FakeProvider(responder=respond) as p:
        yield p


def test_claude_code_web_search_records_the_server_tool_blocks_and_replays_strictly(
    claude_provider: FakeProvider, tmp_path: Path, confdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not cc.CLAUDE.exists():
        pytest.fail(f"Claude Code is not installed at {cc.CLAUDE}; scripts/setup installs it")
    monkeypatch.setitem(cc.EXTRA_ENV, "ENABLE_TOOL_SEARCH", "false")  # WebSearch offered directly, as the row says
    workdir = tmp_path / "work"
    workdir.mkdir()
    (tmp_path / "home").mkdir()
    cassette = tmp_path / "search.json"
    prompt = "BB-SEARCH: what is blackbox for mitmproxy?"
    allow = ("--allowedTools", "WebSearch")
    rec = cc.record(cassette, prompt, *allow, cwd=workdir, provider=claude_provider, confdir=confdir)
    out = rec.stdout
    assert out.startswith("The search said:"), out + rec.stderr
    assert SEARCH_RESULTS[0][1] in out and "replays them offline" in out  # the served result and the cited text reached the agent
    trace = load_trace(cassette)
    answers = [s.payload for s in trace.steps if s.type == "model_output" and "parts" in s.payload]
    assert len(answers) == 1
    parts = answers[0]["parts"]
    assert [p["type"] for p in parts] == ["text", "server_tool_call", "server_tool_result", "text", "text"]
    assert parts[1]["toolName"] == "web_search" and parts[1]["toolInput"] == {"query": SEARCH_QUERY}
    assert parts[1]["toolCallId"] == parts[2]["toolCallId"] and parts[1]["toolCallId"].startswith("call-")
    assert answers[0]["serverToolUse"] == {"web_search": 1}
    offered = [s.payload["tools"] for s in trace.steps if s.type == "model_input" and any("builtin" in t for t in s.payload["tools"])]
    assert offered and offered[0][0]["builtin"]["type"] == "web_search_20250305"
    assert "srvtoolu_" not in cassette.read_text()
    calls = sum(1 for s in trace.steps if s.type == "model_input")
    cc.assert_same_run(cc.replay(cassette, prompt, cwd=workdir, confdir=confdir, claude_args=allow), rec, calls)


# --- Codex ------------------------------------------------------------------------------------

import test_codex as cx  # noqa: E402  (its Codex runner: CODEX_HOME, the fake's hosts, record / replay)
from fake_responses_ws import FakeResponsesWs  # noqa: E402

# The model searches the web and runs `echo` in one answer (so Codex sends the web_search_call back in its history),
# then answers citing the page.
SEARCH_AND_RUN = {"web_search": "blackbox mitmproxy recorder", **cx.SCRIPT[0]}
SEARCH_ANSWER = {
    "web_search": "blackbox mitmproxy recorder",
    "text": "Blackbox records an agent's model calls and replays them offline.",
    "url": "https://docs.example.com/blackbox",
    "title": "Blackbox for mitmproxy",
}


def test_codex_gpt_5_sends_web_search_and_an_answer_with_a_web_search_call_replays_strictly(tmp_path: Path, confdir: Path) -> None:
    if not cx.CODEX.exists():
        pytest.fail(f"Codex is not installed at {cx.CODEX}; scripts/setup installs it")
    codex = cx.Codex(tmp_path, confdir)
    prompt = "What is blackbox for mitmproxy? Search the web."
    command = [str(cx.CODEX), "exec", "--skip-git-repo-check", "--ephemeral", "-m", "gpt-5", "-C", str(codex.work), prompt]
    cassette = tmp_path / "search.json"
    with FakeResponsesWs([SEARCH_AND_RUN, SEARCH_ANSWER]) as fake:
        args = ["record", "-o", str(cassette), "--confdir", str(confdir), *cx._to_the_fake(fake)]
        rec = cx._blackbox(*args, "--", *command, env={**codex.env, "OPENAI_API_KEY": cx.KEY})
        calls = cx._model_messages(fake)
    assert rec.returncode == 0, rec.stderr[-3000:]
    assert rec.stdout.strip().endswith(SEARCH_ANSWER["text"]), rec.stdout
    assert any(t.get("type") == "web_search" for t in calls[-1]["body"]["tools"])  # gpt-5 gets the hosted web_search tool
    trace = load_trace(cassette)
    assert cx._blackbox("verify", str(cassette)).returncode == 0
    tools = next(s.payload["tools"] for s in trace.steps if s.type == "model_input")
    assert {"name": "web_search", "builtin": next(t for t in calls[-1]["body"]["tools"] if t["type"] == "web_search")} in tools
    first, second = [s.payload for s in trace.steps if s.type == "model_output" and "parts" in s.payload]
    search = {"status": "completed", "action": {"type": "search", "query": SEARCH_ANSWER["web_search"]}}
    assert first["parts"][0] == {"type": "server_tool_call", "toolCallId": "call-0", "toolName": "web_search_call", "toolInput": search}
    assert first["parts"][1] == {"type": "tool_use", "toolCallId": first["calls"][0]["toolCallId"]}
    assert second["parts"][1]["annotations"][0]["url"] == SEARCH_ANSWER["url"]
    # Codex sent the search back in its history: the same part, the same call-0.
    history = [s.payload for s in trace.steps if s.type == "model_input"][1]["messages"]
    sent = [p for m in history if isinstance(m["content"], list) for p in m["content"] if p["type"] == "server_tool_call"]
    assert [p["toolCallId"] for p in sent] == ["call-0"]
    assert b"ws_0" not in cassette.read_bytes()
    rep = cx._blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *command, env=codex.env)
    assert rep.returncode == 0, rep.stderr[-3000:]
    assert rep.stdout == rec.stdout
