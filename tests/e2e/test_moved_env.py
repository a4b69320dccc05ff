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

The four agents take the same steps (``moved_run``): each is described by an
``Agent`` (its command, its environment, its fake model) and nothing else.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from claude_code_model import respond
from conftest import ROOT, remote_args
from fake_gemini import FakeGemini
from fake_provider import FakeProvider
from fake_responses_ws import FakeResponsesWs

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

NOTES = "Blackbox notes\nsecond line\n"
COPIED = "Blackbox notes\n"


@dataclass(frozen=True)
class Place:
    """Where a run happens: its project, its home, its time zone and its user."""

    cwd: Path
    home: Path
    tz: str
    user: str


@dataclass(frozen=True)
class Agent:
    """One agent program in the moved-environment run: how it is started, what it needs, what its model is."""

    name: str
    program: Path  # must exist (scripts/setup-test-clients installs it)
    command: Callable[[str], list[str]]  # the prompt -> its command line
    prompt: str
    fake: Callable[[Path], AbstractContextManager[Any]]  # the project -> its fake model, running
    remote: Callable[[Any], list[str]]  # the running fake -> blackbox's --host/--map-remote arguments
    key: dict[str, str]  # its (fake) API key, given while recording
    markers: tuple[str, ...]  # what the recording holds instead of the project's path and the date
    strip: tuple[str, ...] = ()  # its variables (prefixes) taken out of the inherited environment
    env: Callable[[Place], dict[str, str]] = lambda place: {}
    prepare: Callable[[Path, Path], None] = lambda project, home: None  # a project and a home, before it runs there
    key_in_replay: bool = False  # it will not start without a key, even offline
    stdin: int | None = subprocess.DEVNULL
    answer: str | None = None  # what a replay prints; None: exactly what the recording printed
    served: str | None = None  # what a replay says it served
    replays: int = 1  # strict replays in the moved copy (each with the file to write removed first)
    again: bool = False  # record the task again in the moved set-up: `blackbox diff --masked` says it is the same run
    check_fake: Callable[[Any], None] = lambda fake: None  # on the fake, after recording again

    def blackbox(self, args: list[str], place: Place, *, key: bool) -> subprocess.CompletedProcess[str]:
        """``blackbox ARGS`` in ``place``, the agent's environment only: no proxy, none of its own variables inherited."""
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and not k.startswith(self.strip)}
        env.update(HOME=str(place.home), TZ=place.tz, USER=place.user, BLACKBOX_CONFIG="", **self.env(place))
        if key or self.key_in_replay:
            env.update(self.key)
        self.prepare(place.cwd, place.home)
        return subprocess.run(
            [sys.executable, "-m", "blackbox_mitm", *args],
            cwd=place.cwd,
            env=env,
            stdin=self.stdin,
            capture_output=True,
            text=True,
            timeout=240,
        )

    def record(self, cassette: Path, place: Place, confdir: Path) -> tuple[subprocess.CompletedProcess[str], Any]:
        with self.fake(place.cwd) as fake:
            args = ["record", "-o", str(cassette), "--confdir", str(confdir), *self.remote(fake), "--", *self.command(self.prompt)]
            return self.blackbox(args, place, key=True), fake

    def replay(self, cassette: Path, place: Place, confdir: Path, prompt: str) -> subprocess.CompletedProcess[str]:
        return self.blackbox(["replay", str(cassette), "--confdir", str(confdir), "--", *self.command(prompt)], place, key=False)


def setup(base: Path, *parts: str) -> tuple[Path, Path]:
    """A project (with notes.txt) and a home, at base/parts/proj and base/<first>/home/<last>."""
    project = base.joinpath(*parts, "proj")
    project.mkdir(parents=True)
    (project / "notes.txt").write_text(NOTES)
    home = base / "home" / parts[-1]
    home.mkdir(parents=True)
    return project, home


