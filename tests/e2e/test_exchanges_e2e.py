"""End to end: the agent's own HTTP(S) traffic recorded beside the cassette and served by an offline replay.

A real proxy (``blackbox record`` / ``replay``), real clients (curl, Claude
Code), and a stand-in web server on 127.0.0.1 reached as ``docs.example.com``
through ``--map-remote``, stopped before every replay: what the replay's agent
gets comes from the cassette, and the stand-in's request log proves nothing
reached it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from web_standin import PAGES, WebStandIn

from blackbox_mitm.cassette.exchanges import exchanges_path

pytestmark = pytest.mark.e2e


def blackbox(args: list[str], *, cwd: Path, timeout: float = 240, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    base["BLACKBOX_CONFIG"] = ""
    base.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "blackbox_mitm", *args], cwd=cwd, env=base, capture_output=True, text=True, timeout=timeout
    )


def test_curl_is_recorded_then_served_offline_three_times_with_nothing_reaching_the_web(tmp_path: Path, confdir: Path) -> None:
    cassette = tmp_path / "curl.json"
    command = ["curl", "-sS", "https://docs.example.com/page.html", "https://docs.example.com/page.html"]
    with WebStandIn() as web:
        rec = blackbox(["record", "-o", str(cassette), "--confdir", str(confdir), *web.map_remote(), "--", *command], cwd=tmp_path)
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout == PAGES["/page.html"] * 2
    assert web.requests == [("GET", "/page.html"), ("GET", "/page.html")]
    assert "kept 2 other HTTP exchanges" in rec.stderr
    document = json.loads(exchanges_path(cassette).read_text())
    assert len(document["exchanges"]) == 2 and len(document["bodies"]) == 1  # the same page twice is stored once
    verify = blackbox(["verify", str(cassette)], cwd=tmp_path)
    assert verify.returncode == 0 and verify.stdout.startswith("OK"), verify.stdout
    show = blackbox(["show", str(cassette)], cwd=tmp_path)
    assert "other HTTP exchanges: 2" in show.stdout and "docs.example.com/page.html" in show.stdout
    seen = len(web.requests)
    for _ in range(3):
        rep = blackbox(["replay", str(cassette), "--confdir", str(confdir), "--", *command], cwd=tmp_path)
        assert rep.returncode == 0, rep.stderr
        assert rep.stdout == rec.stdout
    assert len(web.requests) == seen  # stopped, and nothing reached it anyway


def test_a_page_never_asked_for_is_refused_listed_and_fails_the_verdict(tmp_path: Path, confdir: Path) -> None:
    cassette = tmp_path / "once.json"
    with WebStandIn() as web:
        rec = blackbox(
            [
                "record",
                "-o",
                str(cassette),
                "--confdir",
                str(confdir),
                *web.map_remote(),
                "--",
                "curl",
                "-sS",
                "https://docs.example.com/page.html",
            ],
            cwd=tmp_path,
        )
        assert rec.returncode == 0, rec.stderr
        seen = len(web.requests)
        # The stand-in is left running here, to prove an offline replay does not reach it.
        report = tmp_path / "report.json"
        rep = blackbox(
            [
                "replay",
                str(cassette),
                "--confdir",
                str(confdir),
                "--report",
                str(report),
                "--",
                "curl",
                "-sS",
                "https://docs.example.com/other.html",
            ],
            cwd=tmp_path,
        )
        assert len(web.requests) == seen
    assert rep.returncode != 0
    assert "blackbox replay is offline: docs.example.com was not contacted (it is not in the recording)" in rep.stdout
    status = json.loads(report.read_text())
    assert status["verdict"] == "unmatched"
    assert status["unmatched_exchanges"] == [{"method": "GET", "host": "docs.example.com", "path": "/other.html"}]
    assert "unmatched exchanges: 1 (refused offline)" in rep.stderr and "GET docs.example.com/other.html" in rep.stderr


def test_a_200_mb_download_passes_through_but_only_its_size_is_kept(tmp_path: Path, confdir: Path) -> None:
    cassette = tmp_path / "big.json"
    size = 200 * 1024 * 1024
    url = f"https://docs.example.com/big?bytes={size}"
    with WebStandIn() as web:
        rec = blackbox(
            [
                "record",
                "-o",
                str(cassette),
                "--confdir",
                str(confdir),
                *web.map_remote(),
                "--",
                "curl",
                "-sS",
                "-o",
                "/dev/null",
                "-w",
                "%{size_download}",
                url,
            ],
            cwd=tmp_path,
            timeout=600,
        )
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout == str(size)  # the agent got all of it
    assert f"not kept: GET {url}: the response body (209,715,200 bytes) was not kept: larger than the 16,777,216-byte cap" in rec.stderr
    side = exchanges_path(cassette)
    assert side.stat().st_size < 10_000 and cassette.stat().st_size < 10_000
    document = json.loads(side.read_text())
    assert document["exchanges"][0]["response"]["bytes"] == size and "notKept" in document["exchanges"][0]["response"]
    # A replay that needs it says why it cannot have it.
    report = tmp_path / "report.json"
    rep = blackbox(["replay", str(cassette), "--confdir", str(confdir), "--report", str(report), "--", "curl", "-sS", url], cwd=tmp_path)
    assert "its response was not kept at recording (larger than the 16,777,216-byte cap per exchange" in rep.stdout
    assert json.loads(report.read_text())["verdict"] == "unmatched"


def test_set_cookie_authorization_and_a_query_key_never_reach_the_cassette(tmp_path: Path, confdir: Path) -> None:
    cassette = tmp_path / "secrets.json"
    bearer = "tok-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
    query_key = "qk-1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d"
    url = f"https://docs.example.com/secret.html?api_key={query_key}&page=1"
    command = ["curl", "-sS", "-H", f"Authorization: Bearer {bearer}", "-H", "Cookie: sid=client-cookie-123456789", url]
    with WebStandIn() as web:
        rec = blackbox(["record", "-o", str(cassette), "--confdir", str(confdir), *web.map_remote(), "--", *command], cwd=tmp_path)
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout == PAGES["/secret.html"]
    stored = cassette.read_text() + exchanges_path(cassette).read_text()
    for secret in (bearer, query_key, "s3cr3t-cookie-value-0001", "client-cookie-123456789", "Set-Cookie", "set-cookie"):
        assert secret not in stored
    document = json.loads(exchanges_path(cassette).read_text())
    assert document["exchanges"][0]["url"] == "https://docs.example.com/secret.html?api_key=[credential]&page=1"
    # The replay matches with whatever key the agent sends now, and serves the page (without the cookie).
    rep = blackbox(
        [
            "replay",
            str(cassette),
            "--confdir",
            str(confdir),
            "--",
            "curl",
            "-sS",
            "-D",
            "-",
            url.replace(query_key, "another-key-000000000000"),
        ],
        cwd=tmp_path,
    )
    assert rep.returncode == 0, rep.stderr
    assert PAGES["/secret.html"] in rep.stdout and "set-cookie" not in rep.stdout.lower()


CLAUDE = Path(__file__).resolve().parent / "clients" / "claude-code" / "node_modules" / ".bin" / "claude"


def _claude_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC"))}
    env.update(HOME=str(home), ANTHROPIC_API_KEY="sk-ant-test-not-a-real-key-0000")
    return env


def test_claude_code_bash_curl_and_webfetch_replay_offline_with_the_web_stopped(tmp_path: Path, confdir: Path) -> None:
    from claude_code_model import respond
    from conftest import remote_args
    from fake_provider import FakeProvider

    if not CLAUDE.exists():
        pytest.fail(f"Claude Code is not installed at {CLAUDE}; scripts/setup-test-clients installs it")
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    cassette = tmp_path / "fetch.json"
    prompt = ["-p", "BB-FETCH: fetch two pages", "--allowedTools", "Bash", "WebFetch"]
    env = _claude_env(home)
    with WebStandIn() as web, FakeProvider(responder=respond) as provider:
        maps = [*web.domain_check(), *remote_args(provider.url), *web.map_remote()]
        rec = blackbox(
            ["record", "-o", str(cassette), "--confdir", str(confdir), "-v", *maps, "--", str(CLAUDE), *prompt], cwd=work, env=env
        )
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout.startswith("Fetched: <html><body><h1>Blackbox page</h1><p>The answer is 42.</p></body></html> | ")
    assert "Unable to verify" not in rec.stdout  # WebFetch's domain check went through the proxy and was answered
    assert web.requests == [("GET", "/page.html"), ("GET", "/api/web/domain_info?domain=docs.example.com"), ("GET", "/other.html")]
    document = json.loads(exchanges_path(cassette).read_text())
    hosts_paths = [(e["host"], e["path"]) for e in document["exchanges"]]
    assert ("docs.example.com", "/page.html") in hosts_paths and ("docs.example.com", "/other.html") in hosts_paths
    assert ("api.anthropic.com", "/api/web/domain_info") in hosts_paths  # a non-model request to the model host
    for _ in range(3):
        report = tmp_path / "report.json"
        rep = blackbox(
            ["replay", str(cassette), "--confdir", str(confdir), "--report", str(report), "-v", "--", str(CLAUDE), *prompt],
            cwd=work,
            env=env,
        )
        assert rep.returncode == 0, rep.stderr
        assert rep.stdout == rec.stdout
        assert "4 of 4 model calls served from the recording, no divergence" in rep.stderr
        assert "offline: refused" not in rep.stderr
        status = json.loads(report.read_text())
        assert status["verdict"] == "ok" and status["unmatched_exchanges"] == []
    assert len(web.requests) == 3  # the stand-in was stopped, and saw nothing of the replays


def test_claude_code_with_an_mcp_server_over_streamable_http_replays_with_the_server_stopped(tmp_path: Path, confdir: Path) -> None:
    from claude_code_model import respond
    from conftest import free_port, remote_args, wait_for_port
    from fake_provider import FakeProvider

    if not CLAUDE.exists():
        pytest.fail(f"Claude Code is not installed at {CLAUDE}; scripts/setup-test-clients installs it")
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    cassette = tmp_path / "mcp.json"
    config = json.dumps({"mcpServers": {"notes": {"type": "http", "url": "https://mcp.example.com/mcp"}}})
    prompt = ["-p", "BB-MCP: ask the notes", "--mcp-config", config, "--strict-mcp-config", "--allowedTools", "mcp__notes__lookup"]
    env = _claude_env(home)
    port = free_port()
    script = Path(__file__).resolve().parents[2] / "examples" / "mcp_notes_server.py"
    server = subprocess.Popen([sys.executable, str(script), str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(server, port, "the MCP server")
        with FakeProvider(responder=respond) as provider:
            maps = [*remote_args(provider.url), "--map-remote", rf"|https://mcp\.example\.com|http://127.0.0.1:{port}"]
            rec = blackbox(
                ["record", "-o", str(cassette), "--confdir", str(confdir), "-v", *maps, "--", str(CLAUDE), *prompt], cwd=work, env=env
            )
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout.strip() == 'The notes server said: {"result":"alpha is the first letter of the Greek alphabet"}'
    document = json.loads(exchanges_path(cassette).read_text())
    mcp = [e for e in document["exchanges"] if e["host"] == "mcp.example.com"]
    assert mcp and all(e["method"] == "POST" for e in mcp)
    kinds = {e["response"]["headers"].get("content-type", "").split(";")[0] for e in mcp}
    assert "text/event-stream" in kinds  # a tools/call answered as SSE is kept, and served whole
    for _ in range(3):
        report = tmp_path / "report.json"
        rep = blackbox(
            ["replay", str(cassette), "--confdir", str(confdir), "--report", str(report), "--", str(CLAUDE), *prompt], cwd=work, env=env
        )
        assert rep.returncode == 0, rep.stderr
        assert rep.stdout == rec.stdout
        assert json.loads(report.read_text())["verdict"] == "ok"


CODEX_CURL: list[dict[str, object]] = [
    {
        "custom_tool": "exec",
        "input": 'const r = await tools.exec_command({cmd: "curl -sS https://docs.example.com/page.html", login: false});\ntext(r.output);',
    },
    {"text": "The page says the answer is 42."},
]


@pytest.mark.parametrize("transport", ["https"])
def test_codex_shell_curl_replays_offline_three_times_with_the_web_stopped(transport: str, tmp_path: Path, confdir: Path) -> None:
    from fake_responses_ws import FakeResponsesWs
    from test_codex import KEY, Codex, _blackbox, _to_the_fake

    codex = Codex(tmp_path, confdir)
    cassette = tmp_path / "codex-curl.json"
    prompt = "Fetch https://docs.example.com/page.html with curl and tell me the answer."
    command = [*codex.command(transport, prompt)[:-1], "-s", "danger-full-access", prompt]
    with WebStandIn() as web, FakeResponsesWs(CODEX_CURL) as fake:
        args = ["record", "-o", str(cassette), "--confdir", str(confdir), *web.map_remote(), *_to_the_fake(fake)]
        rec = _blackbox(*args, "--", *command, env={**codex.env, "OPENAI_API_KEY": KEY})
        tool_output = json.dumps([r for r in fake.requests if r["call"]][-1]["body"]["input"][-1])
    assert rec.returncode == 0, rec.stderr[-3000:]
    assert "The answer is 42." in tool_output  # Codex's shell ran curl, through the proxy, to the stand-in
    assert ("GET", "/page.html") in web.requests
    seen = len(web.requests)
    for _ in range(3):
        rep = _blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *command, env=codex.env)
        assert rep.returncode == 0, rep.stderr[-3000:]
        assert rep.stdout == rec.stdout
    assert len(web.requests) == seen


def _gemini_curl_model(body: dict[str, object]) -> dict[str, object]:
    """Gemini CLI's model: JSON side calls answered, then one run_shell_command of curl, then the answer."""
    config: dict[str, object] = body.get("generationConfig") or {}  # type: ignore[assignment]
    if config.get("responseMimeType") == "application/json":
        props = (config.get("responseJsonSchema") or {}).get("properties", {})  # type: ignore[attr-defined]
        if "complexity_score" in props:
            return {"text": json.dumps({"complexity_reasoning": "one fetch", "complexity_score": 10})}
        return {"text": json.dumps({"next_speaker": "user", "reasoning": "answered"})}
    last = (body.get("contents") or [{}])[-1]  # type: ignore[index]
    for part in last.get("parts") or []:
        if "functionResponse" in part:
            output = json.dumps(part["functionResponse"].get("response"))
            return {"text": "The page says 42." if "The answer is 42." in output else f"The fetch failed: {output[:200]}"}
    return {"function_calls": [{"name": "run_shell_command", "args": {"command": "curl -sS https://docs.example.com/page.html"}}]}


