"""End to end: a run recorded in one directory, home and day replays strictly in another, with no flags (issue 24).

Claude Code itself (pinned) records ``BB-COPY`` — read ``notes.txt`` by its
absolute path, write ``copy.txt`` by its absolute path — in ``A/alice/proj``
with ``HOME=A/home/alice`` and ``TZ=Pacific/Kiritimati`` (a day ahead). The
project is copied to ``B/ci/builds/proj`` under another home and zone
(``Pacific/Pago_Pago``, a day behind), the original deleted, and the replay
there passes with no flags: the recorded tool calls reach Claude Code as paths
in the new project, and ``copy.txt`` is written there. A changed prompt still
fails; two recordings of the task in the two set-ups are the same run to
``blackbox diff --masked``. Codex CLI, Gemini CLI and opencode do the same task
(Codex by a shell command, the others by their read and write tools).

opencode (a Bun-compiled binary) goes through the proxy by ``HTTPS_PROXY`` and
trusts the CA by ``NODE_EXTRA_CA_CERTS`` or ``SSL_CERT_FILE`` (either is enough,
without both it refuses the certificate; blackbox sets both). It is pointed at the fake by its project's
``opencode.json`` (the built-in Anthropic provider, the host mapped with
``--map-remote``), its config, data, cache and state under the home's XDG
folders. It takes its working directory from ``PWD``, not the process's own, so
the environment sets ``PWD`` as a shell would.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from claude_code_model import respond
from conftest import ROOT, remote_args
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

CLAUDE = ROOT / "tests" / "e2e" / "clients" / "claude-code" / "node_modules" / ".bin" / "claude"
PROMPT = "BB-COPY: copy the first line of notes.txt to copy.txt"
ARGS = ("--permission-mode", "acceptEdits")


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    if not CLAUDE.exists():
        pytest.fail(f"Claude Code is not installed at {CLAUDE}; scripts/setup-test-clients installs it")
    with FakeProvider(responder=respond) as p:
        yield p


def setup(base: Path, *parts: str) -> tuple[Path, Path]:
    """A project (with notes.txt) and a home, at base/parts/proj and base/<first>/home/<last>."""
    project = base.joinpath(*parts, "proj")
    project.mkdir(parents=True)
    (project / "notes.txt").write_text("Blackbox notes\nsecond line\n")
    home = base / "home" / parts[-1]
    home.mkdir(parents=True)
    return project, home


def blackbox(args: list[str], *, cwd: Path, home: Path, tz: str, user: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and not k.startswith(("CLAUDE", "ANTHROPIC"))}
    env.update(HOME=str(home), TZ=tz, USER=user, ANTHROPIC_API_KEY="sk-ant-test-not-a-real-key-0000", BLACKBOX_CONFIG="")
    return subprocess.run([sys.executable, "-m", "blackbox_mitm", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=240)


def test_claude_code_recorded_in_a_replays_in_b_with_its_paths_and_dates(provider: FakeProvider, tmp_path: Path, confdir: Path) -> None:
    project_a, home_a = setup(tmp_path / "A", "alice")
    cassette = tmp_path / "copy.json"
    rec = blackbox(
        ["record", "-o", str(cassette), "--confdir", str(confdir), *remote_args(provider.url), "--", str(CLAUDE), "-p", PROMPT, *ARGS],
        cwd=project_a,
        home=home_a,
        tz="Pacific/Kiritimati",
        user="alice",
    )
    assert rec.returncode == 0, rec.stderr
    assert (project_a / "copy.txt").read_text() == "Blackbox notes\n"
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    recorded = "".join(str(s.payload) for s in trace.steps[:-1])
    assert str(project_a) not in recorded and "<env:cwd>/notes.txt" in recorded and "<env:date>" in recorded
    assert trace.environment is not None and trace.environment["cwd"] == str(project_a)

    project_b, home_b = setup(tmp_path / "B", "ci", "builds")
    shutil.rmtree(project_b)
    shutil.copytree(project_a, project_b)
    (project_b / "copy.txt").unlink()
    shutil.rmtree(tmp_path / "A")

    rep = blackbox(
        ["replay", str(cassette), "--confdir", str(confdir), "--", str(CLAUDE), "-p", PROMPT, *ARGS],
        cwd=project_b,
        home=home_b,
        tz="Pacific/Pago_Pago",
        user="cibot",
    )
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert "3 of 3 model calls served from the recording, no divergence" in rep.stderr
    assert (project_b / "copy.txt").read_text() == "Blackbox notes\n"  # written by absolute path, in the new project
    assert not (tmp_path / "A").exists()

    changed = blackbox(
        ["replay", str(cassette), "--confdir", str(confdir), "--", str(CLAUDE), "-p", PROMPT + " please", *ARGS],
        cwd=project_b,
        home=home_b,
        tz="Pacific/Pago_Pago",
        user="cibot",
    )
    assert changed.returncode != 0 and "diverged" in changed.stderr

    # The same task recorded live in B is the same run.
    (project_b / "copy.txt").unlink()
    again = tmp_path / "copy-b.json"
    rec_b = blackbox(
        ["record", "-o", str(again), "--confdir", str(confdir), *remote_args(provider.url), "--", str(CLAUDE), "-p", PROMPT, *ARGS],
        cwd=project_b,
        home=home_b,
        tz="Pacific/Pago_Pago",
        user="cibot",
    )
    assert rec_b.returncode == 0, rec_b.stderr
    same = blackbox(["diff", str(cassette), str(again), "--masked"], cwd=project_b, home=home_b, tz="UTC", user="cibot")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "the same run under the masks" in same.stdout


# -- Codex CLI -----------------------------------------------------------------------------------

CODEX = ROOT / "tests" / "e2e" / "clients" / "codex" / "node_modules" / ".bin" / "codex"
CODEX_PROMPT = "Copy the first line of notes.txt to copy.txt."
CODEX_HOSTS = ("chatgpt.com", "ab.chatgpt.com", "api.github.com")  # as tests/e2e/test_codex.py


def _codex_script(project: Path) -> list[dict[str, Any]]:
    """The model: one exec reading and writing by absolute path, then its answer."""
    cmd = f"head -n 1 {project}/notes.txt > {project}/copy.txt && cat {project}/copy.txt"
    code = f"const r = await tools.exec_command({{cmd: {json.dumps(cmd)}, login: false}});\ntext(r.output);"
    return [{"custom_tool": "exec", "input": code}, {"text": "Copied: Blackbox notes."}]


def _codex(args: list[str], *, cwd: Path, home: Path, tz: str, user: str, key: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("https_proxy", "http_proxy", "openai_api_key")}
    env.update(HOME=str(home), CODEX_HOME=str(home / ".codex"), TZ=tz, USER=user, NO_COLOR="1", BLACKBOX_CONFIG="")
    if key:
        env["OPENAI_API_KEY"] = "sk-test-not-a-real-key-000"
    (home / ".codex").mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "blackbox_mitm", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )


def _codex_command(prompt: str = CODEX_PROMPT) -> list[str]:
    return [str(CODEX), "exec", "--skip-git-repo-check", "--ephemeral", "-s", "danger-full-access", prompt]


def test_codex_recorded_in_a_replays_in_b_with_its_paths_and_dates(tmp_path: Path, confdir: Path) -> None:
    from fake_responses_ws import FakeResponsesWs

    if not CODEX.exists():
        pytest.fail(f"Codex CLI is not installed at {CODEX}; scripts/setup-test-clients installs it")
    project_a, home_a = setup(tmp_path / "A", "alice")
    cassette = tmp_path / "codex.json"
    with FakeResponsesWs(_codex_script(project_a)) as fake:
        to_fake = ["--map-remote", f"|https://api\\.openai\\.com|{fake.url}"]
        for host in CODEX_HOSTS:
            to_fake += ["--host", host, "--map-remote", f"|https://{re.escape(host)}|{fake.url}"]
        rec = _codex(
            ["record", "-o", str(cassette), "--confdir", str(confdir), *to_fake, "--", *_codex_command()],
            cwd=project_a, home=home_a, tz="Pacific/Kiritimati", user="alice", key=True,
        )  # fmt: skip
    assert rec.returncode == 0, rec.stderr[-3000:]
    assert (project_a / "copy.txt").read_text() == "Blackbox notes\n"
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    recorded = json.dumps([s.payload for s in trace.steps[:-1]])
    assert str(project_a) not in recorded and "<env:cwd>/notes.txt" in recorded and "<env:date>" in recorded

    project_b, home_b = setup(tmp_path / "B", "ci", "builds")
    shutil.rmtree(project_b)
    shutil.copytree(project_a, project_b)
    (project_b / "copy.txt").unlink()
    shutil.rmtree(tmp_path / "A")
    b = {"cwd": project_b, "home": home_b, "tz": "Pacific/Pago_Pago", "user": "cibot", "key": False}
    rep = _codex(["replay", str(cassette), "--confdir", str(confdir), "--", *_codex_command()], **b)  # type: ignore[arg-type]
    assert rep.returncode == 0, rep.stderr[-3000:]
    assert rep.stdout == rec.stdout
    assert (project_b / "copy.txt").read_text() == "Blackbox notes\n"  # the recorded command ran in the new project
    changed = _codex(["replay", str(cassette), "--confdir", str(confdir), "--", *_codex_command(CODEX_PROMPT + " Now.")], **b)  # type: ignore[arg-type]
    assert changed.returncode != 0 and "diverged" in changed.stderr


# -- Gemini CLI ------------------------------------------------------------------------------------

GEMINI_CLI = ROOT / "tests" / "e2e" / "clients" / "gemini-cli" / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"
GEMINI_PROMPT = "Copy the first line of notes.txt to copy.txt."
GEMINI_SETTINGS = {  # as tests/e2e/test_gemini_e2e.py: no telemetry, no updates, the API key
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "security": {"auth": {"selectedType": "gemini-api-key"}},
}


def _gemini_model(project: Path) -> Any:
    """Gemini CLI's model: its router's JSON asks, then read_file and write_file by absolute path, then the answer."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":
            props = (config.get("responseJsonSchema") or {}).get("properties", {})
            if "complexity_score" in props:
                return {"text": json.dumps({"complexity_reasoning": "a two-file copy", "complexity_score": 10})}
            return {"text": json.dumps({"next_speaker": "user", "reasoning": "answered"})}
        last = (body.get("contents") or [{}])[-1]
        done = [p["functionResponse"].get("name") for p in last.get("parts") or [] if "functionResponse" in p]
        if "write_file" in done:
            return {"text": "Copied the first line to copy.txt."}
        if "read_file" in done:
            args = {"file_path": str(project / "copy.txt"), "content": "Blackbox notes\n"}
            return {"thought": "Now write it.", "signature": True, "function_calls": [{"name": "write_file", "args": args}]}
        args = {"file_path": str(project / "notes.txt")}
        return {"thought": "Read the notes first.", "signature": True, "function_calls": [{"name": "read_file", "args": args}]}

    return respond