def moved_run(agent: Agent, tmp_path: Path, confdir: Path) -> None:
    """Record in A (a day ahead), move the project to B (a day behind, another home and user), delete A; the strict
    replay in B passes with no flags and writes B's copy.txt; a changed prompt diverges."""
    if not agent.program.exists():
        pytest.fail(f"{agent.name} is not installed at {agent.program}; scripts/setup-test-clients installs it")
    project_a, home_a = setup(tmp_path / "A", "alice")
    a = Place(project_a, home_a, "Pacific/Kiritimati", "alice")
    cassette = tmp_path / f"{agent.name}.json"
    rec, _ = agent.record(cassette, a, confdir)
    assert rec.returncode == 0, rec.stderr[-3000:]
    assert (project_a / "copy.txt").read_text() == COPIED
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    recorded = json.dumps([s.payload for s in trace.steps[:-1]])
    assert str(project_a) not in recorded
    for marker in agent.markers:
        assert marker in recorded, marker
    assert trace.environment is not None and trace.environment["cwd"] == str(project_a)

    project_b, home_b = setup(tmp_path / "B", "ci", "builds")
    shutil.rmtree(project_b)
    shutil.copytree(project_a, project_b)
    shutil.rmtree(tmp_path / "A")
    b = Place(project_b, home_b, "Pacific/Pago_Pago", "cibot")
    for _ in range(agent.replays):  # the file written is the replay's own
        (project_b / "copy.txt").unlink(missing_ok=True)
        rep = agent.replay(cassette, b, confdir, agent.prompt)
        assert rep.returncode == 0, rep.stderr[-3000:]
        if agent.answer is None:
            assert rep.stdout == rec.stdout
        else:
            assert agent.answer in rep.stdout
        if agent.served is not None:
            assert agent.served in rep.stderr
        assert (project_b / "copy.txt").read_text() == COPIED  # written by absolute path, in the new project
    assert not (tmp_path / "A").exists()
    changed = agent.replay(cassette, b, confdir, agent.prompt + " Now.")
    assert changed.returncode != 0 and "diverged" in changed.stderr
    if agent.again:
        _recorded_again_is_the_same_run(agent, cassette, b, confdir)


def _recorded_again_is_the_same_run(agent: Agent, cassette: Path, b: Place, confdir: Path) -> None:
    (b.cwd / "copy.txt").unlink()
    again = cassette.with_name(f"{agent.name}-b.json")
    rec_b, fake = agent.record(again, b, confdir)
    assert rec_b.returncode == 0, rec_b.stderr[-3000:]
    agent.check_fake(fake)
    utc = Place(b.cwd, b.home, "UTC", b.user)
    same = agent.blackbox(["diff", str(cassette), str(again), "--masked"], utc, key=False)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "the same run under the masks" in same.stdout


# -- Claude Code -----------------------------------------------------------------------------------

CLAUDE = ROOT / "tests" / "e2e" / "clients" / "claude-code" / "node_modules" / ".bin" / "claude"

CLAUDE_CODE = Agent(
    name="claude-code",
    program=CLAUDE,
    command=lambda prompt: [str(CLAUDE), "-p", prompt, "--permission-mode", "acceptEdits"],
    prompt="BB-COPY: copy the first line of notes.txt to copy.txt",
    fake=lambda project: FakeProvider(responder=respond),  # examples/claude_code_model.py reads the cwd it is told
    remote=lambda fake: remote_args(fake.url),
    key={"ANTHROPIC_API_KEY": "sk-ant-test-not-a-real-key-0000"},
    key_in_replay=True,
    markers=("<env:cwd>/notes.txt", "<env:date>"),
    strip=("CLAUDE", "ANTHROPIC"),
    stdin=None,
    served="3 of 3 model calls served from the recording, no divergence",
    again=True,
)


def test_claude_code_recorded_in_a_replays_in_b_with_its_paths_and_dates(tmp_path: Path, confdir: Path) -> None:
    moved_run(CLAUDE_CODE, tmp_path, confdir)


# -- Codex CLI -------------------------------------------------------------------------------------

CODEX = ROOT / "tests" / "e2e" / "clients" / "codex" / "node_modules" / ".bin" / "codex"
CODEX_HOSTS = ("chatgpt.com", "ab.chatgpt.com", "api.github.com")  # as tests/e2e/test_codex.py


def _codex_script(project: Path) -> list[dict[str, Any]]:
    """The model: one exec reading and writing by absolute path, then its answer."""
    cmd = f"head -n 1 {project}/notes.txt > {project}/copy.txt && cat {project}/copy.txt"
    code = f"const r = await tools.exec_command({{cmd: {json.dumps(cmd)}, login: false}});\ntext(r.output);"
    return [{"custom_tool": "exec", "input": code}, {"text": "Copied: Blackbox notes."}]


def _codex_remote(fake: FakeResponsesWs) -> list[str]:
    to_fake = ["--map-remote", f"|https://api\\.openai\\.com|{fake.url}"]
    for host in CODEX_HOSTS:
        to_fake += ["--host", host, "--map-remote", f"|https://{re.escape(host)}|{fake.url}"]
    return to_fake


