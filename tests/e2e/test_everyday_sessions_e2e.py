"""End to end: four everyday sessions of the real pinned agents, each recorded once and replayed strictly offline.

Each runs the program itself (isolated HOME, a fake key) through a real proxy
with ``blackbox record -- PROGRAM …`` against a scripted fake provider on
127.0.0.1, then ``blackbox replay`` with the fake stopped and no flags (the
two tool-search sessions three times, each identical to the recording):

* Codex CLI's ``view_image``: the model runs ``tools.view_image`` on a PNG in the
  workspace (this Codex exposes its tools inside its ``exec`` code tool) and
  Codex sends the picture back as an ``input_image`` in the tool output. The
  cassette names it by digest; the bytes are once in ``RUN.media.json``; a
  replay needs that file (tampered, the run is refused before Codex starts).
* Gemini CLI's ``@doc.pdf``: the PDF rides in the prompt as ``inlineData``
  ``application/pdf``; recorded as a ``document`` part by digest.
* Claude Code with its defaults (tool search on): ``ToolSearch`` loads WebFetch
  and WebSearch (``tool_reference`` blocks), WebFetch reads a page of the local
  web stand-in, WebSearch's sub-call is answered with Anthropic's server-side
  ``server_tool_use`` / ``web_search_tool_result`` blocks.
* Claude Code with its defaults and a stdio MCP server (``--mcp-config``): the
  server's tool is deferred, ``ToolSearch`` loads it, the model calls it and
  answers from its result; at replay Claude Code starts the server again (it is
  the agent's own local tool, not a provider) and every model call is served.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_code_model import FETCH_PAGE, MCP_TOOL, SEARCH_QUERY, SEARCH_RESULTS, respond
from conftest import blackbox, remote_args
from fake_gemini import FakeGemini
from fake_provider import FakeProvider
from fake_responses_ws import FakeResponsesWs
from mcp_notes_server import NOTES
from web_standin import PAGES, WebStandIn

from blackbox_mitm.cassette import compression, load_trace
from blackbox_mitm.cassette.media import load_media, media_path
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_claude_code as cc  # noqa: E402  (its runner: isolated HOME, fake key, record / replay helpers)
import test_codex as cx  # noqa: E402  (its Codex runner: CODEX_HOME, the fake's hosts)
import test_gemini_e2e as gm  # noqa: E402  (its settings, fake host mapping and key)

# A 1x1 PNG (a real image: Codex reads its size before it sends it).
PNG = cx.PNG
# A one-page PDF, written by hand (the smallest a PDF reader accepts).
PDF = cc.PDF


def _parts(trace: Any) -> list[dict[str, Any]]:
    """Every content part of every message of every request (tool outputs' parts included)."""
    out: list[dict[str, Any]] = []
    for step in trace.steps:
        if step.type != "model_input":
            continue
        for message in step.payload["messages"]:
            for part in message["content"] if isinstance(message["content"], list) else []:
                out.append(part)
                if isinstance(part.get("result"), list):
                    out += [p for p in part["result"] if isinstance(p, dict)]
    return out


# --- Codex: view_image ------------------------------------------------------------------------


def test_codex_view_image_sends_an_input_image_recorded_by_digest_and_replayed_strictly(tmp_path: Path, confdir: Path) -> None:
    if not cx.CODEX.exists():
        pytest.fail(f"Codex is not installed at {cx.CODEX}; scripts/setup installs it")
    codex = cx.Codex(tmp_path, confdir)
    image = codex.work / "img.png"
    image.write_bytes(PNG)
    # The model looks at the picture with Codex's view_image tool and hands it back to itself with exec's image().
    look = {"custom_tool": "exec", "input": f"const r = await tools.view_image({{path: {json.dumps(str(image))}}});\nimage(r);"}
    script = [look, {"text": "The picture is a single pixel."}]
    prompt = "Look at img.png and tell me what it shows."
    command = [str(cx.CODEX), "exec", "--skip-git-repo-check", "--ephemeral", "-C", str(codex.work), prompt]  # its defaults
    cassette = tmp_path / "view.json"
    with FakeResponsesWs(script) as fake:
        args = ["record", "-o", str(cassette), "--confdir", str(confdir), *cx._to_the_fake(fake)]
        rec = cx._blackbox(*args, "--", *command, env={**codex.env, "OPENAI_API_KEY": cx.KEY})
        calls = cx._model_messages(fake)
    assert rec.returncode == 0, rec.stderr[-3000:]
    assert rec.stdout.strip().endswith("The picture is a single pixel."), rec.stdout
    # What Codex sent: the tool's output holds the picture as an input_image data URL.
    output = calls[-1]["body"]["input"][-1]
    assert output["type"] == "custom_tool_call_output"
    sent = [p for p in output["output"] if p.get("type") == "input_image"]
    assert [p["image_url"] for p in sent] == ["data:image/png;base64," + base64.b64encode(PNG).decode()]

    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    digest = hashlib.sha256(PNG).hexdigest()
    images = [p for p in _parts(trace) if p.get("type") == "image"]
    assert images == [{"type": "image", "mediaType": "image/png", "sha256": digest, "size": len(PNG)}]
    assert base64.b64encode(PNG) not in cassette.read_bytes()  # the cassette names it; the media file holds it
    document = load_media(cassette, trace)
    assert document is not None and list(document["media"]) == [digest]
    assert base64.b64decode(document["media"][digest]["data"]) == PNG
    assert cx._blackbox("verify", str(cassette)).returncode == 0

    rep = cx._blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *command, env=codex.env)
    assert rep.returncode == 0, rep.stderr[-3000:]
    assert rep.stdout == rec.stdout
    assert "2 of 2 model calls served from the recording, no divergence" in rep.stderr

    # The replay stands on the media file: a byte changed there and the run is refused (before Codex is started).
    side = media_path(cassette)
    plain = json.loads(compression.decode(side, side.read_bytes()))
    plain["media"][digest]["data"] = base64.b64encode(PNG[:-1] + b"\x00").decode()
    side.write_bytes(compression.encode(side, json.dumps(plain).encode()))
    refused = cx._blackbox("replay", str(cassette), "--confdir", str(confdir), "--", "true", env=codex.env)
    assert refused.returncode != 0 and "does not verify" in refused.stderr + refused.stdout


