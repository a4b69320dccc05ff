"""End to end: unmodified agents over the official SDKs, through a real proxy with real TLS interception.

record (against the fake provider) -> verify -> replay with the provider stopped
-> the agent prints the same answer. The agents use the SDKs' default base URLs
(https://api.openai.com, https://api.anthropic.com); only HTTPS_PROXY and the CA
bundle that `blackbox` sets route them through mitmproxy.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import EXAMPLES, ROOT, blackbox, free_port, map_remote_for, remote_args, wait_for_port
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

QUESTION = "What's the weather in Paris and Lyon?"

AGENTS = {
    "python-openai": [sys.executable, str(EXAMPLES / "openai_weather_agent.py")],
    "python-anthropic": [sys.executable, str(EXAMPLES / "anthropic_weather_agent.py")],
    "node-openai": ["node", str(EXAMPLES / "node" / "weather_agent.js")],
}


def _record(
    tmp_path: Path, confdir: Path, provider: FakeProvider, agent: list[str], question: str = QUESTION, name: str = "run.json"
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    cassette = tmp_path / name
    remote = remote_args(provider.url)
    proc = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *remote, "--", *agent, question)
    return cassette, proc


@pytest.mark.parametrize("agent_name", list(AGENTS))
def test_record_verify_replay_offline_gives_identical_output(agent_name: str, tmp_path: Path, confdir: Path) -> None:
    if agent_name.startswith("node") and shutil.which("node") is None:
        pytest.skip("node is not on PATH")
    agent = AGENTS[agent_name]
    with FakeProvider() as provider:
        cassette, rec = _record(tmp_path, confdir, provider, agent)
        assert rec.returncode == 0, rec.stderr
        assert len(provider.requests) == 2  # one tool round (two parallel calls), then the answer
    recorded_answer = rec.stdout.strip()
    assert "Paris" in recorded_answer and "Lyon" in recorded_answer

    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    types = [s.type for s in trace.steps]
    assert types == [
        "model_input",
        "model_output",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "model_input",
        "model_output",
        "metadata",
    ]
    assert trace.steps[-1].payload["event"] == "run_completed"
    assert trace.steps[-1].payload["result"] == recorded_answer
    calls = trace.steps[1].payload["calls"]
    assert [c["toolCallId"] for c in calls] == ["call-0", "call-1"]
    assert [c["toolInput"] for c in calls] == [{"city": "Paris"}, {"city": "Lyon"}]

    # The provider is gone: the replay must not need it.
    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *agent, QUESTION)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout.strip() == recorded_answer
    assert "2 of 2 model calls served" in rep.stderr


def test_changed_prompt_fails_the_replay_and_names_the_place(tmp_path: Path, confdir: Path) -> None:
    agent = AGENTS["python-openai"]
    with FakeProvider() as provider:
        cassette, rec = _record(tmp_path, confdir, provider, agent, question="What's the weather in Paris?")
        assert rec.returncode == 0, rec.stderr
    report = tmp_path / "report.json"
    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--report", str(report), "--", *agent, "What's the weather in Lyon?")
    assert rep.returncode != 0
    assert "message 0 (user): content differs at character 22" in rep.stderr
    assert 'recorded: "What\'s the weather in Paris?"' in rep.stderr
    status = orjson.loads(report.read_bytes())
    assert status["first_divergence"]["difference"]["field"] == "content"
    assert status["first_divergence"]["step"] == 0
    assert report.stat().st_mode & 0o777 == 0o600  # the report quotes prompts: its owner's only


def test_offline_replay_opens_no_upstream_connection(tmp_path: Path, confdir: Path) -> None:
    agent = AGENTS["python-openai"]
    with FakeProvider() as provider:
        cassette, rec = _record(tmp_path, confdir, provider, agent)
        assert rec.returncode == 0, rec.stderr
        before_requests, before_connections = len(provider.requests), provider.connections
        # The provider is still listening: nothing may reach it.
        rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *agent, QUESTION)
        assert rep.returncode == 0, rep.stderr
        assert len(provider.requests) == before_requests
        assert provider.connections == before_connections


def test_api_key_never_enters_the_cassette(tmp_path: Path, confdir: Path) -> None:
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8" * 3
    agent = AGENTS["python-openai"]
    with FakeProvider() as provider:
        cassette = tmp_path / "run.json"
        remote = remote_args(provider.url)
        rec = blackbox(
            "record", "-o", str(cassette), "--confdir", str(confdir), *remote, "--", *agent, QUESTION, env={"OPENAI_API_KEY": key}
        )
        assert rec.returncode == 0, rec.stderr
        # The key went over the wire to the provider, in the header...
        assert provider.requests[0]["headers"]["authorization"] == f"Bearer {key}"
    # ...and is nowhere in the cassette.
    assert key.encode() not in cassette.read_bytes()
    assert b"authorization" not in cassette.read_bytes().lower()

    # A prompt carrying the key is refused rather than written.
    with FakeProvider() as provider:
        leaky = tmp_path / "leaky.json"
        remote = remote_args(provider.url)
        rec = blackbox(
            "record",
            "-o",
            str(leaky),
            "--confdir",
            str(confdir),
            *remote,
            "--",
            *agent,
            f"My key is {key}. Weather in Paris?",
            env={"OPENAI_API_KEY": key},
        )
        assert rec.returncode != 0
        assert "refused to record" in rec.stderr
    assert key.encode() not in leaky.read_bytes()


def test_refused_field_errors_through_the_sdk_without_retry(tmp_path: Path, confdir: Path) -> None:
    script = tmp_path / "n2.py"
    script.write_text(
        "import openai, sys\n"
        "client = openai.OpenAI()\n"
        "try:\n"
        "    client.chat.completions.create(model='gpt-4o-mini', n=2, messages=[{'role': 'user', 'content': 'hi'}])\n"
        "except openai.BadRequestError as e:\n"
        "    print(type(e).__name__, e.message); sys.exit(3)\n"
    )
    with FakeProvider() as provider:
        cassette = tmp_path / "run.json"
        remote = remote_args(provider.url)
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), "-v", *remote, "--", sys.executable, str(script))
        assert rec.returncode == 3, rec.stderr
        assert "BadRequestError" in rec.stdout and "BlackboxUnsupportedError: n:" in rec.stdout
        assert provider.requests == []  # never forwarded
    assert rec.stderr.count("refused: BlackboxUnsupportedError") == 1  # exactly one attempt: the SDK did not retry
    trace = load_trace(cassette)
    assert [s.type for s in trace.steps] == ["metadata"]
    assert trace.steps[0].payload["reason"] == "process_exit"


def test_mitmdump_script_records_and_replays(tmp_path: Path, confdir: Path) -> None:
    """The addon file users hand to `mitmdump -s`, in a real mitmdump process."""
    import os
    import signal
    import subprocess

    mitmdump = Path(sys.executable).with_name("mitmdump")
    agent = AGENTS["python-openai"]

    def run(mode: str, *extra: str) -> tuple[subprocess.Popen[str], int]:
        port = free_port()
        proc = subprocess.Popen(
            [str(mitmdump), "-q", "--listen-host", "127.0.0.1", "--listen-port", str(port), "--set", f"confdir={confdir}",
             "-s", str(ROOT / "addon" / "blackbox_addon.py"), "--set", f"blackbox_mode={mode}", "--set", f"blackbox_cassette={tmp_path / 'run.json'}", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        wait_for_port(proc, port, "mitmdump")
        return proc, port

    from blackbox_mitm.proxy.environment import client_env

    with FakeProvider() as provider:
        remote = []
        for spec in map_remote_for(provider.url):
            remote += ["--set", f"map_remote={spec}"]
        proc, port = run("record", *remote)
        try:
            env = client_env(f"http://127.0.0.1:{port}", confdir=confdir)
            env["OPENAI_API_KEY"] = "sk-test-not-a-real-key-000"
            out = subprocess.run([*agent, QUESTION], env=env, capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, out.stderr
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(60)
    trace = load_trace(tmp_path / "run.json")
    assert verify_trace(trace) == []
    assert trace.steps[-1].payload == {"event": "run_completed", "status": "success", "result": out.stdout.strip()}

    report = tmp_path / "report.json"
    proc, port = run("replay", "--set", f"blackbox_report={report}")
    try:
        env = client_env(f"http://127.0.0.1:{port}", confdir=confdir)
        env["OPENAI_API_KEY"] = "sk-test-not-a-real-key-000"
        again = subprocess.run([*agent, QUESTION], env=env, capture_output=True, text=True, timeout=120)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
    assert again.stdout == out.stdout
    status = orjson.loads(report.read_bytes())
    assert status["model_calls_served"] == 2 and status["exhausted_calls"] == 0
    assert not os.path.exists(str(tmp_path / "run.json") + ".journal")


def test_blackbox_confdir_names_the_ca_for_the_proxy_and_the_agent_alike(tmp_path: Path, confdir: Path) -> None:
    agent = AGENTS["python-openai"]
    with FakeProvider() as provider:
        remote = remote_args(provider.url)
        cassette = tmp_path / "run.json"
        rec = blackbox("record", "-o", str(cassette), *remote, "--", *agent, QUESTION, env={"BLACKBOX_CONFDIR": str(confdir)})
        assert rec.returncode == 0, rec.stderr
        assert len(provider.requests) == 2


def test_unreadable_input_exits_2_not_like_a_divergence(tmp_path: Path, confdir: Path) -> None:
    missing = blackbox("replay", str(tmp_path / "missing.json"), "--confdir", str(confdir), "--", "true")
    assert missing.returncode == 2 and "no such file" in missing.stderr
    existing = tmp_path / "exists.json"
    existing.write_text("{}")
    again = blackbox("record", "-o", str(existing), "--confdir", str(confdir), "--", "true")
    assert again.returncode == 2 and "already exists" in again.stderr
    assert existing.read_text() == "{}"
