"""End to end: Codex CLI (npm @openai/codex, pinned) through a real proxy, over its WebSocket and over HTTPS.

Codex talks to its default provider (https://api.openai.com/v1, WebSocket
first); only the proxy variables and CA that ``blackbox`` sets route it through
mitmproxy, and ``--map-remote`` sends api.openai.com (and the other hosts
Codex asks, ``CODEX_HOSTS``) to the fake Responses API on 127.0.0.1
(examples/fake_responses_ws.py, HTTP + SSE + WebSocket). In each run Codex runs
its own shell tool once (the model calls its ``exec`` custom tool, which runs
``echo``) and then answers. Each transport: record -> ``blackbox verify`` ->
the fake stopped -> strict offline replay gives the same output and exit 0 ->
a changed prompt fails the replay. A run recorded over the socket replays over
HTTPS: the transport is not compared.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, ROOT
from fake_responses_ws import FakeResponsesWs
from once import shared

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

CODEX = ROOT / "tests" / "e2e" / "clients" / "codex" / "node_modules" / ".bin" / "codex"
KEY = "sk-test-not-a-real-key-000"
PROMPT = "Run echo hello-from-codex and tell me what it printed."
ANSWER = "The command printed hello-from-codex."
# The model's two answers (also the docs' example): call `exec` to run `echo`, then say what it printed.
SCRIPT: list[dict[str, Any]] = json.loads((EXAMPLES / "codex_script.json").read_text())
# Codex with WebSockets turned off: its documented switch is a provider's `supports_websockets = false`.
HTTPS_ONLY = [
    "-c",
    'model_provider="openai_https"',
    "-c",
    'model_providers.openai_https={name="OpenAI",base_url="https://api.openai.com/v1",env_key="OPENAI_API_KEY",'
    'wire_api="responses",supports_websockets=false}',
]
TRANSPORTS = {"websocket": [], "https": HTTPS_ONLY}
# Besides api.openai.com, Codex asks chatgpt.com for plugins and models, api.github.com for its plugins repository and
# ab.chatgpt.com for metrics (seen through mitmproxy; /work/notes/codex_wire.md). The fake's 404 does not stop it.
CODEX_HOSTS = ("chatgpt.com", "ab.chatgpt.com", "api.github.com")


def _blackbox(*args: str, env: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """The real `blackbox` command, with stdin closed (Codex reads a piped stdin as more prompt)."""
    full_env = {k: v for k, v in os.environ.items() if k.lower() not in ("https_proxy", "http_proxy", "openai_api_key")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "blackbox_mitm", *args],
        env=full_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


class Codex:
    """One Codex home and working directory, the same for the recording and its replays (both are in the prompt)."""

    def __init__(self, tmp_path: Path, confdir: Path) -> None:
        self.home = tmp_path / "codex-home"
        self.work = tmp_path / "work"
        self.home.mkdir()
        self.work.mkdir()
        self.confdir = confdir
        self.env = {"CODEX_HOME": str(self.home), "NO_COLOR": "1"}

    def command(self, transport: str, prompt: str = PROMPT) -> list[str]:
        return [str(CODEX), "exec", "--skip-git-repo-check", "--ephemeral", "-C", str(self.work), *TRANSPORTS[transport], prompt]

    def record(self, cassette: Path, fake: FakeResponsesWs, transport: str) -> subprocess.CompletedProcess[str]:
        args = ["record", "-o", str(cassette), "--confdir", str(self.confdir), *_to_the_fake(fake)]
        return _blackbox(*args, "--", *self.command(transport), env={**self.env, "OPENAI_API_KEY": KEY})

    def replay(self, cassette: Path, transport: str, prompt: str = PROMPT) -> subprocess.CompletedProcess[str]:
        # No key: the replay sets a placeholder. Offline: nothing reaches the fake (it is stopped) or anywhere else.
        # Codex's exec tool says how long the command took ("Wall time 0.2 seconds"): the built-in mask
        # codex.wall-time leaves that span out of the comparison; everything else is compared.
        args = ["replay", str(cassette), "--confdir", str(self.confdir)]
        return _blackbox(*args, "--", *self.command(transport, prompt), env=self.env)


def _to_the_fake(fake: FakeResponsesWs) -> list[str]:
    """Every host Codex talks to, sent to the fake: a recording passes other hosts through, and nothing may leave."""
    args = ["--map-remote", f"|https://api\\.openai\\.com|{fake.url}"]
    for host in CODEX_HOSTS:
        args += ["--host", host, "--map-remote", f"|https://{re.escape(host)}|{fake.url}"]
    return args


def _model_messages(fake: FakeResponsesWs) -> list[dict[str, Any]]:
    return [r for r in fake.requests if r["call"]]


def _assert_clean(cassette: Path) -> None:
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    assert [s.type for s in trace.steps].count("model_input") == 2  # the warm-up is no model call
    raw = cassette.read_bytes()
    for native in (KEY.encode(), b"resp_fake", b"ctc_", b"call_0", b"call_1", b"Bearer sk-", b"obfuscation"):
        assert native not in raw, native


def _record_run(codex: Codex, cassette: Path, transport: str) -> str:
    with FakeResponsesWs(SCRIPT) as fake:
        rec = codex.record(cassette, fake, transport)
        assert rec.returncode == 0, rec.stderr[-3000:]
        calls = _model_messages(fake)
        upgrades = [r for r in fake.requests if r["transport"] == "http" and r["body"] is None and r["path"].startswith("/v1/responses")]
    assert len(calls) == 2
    assert {c["transport"] for c in calls} == ({"ws"} if transport == "websocket" else {"http"})
    assert len(upgrades) == (1 if transport == "websocket" else 0)  # one socket carried both turns
    tool_output = json.dumps(calls[1]["body"]["input"][-1])
    assert "custom_tool_call_output" in tool_output and "hello-from-codex" in tool_output  # Codex ran its shell tool
    if transport == "websocket":
        warmups = [r for r in fake.messages("ws") if r["body"].get("generate") is False]
        assert len(warmups) == 1 and calls[0]["body"]["previous_response_id"] == "resp_fake0"
    assert rec.stdout.strip().endswith(ANSWER)
    return rec.stdout


@pytest.fixture(scope="module")
def socket_run(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> tuple[Codex, Path, str]:
    """One Codex run recorded over its WebSocket (its home, the cassette, what it printed), shared by the tests that
    only replay or fork it: Codex is recorded once for them, not once each."""

    def make(folder: Path) -> tuple[Codex, Path, str]:
        codex = Codex(folder, confdir)
        cassette = folder / "run.json"
        return codex, cassette, _record_run(codex, cassette, "websocket")

    return shared(tmp_path_factory, "codex-socket", make)  # once a test session (tests/once.py)


# The websocket case asks for the shared recording by name (getfixturevalue): in its xdist group by hand (tests/conftest.py).
SHARED = pytest.mark.xdist_group("test_codex::socket_run")


@pytest.mark.parametrize("transport", [pytest.param(t, marks=SHARED) if t == "websocket" else t for t in TRANSPORTS])
def test_codex_records_verifies_replays_offline_and_a_changed_prompt_fails(
    transport: str, tmp_path: Path, confdir: Path, request: pytest.FixtureRequest
) -> None:
    if transport == "websocket":  # the shared recording (its checks ran in _record_run)
        codex, cassette, recorded = request.getfixturevalue("socket_run")
    else:
        codex = Codex(tmp_path, confdir)
        cassette = tmp_path / "run.json"
        recorded = _record_run(codex, cassette, transport)
    verified = _blackbox("verify", str(cassette))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    _assert_clean(cassette)

    replay = codex.replay(cassette, transport)
    assert replay.returncode == 0, replay.stderr[-3000:]
    assert replay.stdout == recorded

    changed = codex.replay(cassette, transport, prompt="Run echo goodbye-from-codex and tell me what it printed.")
    assert changed.returncode != 0
    assert "diverged" in changed.stderr


def test_a_fork_going_live_answers_the_upgrade_426_and_codex_falls_back_to_https(
    tmp_path: Path, confdir: Path, socket_run: tuple[Codex, Path, str]
) -> None:
    """A fork's calls go partly to the parent, partly upstream: no socket can carry both, so Codex is sent to HTTPS."""
    codex, parent, _ = socket_run
    child = tmp_path / "fork.json"
    edit = json.dumps("Script completed\nOutput:\nsomething-else\n")
    with FakeResponsesWs([{"text": "It printed something-else."}]) as fake:
        args = ["fork", str(parent), "--at", "3", "--tool-result", edit, "--live", "-o", str(child), "--confdir", str(confdir)]
        forked = _blackbox(*args, *_to_the_fake(fake), "--", *codex.command("websocket"), env={**codex.env, "OPENAI_API_KEY": KEY})
        live = _model_messages(fake)
        upgrades = [r for r in fake.requests if r["body"] is None and r["path"].startswith("/v1/responses")]
    assert forked.returncode == 0, forked.stderr[-3000:]
    assert forked.stdout.strip().endswith("It printed something-else.")
    assert "answered 426 to a WebSocket upgrade" in forked.stderr
    assert upgrades == []  # the upgrade never reached the provider
    assert [m["transport"] for m in live] == ["http"]  # the call after the cut went upstream over HTTPS
    assert "something-else" in json.dumps(live[0]["body"]["input"][-1])  # with the edited tool result
    trace = load_trace(child)
    assert verify_trace(trace) == []