# --- Gemini CLI: @doc.pdf ---------------------------------------------------------------------


def _pdf_model(body: dict[str, Any]) -> dict[str, Any]:
    """Gemini CLI's model: its router's JSON, then an answer saying which media the prompt carried."""
    config = body.get("generationConfig") or {}
    if config.get("responseMimeType") == "application/json":
        props = (config.get("responseJsonSchema") or {}).get("properties", {})
        if "complexity_score" in props:
            return {"text": json.dumps({"complexity_reasoning": "one document", "complexity_score": 10})}
        return {"text": json.dumps({"next_speaker": "user", "reasoning": "answered"})}
    inline = [p["inlineData"] for c in body.get("contents") or [] for p in c.get("parts") or [] if "inlineData" in p]
    said = ", ".join(f"{d['mimeType']} of {len(base64.b64decode(d['data']))} bytes" for d in inline)
    return {"text": f"The prompt carried: {said or 'nothing'}."}


@pytest.mark.skipif(not gm.GEMINI_CLI.exists(), reason="Gemini CLI is not installed (scripts/setup-gemini-cli)")
def test_gemini_cli_at_a_pdf_records_the_document_by_digest_and_replays_strictly(tmp_path: Path, confdir: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(gm.CLI_SETTINGS))
    work.mkdir()
    (work / "doc.pdf").write_bytes(PDF)
    cli = ["env", "-C", str(work), "node", str(gm.GEMINI_CLI), "--yolo", "--skip-trust", "-p", "@doc.pdf what is this document?"]
    cassette = tmp_path / "pdf.json"
    with FakeGemini(responder=_pdf_model) as fake:
        rec = blackbox(
            "record",
            "-o",
            str(cassette),
            "--confdir",
            str(confdir),
            *gm._remote(fake),
            "--",
            *cli,
            env=gm._env(HOME=str(home), **gm.CLI_ENV),
        )
        calls = len(fake.model_requests())
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout.strip() == f"The prompt carried: application/pdf of {len(PDF)} bytes.", rec.stdout
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    digest = hashlib.sha256(PDF).hexdigest()
    documents = [p for p in _parts(trace) if p.get("type") == "document"]
    assert documents and all(
        d == {"type": "document", "mediaType": "application/pdf", "sha256": digest, "size": len(PDF)} for d in documents
    )
    assert base64.b64encode(PDF) not in cassette.read_bytes()
    document = load_media(cassette, trace)
    assert document is not None and list(document["media"]) == [digest]
    assert base64.b64decode(document["media"][digest]["data"]) == PDF
    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0 and checked.stdout.startswith("OK"), checked.stdout
    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *cli, env={"HOME": str(home), **gm.CLI_ENV})
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert f"{calls} of {calls} model calls served from the recording, no divergence" in rep.stderr