CODEX_CLI = Agent(
    name="codex",
    program=CODEX,
    command=lambda prompt: [str(CODEX), "exec", "--skip-git-repo-check", "--ephemeral", "-s", "danger-full-access", prompt],
    prompt="Copy the first line of notes.txt to copy.txt.",
    fake=lambda project: FakeResponsesWs(_codex_script(project)),
    remote=_codex_remote,
    key={"OPENAI_API_KEY": "sk-test-not-a-real-key-000"},
    markers=("<env:cwd>/notes.txt", "<env:date>"),
    strip=("OPENAI_API_KEY",),
    env=lambda place: {"CODEX_HOME": str(place.home / ".codex"), "NO_COLOR": "1"},
    prepare=lambda project, home: (home / ".codex").mkdir(exist_ok=True),
)


def test_codex_recorded_in_a_replays_in_b_with_its_paths_and_dates(tmp_path: Path, confdir: Path) -> None:
    moved_run(CODEX_CLI, tmp_path, confdir)


# -- Gemini CLI ------------------------------------------------------------------------------------

GEMINI = ROOT / "tests" / "e2e" / "clients" / "gemini-cli" / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"
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
            args = {"file_path": str(project / "copy.txt"), "content": COPIED}
            return {"thought": "Now write it.", "signature": True, "function_calls": [{"name": "write_file", "args": args}]}
        args = {"file_path": str(project / "notes.txt")}
        return {"thought": "Read the notes first.", "signature": True, "function_calls": [{"name": "read_file", "args": args}]}

    return respond


def _gemini_home(project: Path, home: Path) -> None:
    (home / ".gemini").mkdir(exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))


GEMINI_CLI = Agent(
    name="gemini",
    program=GEMINI,
    command=lambda prompt: ["node", str(GEMINI), "--yolo", "--skip-trust", "-p", prompt],
    prompt="Copy the first line of notes.txt to copy.txt.",
    fake=lambda project: FakeGemini(responder=_gemini_model(project)),
    remote=lambda fake: ["--map-remote", rf"|https://generativelanguage\.googleapis\.com|{fake.url}"],
    key={"GEMINI_API_KEY": "AIzaSyBx9Q2mZ7kL4pW1cV8nR3tY6uH0jF5dG2a"},
    markers=("<env:cwd>/notes.txt", "<env:date"),
    strip=("GEMINI", "GOOGLE"),
    prepare=_gemini_home,
)


def test_gemini_cli_recorded_in_a_replays_in_b_with_its_paths_and_dates(tmp_path: Path, confdir: Path) -> None:
    moved_run(GEMINI_CLI, tmp_path, confdir)


# -- opencode --------------------------------------------------------------------------------------

OPENCODE = ROOT / "tests" / "e2e" / "clients" / "opencode" / "node_modules" / ".bin" / "opencode"
OPENCODE_CONFIG = {  # the project's opencode.json: the built-in Anthropic provider (its host mapped to the fake), edits allowed
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
            return {"tool_calls": [{"name": "write", "arguments": {"filePath": str(project / "copy.txt"), "content": COPIED}}]}
        return {"tool_calls": [{"name": "read", "arguments": {"filePath": str(project / "notes.txt")}}]}

    return respond


def _opencode_env(place: Place) -> dict[str, str]:
    """Its home's XDG folders; PWD set as a shell would: opencode runs where PWD says."""
    home = place.home
    return {
        "PWD": str(place.cwd), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"), "XDG_STATE_HOME": str(home / ".local" / "state"),
        "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
    }  # fmt: skip


def _opencode_project(project: Path, home: Path) -> None:
    (project / "opencode.json").write_text(json.dumps(OPENCODE_CONFIG))


def _opencode_agents(fake: FakeProvider) -> None:
    agents = {r["headers"].get("user-agent", "") for r in fake.requests}
    assert agents and all(a.startswith("opencode/") for a in agents), agents  # what matcher/profiles.py chooses it by


OPENCODE_AGENT = Agent(
    name="opencode",
    program=OPENCODE,
    command=lambda prompt: [str(OPENCODE), "run", prompt],
    prompt="Copy the first line of notes.txt to copy.txt.",
    fake=lambda project: FakeProvider(responder=_opencode_model(project)),
    remote=lambda fake: remote_args(fake.url),
    key={"ANTHROPIC_API_KEY": "sk-ant-test-not-a-real-key-0000"},
    markers=("Working directory: <env:cwd>", "<env:date", "<env:cwd>/notes.txt", "<env:cwd>/copy.txt"),
    strip=("ANTHROPIC", "OPENCODE", "XDG_"),
    env=_opencode_env,
    prepare=_opencode_project,
    answer="Copied the first line to copy.txt.",
    replays=3,
    again=True,
    check_fake=_opencode_agents,
)


def test_opencode_recorded_in_a_replays_in_b_with_its_paths_and_dates(tmp_path: Path, confdir: Path) -> None:
    moved_run(OPENCODE_AGENT, tmp_path, confdir)
