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

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from claude_code_model import SEARCH_QUERY, SEARCH_RESULTS, respond
from conftest import blackbox
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

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
    offered = [s.payload for s in trace.steps if s.type == "model_input" and any("builtin" in t for t in s.payload["tools"])]
    assert offered and offered[0]["tools"][0]["builtin"]["type"] == "web_search_20250305"
    assert offered[0]["params"].get("stream") is True  # the sub-call streams: the server blocks went through SSE both ways
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


# --- Gemini CLI -------------------------------------------------------------------------------

import test_gemini_e2e as gm  # noqa: E402  (its settings, fake host mapping and key)
from fake_gemini import FakeGemini  # noqa: E402

GROUNDED_TEXT = "Blackbox records an agent's model calls and replays them offline."
GROUNDING = {
    "webSearchQueries": ["blackbox mitmproxy"],
    "searchEntryPoint": {"renderedContent": "<div class='search'>blackbox mitmproxy</div>"},
    "groundingChunks": [{"web": {"uri": "https://docs.example.com/blackbox", "title": "docs.example.com"}}],
    "groundingSupports": [
        {"segment": {"startIndex": 0, "endIndex": 40, "text": GROUNDED_TEXT[:40]}, "groundingChunkIndices": [0], "confidenceScores": [0.9]}
    ],
}


def _searching_model(body: dict[str, Any]) -> dict[str, Any]:
    """Gemini CLI's model: its router's JSON, google_web_search once, then an answer quoting what the tool returned."""
    config = body.get("generationConfig") or {}
    if config.get("responseMimeType") == "application/json":
        props = (config.get("responseJsonSchema") or {}).get("properties", {})
        if "complexity_score" in props:
            return {"text": json.dumps({"complexity_reasoning": "one search", "complexity_score": 10})}
        return {"text": json.dumps({"next_speaker": "user", "reasoning": "answered"})}
    if any("googleSearch" in t for t in body.get("tools") or []):  # the tool's own call, grounded by Google Search
        candidate = {"content": {"role": "model", "parts": [{"text": GROUNDED_TEXT}]}, "finishReason": "STOP", "index": 0}
        candidate["groundingMetadata"] = GROUNDING
        usage = {"promptTokenCount": 9, "candidatesTokenCount": 14, "totalTokenCount": 23}
        return {"raw": {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-3-flash", "responseId": "g" * 22}}
    for part in (body.get("contents") or [{}])[-1].get("parts") or []:
        if "functionResponse" in part:
            output = part["functionResponse"].get("response", {}).get("output", "")
            return {"text": "The search said: " + " ".join(str(output).split())}
    return {"function_calls": [{"name": "google_web_search", "args": {"query": "blackbox mitmproxy"}}]}


@pytest.mark.skipif(not gm.GEMINI_CLI.exists(), reason="Gemini CLI is not installed (scripts/setup-gemini-cli)")
def test_gemini_cli_google_web_search_records_the_grounding_and_replays_strictly(tmp_path: Path, confdir: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(gm.CLI_SETTINGS))
    work.mkdir()
    prompt = "What is blackbox for mitmproxy? Search the web."
    cli = ["env", "-C", str(work), "node", str(gm.GEMINI_CLI), "--yolo", "--skip-trust", "-p", prompt]
    cassette = tmp_path / "search.json"
    with FakeGemini(responder=_searching_model) as fake:
        args = ["record", "-o", str(cassette), "--confdir", str(confdir), *gm._remote(fake)]
        rec = blackbox(*args, "--", *cli, env=gm._env(HOME=str(home)))
        calls = len(fake.model_requests())
    assert rec.returncode == 0, rec.stderr
    out = rec.stdout.strip()
    # What Gemini CLI made of the grounding: a citation marker after the supported span, and the sources.
    assert out.startswith("The search said:") and "[1]" in out and "docs.example.com (https://docs.example.com/blackbox)" in out, out
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    [grounded] = [s.payload for s in trace.steps if s.type == "model_output" and "grounding" in s.payload]
    assert grounded["grounding"] == {"groundingMetadata": GROUNDING}
    inputs = [s.payload for s in trace.steps if s.type == "model_input"]
    assert any({"name": "googleSearch", "builtin": {"googleSearch": {}}} in i["tools"] for i in inputs)
    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *cli, env={"HOME": str(home)})
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout.strip() == out
    assert f"{calls} of {calls} model calls served" in rep.stderr