def _gemini(args: list[str], *, cwd: Path, home: Path, tz: str, user: str, key: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and not k.startswith(("GEMINI", "GOOGLE"))}
    env.update(HOME=str(home), TZ=tz, USER=user, BLACKBOX_CONFIG="")
    if key:
        env["GEMINI_API_KEY"] = "AIzaSyBx9Q2mZ7kL4pW1cV8nR3tY6uH0jF5dG2a"
    (home / ".gemini").mkdir(exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))
    return subprocess.run(
        [sys.executable, "-m", "blackbox_mitm", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_gemini_cli_recorded_in_a_replays_in_b_with_its_paths_and_dates(tmp_path: Path, confdir: Path) -> None:
    from fake_gemini import FakeGemini

    if not GEMINI_CLI.exists():
        pytest.fail(f"Gemini CLI is not installed at {GEMINI_CLI}; scripts/setup-test-clients installs it")
    cli = ["node", str(GEMINI_CLI), "--yolo", "--skip-trust", "-p"]
    project_a, home_a = setup(tmp_path / "A", "alice")
    cassette = tmp_path / "gemini.json"
    with FakeGemini(responder=_gemini_model(project_a)) as fake:
        remote = ["--map-remote", rf"|https://generativelanguage\.googleapis\.com|{fake.url}"]
        rec = _gemini(
            ["record", "-o", str(cassette), "--confdir", str(confdir), *remote, "--", *cli, GEMINI_PROMPT],
            cwd=project_a, home=home_a, tz="Pacific/Kiritimati", user="alice", key=True,
        )  # fmt: skip
    assert rec.returncode == 0, rec.stderr[-3000:]
    assert (project_a / "copy.txt").read_text() == "Blackbox notes\n"
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    recorded = json.dumps([s.payload for s in trace.steps[:-1]])
    assert str(project_a) not in recorded and "<env:cwd>/notes.txt" in recorded and "<env:date" in recorded

    project_b, home_b = setup(tmp_path / "B", "ci", "builds")
    shutil.rmtree(project_b)
    shutil.copytree(project_a, project_b)
    (project_b / "copy.txt").unlink()
    shutil.rmtree(tmp_path / "A")
    b = {"cwd": project_b, "home": home_b, "tz": "Pacific/Pago_Pago", "user": "cibot", "key": False}
    rep = _gemini(["replay", str(cassette), "--confdir", str(confdir), "--", *cli, GEMINI_PROMPT], **b)  # type: ignore[arg-type]
    assert rep.returncode == 0, rep.stderr[-3000:]
    assert rep.stdout == rec.stdout
    assert (project_b / "copy.txt").read_text() == "Blackbox notes\n"  # written by absolute path, in the new project
    changed = _gemini(["replay", str(cassette), "--confdir", str(confdir), "--", *cli, GEMINI_PROMPT + " Now."], **b)  # type: ignore[arg-type]
    assert changed.returncode != 0 and "diverged" in changed.stderr


# -- opencode --------------------------------------------------------------------------------------

OPENCODE = ROOT / "tests" / "e2e" / "clients" / "opencode" / "node_modules" / ".bin" / "opencode"
OPENCODE_PROMPT = "Copy the first line of notes.txt to copy.txt."


def _opencode_config() -> dict[str, Any]:
    """The project's opencode.json: the built-in Anthropic provider (its host mapped to the fake), edits allowed."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": "anthropic/claude-sonnet-4-5",
        "provider": {"anthropic": {"options": {"baseURL": "https://api.anthropic.com/v1"}}},
        "permission": {"edit": "allow", "bash": "allow"},
    }


def _opencode_model(project: Path) -> Any:
    """opencode's model: a title for the session; then read by absolute path, write by absolute path, answer."""

    def respond(kind: str, body: dict[str, Any]) -> dict[str, Any]:
        if "title generator" in json.dumps(body.get("system")):
            return {"text": "Copy the notes"}
        used = [
            block.get("name")
            for message in body.get("messages", [])
            if message.get("role") == "assistant" and isinstance(message.get("content"), list)
            for block in message["content"]
            if block.get("type") == "tool_use"
        ]
        if "write" in used:
            return {"text": "Copied the first line to copy.txt."}
        if "read" in used:
            return {"tool_calls": [{"name": "write", "arguments": {"filePath": str(project / "copy.txt"), "content": "Blackbox notes\n"}}]}
        return {"tool_calls": [{"name": "read", "arguments": {"filePath": str(project / "notes.txt")}}]}

    return respond


def _opencode(args: list[str], *, cwd: Path, home: Path, tz: str, user: str, key: bool) -> subprocess.CompletedProcess[str]:
    """blackbox with opencode's home and XDG folders under ``home``; PWD is set, as a shell would: opencode runs where it says."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and not k.startswith(("ANTHROPIC", "OPENCODE", "XDG_"))}
    env.update(
        HOME=str(home), PWD=str(cwd), TZ=tz, USER=user, BLACKBOX_CONFIG="",
        XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CACHE_HOME=str(home / ".cache"), XDG_STATE_HOME=str(home / ".local" / "state"),
        OPENCODE_DISABLE_MODELS_FETCH="1", OPENCODE_DISABLE_AUTOUPDATE="1",
    )  # fmt: skip
    if key:
        env["ANTHROPIC_API_KEY"] = "sk-ant-test-not-a-real-key-0000"
    return subprocess.run(
        [sys.executable, "-m", "blackbox_mitm", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_opencode_recorded_in_a_replays_in_b_with_its_paths_and_dates(tmp_path: Path, confdir: Path) -> None:
    if not OPENCODE.exists():
        pytest.fail(f"opencode is not installed at {OPENCODE}; scripts/setup-test-clients installs it")
    cli = [str(OPENCODE), "run"]
    project_a, home_a = setup(tmp_path / "A", "alice")
    (project_a / "opencode.json").write_text(json.dumps(_opencode_config()))
    cassette = tmp_path / "opencode.json"
    with FakeProvider(responder=_opencode_model(project_a)) as fake:
        rec = _opencode(
            ["record", "-o", str(cassette), "--confdir", str(confdir), *remote_args(fake.url), "--", *cli, OPENCODE_PROMPT],
            cwd=project_a, home=home_a, tz="Pacific/Kiritimati", user="alice", key=True,
        )  # fmt: skip
    assert rec.returncode == 0, rec.stderr[-3000:]
    assert (project_a / "copy.txt").read_text() == "Blackbox notes\n"
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    recorded = json.dumps([s.payload for s in trace.steps[:-1]])
    assert str(project_a) not in recorded and "Working directory: <env:cwd>" in recorded and "<env:date" in recorded
    assert "<env:cwd>/notes.txt" in recorded and "<env:cwd>/copy.txt" in recorded

    project_b, home_b = setup(tmp_path / "B", "ci", "builds")
    shutil.rmtree(project_b)
    shutil.copytree(project_a, project_b)
    (project_b / "copy.txt").unlink()
    shutil.rmtree(tmp_path / "A")
    b = {"cwd": project_b, "home": home_b, "tz": "Pacific/Pago_Pago", "user": "cibot", "key": False}
    for _ in range(3):  # a fresh project copy each time: the file written is the replay's own
        (project_b / "copy.txt").unlink(missing_ok=True)
        rep = _opencode(["replay", str(cassette), "--confdir", str(confdir), "--", *cli, OPENCODE_PROMPT], **b)  # type: ignore[arg-type]
        assert rep.returncode == 0, rep.stderr[-3000:]
        assert "Copied the first line to copy.txt." in rep.stdout
        assert (project_b / "copy.txt").read_text() == "Blackbox notes\n"  # written by absolute path, in the new project
    assert not (tmp_path / "A").exists()
    changed = _opencode(["replay", str(cassette), "--confdir", str(confdir), "--", *cli, OPENCODE_PROMPT + " Now."], **b)  # type: ignore[arg-type]
    assert changed.returncode != 0 and "diverged" in changed.stderr

    # The same task recorded live in B is the same run.
    (project_b / "copy.txt").unlink()
    again = tmp_path / "opencode-b.json"
    with FakeProvider(responder=_opencode_model(project_b)) as fake:
        rec_b = _opencode(
            ["record", "-o", str(again), "--confdir", str(confdir), *remote_args(fake.url), "--", *cli, OPENCODE_PROMPT],
            **{**b, "key": True},  # type: ignore[arg-type]
        )
        agents = {r["headers"].get("user-agent", "") for r in fake.requests}
    assert rec_b.returncode == 0, rec_b.stderr[-3000:]
    assert agents and all(a.startswith("opencode/") for a in agents), agents  # what matcher/profiles.py chooses it by
    same = _opencode(["diff", str(cassette), str(again), "--masked"], **{**b, "tz": "UTC"})  # type: ignore[arg-type]
    assert same.returncode == 0, same.stdout + same.stderr
    assert "the same run under the masks" in same.stdout