# --- Claude Code: ToolSearch -> WebFetch and WebSearch ----------------------------------------


def test_claude_code_tool_search_loads_web_fetch_and_web_search_and_the_session_replays_strictly(
    tmp_path: Path, confdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not cc.CLAUDE.exists():
        pytest.fail(f"Claude Code is not installed at {cc.CLAUDE}; scripts/setup installs it")
    # Claude Code 2.1.332 turns tool search on unless ENABLE_TOOL_SEARCH (false, auto:100) or
    # CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS turns it off, for any model but Claude 3's: a user's defaults, nothing set.
    monkeypatch.delenv("ENABLE_TOOL_SEARCH", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "home").mkdir()
    cassette = tmp_path / "web.json"
    claude = [str(cc.CLAUDE), "-p", "BB-TOOLSEARCH-WEB: fetch the page and search the web", "--allowedTools", "WebFetch", "WebSearch"]
    with WebStandIn() as web, FakeProvider(responder=respond) as provider:
        maps = [*web.domain_check(), *remote_args(provider.url), *web.map_remote()]
        rec = cc.run(["record", "-o", str(cassette), "--confdir", str(confdir), "-v", *maps, "--", *claude], cwd=work)
        fetched = list(web.requests)
        requests = [r["body"] for r in provider.requests if r["path"].startswith("/v1/messages") and isinstance(r["body"], dict)]
    assert rec.returncode == 0, rec.stderr
    lines = rec.stdout.strip().splitlines()
    assert lines[0] == "Loaded: WebFetch, WebSearch.", rec.stdout
    assert lines[1] == "Fetched: The page says: The answer is 42.", rec.stdout  # the page, through WebFetch's sub-call
    assert lines[2].startswith("Searched: ") and SEARCH_RESULTS[0][1] in lines[2], rec.stdout
    assert ("GET", "/page.html") in fetched  # WebFetch read the page from the stand-in, through the proxy
    # Tool search was on: the first request names WebFetch and WebSearch as deferred tools (no schema); the request
    # after ToolSearch carries their definitions; WebSearch's sub-call offers the server-side web_search tool.
    tools = [[t.get("name") for t in r.get("tools") or []] for r in requests]
    assert "ToolSearch" in tools[0] and "WebFetch" not in tools[0] and "WebSearch" not in tools[0]
    assert "deferred tools are now available via ToolSearch" in json.dumps(requests[0])
    assert "WebFetch" in tools[1] and "WebSearch" in tools[1]
    assert any(t.get("type") == "web_search_20250305" for r in requests for t in r.get("tools") or [])

    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    results = {s.payload["toolName"]: s.payload for s in trace.steps if s.type == "tool_result"}
    assert sorted(results) == ["ToolSearch", "WebFetch", "WebSearch"]
    refs = [p for p in results["ToolSearch"]["result"] if p.get("type") == "tool_reference"]
    assert refs == [{"type": "tool_reference", "toolName": "WebFetch"}, {"type": "tool_reference", "toolName": "WebSearch"}]
    answers = [s.payload for s in trace.steps if s.type == "model_output" and "parts" in s.payload]
    server = [p["type"] for a in answers for p in a["parts"] if p["type"].startswith("server_tool")]
    assert server == ["server_tool_call", "server_tool_result"]
    assert any(a.get("serverToolUse") == {"web_search": 1} for a in answers)
    raw = cassette.read_text()
    assert "srvtoolu_" not in raw and "toolu_" not in raw and PAGES["/page.html"].split("<p>")[1][:10] in raw
    assert SEARCH_QUERY in raw and FETCH_PAGE in raw

    calls = sum(1 for s in trace.steps if s.type == "model_input")
    for _ in range(3):  # strict offline replay, identical three times (issue 23)
        rep = cc.run(["replay", str(cassette), "--confdir", str(confdir), "-v", "--", *claude], cwd=work)
        cc.assert_same_run(rep, rec, calls)


# --- Claude Code: ToolSearch -> an MCP tool (a stdio server) --------------------------------------


def test_claude_code_tool_search_loads_an_mcp_tool_from_a_stdio_server_and_the_session_replays_strictly(
    tmp_path: Path, confdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not cc.CLAUDE.exists():
        pytest.fail(f"Claude Code is not installed at {cc.CLAUDE}; scripts/setup installs it")
    monkeypatch.delenv("ENABLE_TOOL_SEARCH", raising=False)  # the defaults: tool search on
    # Claude Code -p may send its first request while an MCP server is still starting (then it names the server as
    # "still connecting" instead of listing its tool): a race between record and replay. It waits up to this long.
    monkeypatch.setitem(cc.EXTRA_ENV, "CLAUDE_CODE_MCP_STARTUP_WAIT_MS", "60000")
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "home").mkdir()
    server = Path(__file__).resolve().parents[2] / "examples" / "mcp_notes_server.py"
    config = {"mcpServers": {"notes": {"type": "stdio", "command": sys.executable, "args": [str(server), "--stdio"]}}}
    (work / "mcp.json").write_text(json.dumps(config))  # as a user writes it, beside the project
    cassette = tmp_path / "toolsearch-mcp.json"
    claude = [str(cc.CLAUDE), "-p", "BB-TOOLSEARCH-MCP: ask the notes about alpha", "--mcp-config", "mcp.json", "--allowedTools", MCP_TOOL]
    with FakeProvider(responder=respond) as provider:
        rec = cc.run(["record", "-o", str(cassette), "--confdir", str(confdir), "-v", *remote_args(provider.url), "--", *claude], cwd=work)
        requests = [r["body"] for r in provider.requests if r["path"].startswith("/v1/messages") and isinstance(r["body"], dict)]
    assert rec.returncode == 0, rec.stderr
    said = f'The notes server said: {{"result":"{NOTES["alpha"]}"}}'  # the stdio server's answer, quoted by the model
    assert rec.stdout.strip().splitlines() == [f"Loaded: {MCP_TOOL}.", said], rec.stdout
    # Tool search was on: the first request names the MCP tool as deferred (no schema), the next one carries it.
    tools = [[t.get("name") for t in r.get("tools") or []] for r in requests]
    assert "ToolSearch" in tools[0] and MCP_TOOL not in tools[0] and MCP_TOOL in json.dumps(requests[0])
    assert MCP_TOOL in tools[1]

    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0 and checked.stdout.startswith("OK"), checked.stdout
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    results = {s.payload["toolName"]: s.payload["result"] for s in trace.steps if s.type == "tool_result"}
    assert sorted(results) == sorted(["ToolSearch", MCP_TOOL])
    assert [p for p in results["ToolSearch"] if p.get("type") == "tool_reference"] == [{"type": "tool_reference", "toolName": MCP_TOOL}]
    assert NOTES["alpha"] in json.dumps(results[MCP_TOOL])  # the MCP tool's answer is in the recorded history
    assert "toolu_" not in cassette.read_text()

    calls = sum(1 for s in trace.steps if s.type == "model_input")
    assert calls == len(requests)
    for _ in range(3):  # each replay starts the MCP server again; every model call is served, three times alike
        rep = cc.run(["replay", str(cassette), "--confdir", str(confdir), "-v", "--", *claude], cwd=work)
        cc.assert_same_run(rep, rec, calls)