def test_gemini_cli_shell_curl_replays_offline_three_times_with_the_web_stopped(tmp_path: Path, confdir: Path) -> None:
    from fake_gemini import FakeGemini
    from test_gemini_e2e import CLI_ENV, CLI_SETTINGS, GEMINI_CLI, _env, _remote

    if not GEMINI_CLI.exists():
        pytest.fail(f"Gemini CLI is not installed at {GEMINI_CLI}; scripts/setup-test-clients installs it")
    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(CLI_SETTINGS))
    work.mkdir()
    cli = [
        "env",
        "-C",
        str(work),
        "node",
        str(GEMINI_CLI),
        "--yolo",
        "--skip-trust",
        "-p",
        "What does https://docs.example.com/page.html say?",
    ]
    cassette = tmp_path / "gemini-curl.json"
    with WebStandIn() as web, FakeGemini(responder=_gemini_curl_model) as fake:
        args = ["record", "-o", str(cassette), "--confdir", str(confdir), *web.map_remote(), *_remote(fake), "--", *cli]
        rec = blackbox(args, cwd=tmp_path, env={"HOME": str(home), **CLI_ENV, **_env()})
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout.strip() == "The page says 42."
    assert ("GET", "/page.html") in web.requests
    seen = len(web.requests)
    for _ in range(3):
        rep = blackbox(["replay", str(cassette), "--confdir", str(confdir), "--", *cli], cwd=tmp_path, env={"HOME": str(home), **CLI_ENV})
        assert rep.returncode == 0, rep.stderr
        assert rep.stdout == rec.stdout
    assert len(web.requests) == seen