def test_a_run_recorded_over_the_socket_replays_over_https(socket_run: tuple[Codex, Path, str]) -> None:
    codex, cassette, recorded = socket_run
    replay = codex.replay(cassette, "https")
    assert replay.returncode == 0, replay.stderr[-3000:]
    assert replay.stdout == recorded


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360606060000000050001a5f645400000000049454e44ae426082"
)


def test_codex_exec_with_an_image_records_it_by_digest_and_replays_strictly(tmp_path: Path, confdir: Path) -> None:
    """``codex exec --image img.png``: the input_image is a media part (its SHA-256), and the replay passes strictly."""
    import hashlib

    codex = Codex(tmp_path, confdir)
    (codex.work / "img.png").write_bytes(PNG)
    prompt = "What is in this picture?"
    command = [
        str(CODEX),
        "exec",
        "--skip-git-repo-check",
        "--ephemeral",
        "-C",
        str(codex.work),
        *HTTPS_ONLY,
        prompt,
        "--image",
        str(codex.work / "img.png"),
    ]
    cassette = tmp_path / "image.json"
    with FakeResponsesWs([{"text": "A single pixel."}]) as fake:
        args = ["record", "-o", str(cassette), "--confdir", str(confdir), *_to_the_fake(fake)]
        rec = _blackbox(*args, "--", *command, env={**codex.env, "OPENAI_API_KEY": KEY})
        assert rec.returncode == 0, rec.stderr[-3000:]
    assert rec.stdout.strip().endswith("A single pixel.")
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    first = next(s.payload for s in trace.steps if s.type == "model_input")
    images = [p for m in first["messages"] if isinstance(m["content"], list) for p in m["content"] if p.get("type") == "image"]
    assert [(i["mediaType"], i["sha256"], i["size"]) for i in images] == [("image/png", hashlib.sha256(PNG).hexdigest(), len(PNG))]
    rep = _blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *command, env=codex.env)
    assert rep.returncode == 0, rep.stderr[-3000:]
    assert rep.stdout == rec.stdout