NODE_HTTPS_GET = (
    "require('node:https').get(process.argv[1], (res) => { let b = ''; res.on('data', (c) => (b += c));"
    " res.on('end', () => process.stdout.write(`${res.statusCode} ${b}`)); }).on('error', (e) => { console.error(e.message); process.exit(3); });"
)


def test_node_https_get_goes_through_the_preload_and_replays_offline(tmp_path: Path, confdir: Path) -> None:
    """node:https ignores HTTPS_PROXY; the preload's global agent tunnels it through the proxy (docs/limitations.md)."""
    cassette = tmp_path / "node.json"
    command = ["node", "-e", NODE_HTTPS_GET, "https://docs.example.com/page.html"]
    with WebStandIn() as web:
        rec = blackbox(["record", "-o", str(cassette), "--confdir", str(confdir), *web.map_remote(), "--", *command], cwd=tmp_path)
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout == "200 " + PAGES["/page.html"]
    rep = blackbox(["replay", str(cassette), "--confdir", str(confdir), "--", *command], cwd=tmp_path)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout


def test_mcp_over_the_older_http_sse_transport_replays_with_the_server_stopped(tmp_path: Path, confdir: Path) -> None:
    """The answers come as events on a GET /sse stream held open: a replay releases each once its request is answered."""
    from conftest import free_port, wait_for_port

    root = Path(__file__).resolve().parents[2]
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(root / "examples" / "mcp_notes_server.py"), str(port), "--sse"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    cassette = tmp_path / "sse.json"
    client = [sys.executable, str(root / "tests" / "e2e" / "agents" / "mcp_sse_client.py"), "https://mcp.example.com/sse"]
    try:
        wait_for_port(server, port, "the MCP server")
        maps = ["--map-remote", rf"|https://mcp\.example\.com|http://127.0.0.1:{port}"]
        rec = blackbox(["record", "-o", str(cassette), "--confdir", str(confdir), *maps, "--", *client], cwd=tmp_path)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout.strip() == "tools: ['lookup']; lookup(alpha): alpha is the first letter of the Greek alphabet"
    stream = [e for e in json.loads(exchanges_path(cassette).read_text())["exchanges"] if e["path"] == "/sse"]
    assert len(stream) == 1 and stream[0]["response"].get("incomplete") is True  # open until the client left
    for _ in range(2):
        rep = blackbox(["replay", str(cassette), "--confdir", str(confdir), "--", *client], cwd=tmp_path, timeout=120)
        assert rep.returncode == 0, rep.stderr
        assert rep.stdout == rec.stdout


def _gemini_mcp_model(body: dict[str, Any]) -> dict[str, Any]:
    """Gemini CLI's model: the JSON side calls, then the MCP server's lookup tool (by whatever name it was given), then the answer."""
    config = body.get("generationConfig") or {}
    if config.get("responseMimeType") == "application/json":
        props = (config.get("responseJsonSchema") or {}).get("properties", {})
        if "complexity_score" in props:
            return {"text": json.dumps({"complexity_reasoning": "one lookup", "complexity_score": 10})}
        return {"text": json.dumps({"next_speaker": "user", "reasoning": "answered"})}
    last = (body.get("contents") or [{}])[-1]
    for part in last.get("parts") or []:
        if "functionResponse" in part:
            return {"text": "The notes server said: " + json.dumps(part["functionResponse"].get("response"))}
    names = [d.get("name", "") for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]
    lookup = next((n for n in names if "lookup" in n), "lookup-missing")
    return {"function_calls": [{"name": lookup, "args": {"word": "alpha"}}]}


def test_gemini_cli_with_an_mcp_server_over_streamable_http_replays_with_the_server_stopped(tmp_path: Path, confdir: Path) -> None:
    from conftest import free_port, wait_for_port
    from fake_gemini import FakeGemini
    from test_gemini_e2e import CLI_ENV, CLI_SETTINGS, GEMINI_CLI, _env, _remote

    if not GEMINI_CLI.exists():
        pytest.fail(f"Gemini CLI is not installed at {GEMINI_CLI}; scripts/setup-test-clients installs it")
    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".gemini").mkdir(parents=True)
    settings = {**CLI_SETTINGS, "mcpServers": {"notes": {"httpUrl": "https://mcp.example.com/mcp"}}}
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    work.mkdir()
    cli = ["env", "-C", str(work), "node", str(GEMINI_CLI), "--yolo", "--skip-trust", "-p", "Ask the notes server about alpha."]
    cassette = tmp_path / "gemini-mcp.json"
    port = free_port()
    script = Path(__file__).resolve().parents[2] / "examples" / "mcp_notes_server.py"
    server = subprocess.Popen([sys.executable, str(script), str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(server, port, "the MCP server")
        with FakeGemini(responder=_gemini_mcp_model) as fake:
            maps = [*_remote(fake), "--map-remote", rf"|https://mcp\.example\.com|http://127.0.0.1:{port}"]
            rec = blackbox(
                ["record", "-o", str(cassette), "--confdir", str(confdir), *maps, "--", *cli],
                cwd=tmp_path,
                env={"HOME": str(home), **CLI_ENV, **_env()},
            )
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert rec.returncode == 0, rec.stderr
    assert "alpha is the first letter of the Greek alphabet" in rec.stdout
    for _ in range(3):
        rep = blackbox(["replay", str(cassette), "--confdir", str(confdir), "--", *cli], cwd=tmp_path, env={"HOME": str(home), **CLI_ENV})
        assert rep.returncode == 0, rep.stderr
        assert rep.stdout == rec.stdout


def test_codex_with_an_mcp_server_over_streamable_http_replays_its_tool_list_with_the_server_stopped(tmp_path: Path, confdir: Path) -> None:
    """Codex lists the MCP server's tools to the model (a deferred namespace, mcp__notes); offline, that list must come back.

    (Codex's model loads a deferred namespace before calling into it; the fake model here answers at once, so the
    run checks the handshake and the tool list, which is where a replay without the server diverged.)
    """
    from conftest import free_port, wait_for_port
    from fake_responses_ws import FakeResponsesWs
    from test_codex import HTTPS_ONLY, KEY, Codex, _blackbox, _to_the_fake

    codex = Codex(tmp_path, confdir)
    cassette = tmp_path / "codex-mcp.json"
    mcp = ["-c", 'mcp_servers.notes.url="https://mcp.example.com/mcp"']
    command = [*codex.command("https", "Say ok.")[:-1], *mcp, "Say ok."]
    assert HTTPS_ONLY[0] in command
    port = free_port()
    script = Path(__file__).resolve().parents[2] / "examples" / "mcp_notes_server.py"
    server = subprocess.Popen([sys.executable, str(script), str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(server, port, "the MCP server")
        with FakeResponsesWs([{"text": "ok"}]) as fake:
            maps = [*_to_the_fake(fake), "--map-remote", rf"|https://mcp\.example\.com|http://127.0.0.1:{port}"]
            rec = _blackbox(
                "record", "-o", str(cassette), "--confdir", str(confdir), *maps, "--", *command, env={**codex.env, "OPENAI_API_KEY": KEY}
            )
            first = json.dumps(next(r for r in fake.requests if r["call"])["body"])
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert rec.returncode == 0, rec.stderr[-3000:]
    assert "mcp__notes" in first  # the server's tools reached the model's request
    hosts = {(e["host"], e["method"]) for e in json.loads(exchanges_path(cassette).read_text())["exchanges"]}
    assert ("mcp.example.com", "POST") in hosts
    rep = _blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *command, env=codex.env)
    assert rep.returncode == 0, rep.stderr[-3000:]
    assert rep.stdout == rec.stdout
