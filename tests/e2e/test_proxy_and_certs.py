"""`blackbox proxy` (a long-running proxy, as for a container), `blackbox certs`, and provider errors while recording."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from conftest import EXAMPLES, ROOT, blackbox, free_port, remote_args, wait_for_port
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.cli import main
from blackbox_mitm.codecs.verified import verify_trace
from blackbox_mitm.proxy.environment import client_env

pytestmark = pytest.mark.e2e

AGENT = [sys.executable, str(EXAMPLES / "anthropic_weather_agent.py"), "What's the weather in Paris?"]


def _proxy(confdir: Path, *args: str) -> tuple[subprocess.Popen[str], int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "blackbox_mitm", "proxy", "--listen-port", str(port), "--confdir", str(confdir), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_port(proc, port, "blackbox proxy")
    return proc, port


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return err


def _agent_env(confdir: Path, port: int) -> dict[str, str]:
    env = client_env(f"http://127.0.0.1:{port}", confdir=confdir)
    env["ANTHROPIC_API_KEY"] = "sk-test-not-a-real-key-000"
    return env


def test_long_running_proxy_records_then_replays(tmp_path: Path, confdir: Path) -> None:
    cassette = tmp_path / "container-run.json"
    with FakeProvider() as provider:
        remote = remote_args(provider.url)
        proc, port = _proxy(confdir, "--mode", "record", "--cassette", str(cassette), *remote)
        try:
            out = subprocess.run(AGENT, env=_agent_env(confdir, port), capture_output=True, text=True, timeout=120)
        finally:
            err = _stop(proc)
        assert out.returncode == 0, out.stderr
    assert "listening on http://127.0.0.1:" in err
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    # The run ended with the proxy: its last answer was final, so it completed.
    assert trace.steps[-1].payload == {"event": "run_completed", "status": "success", "result": out.stdout.strip()}

    report = tmp_path / "report.json"
    proc, port = _proxy(confdir, "--mode", "replay", "--cassette", str(cassette), "--report", str(report))
    try:
        again = subprocess.run(AGENT, env=_agent_env(confdir, port), capture_output=True, text=True, timeout=120)
    finally:
        _stop(proc)
    assert again.stdout == out.stdout
    status = orjson.loads(report.read_bytes())
    assert status["verdict"] == "ok" and status["model_calls_served"] == 2


def test_provider_errors_pass_through_and_the_retried_call_is_recorded(tmp_path: Path, confdir: Path) -> None:
    cassette = tmp_path / "retried.json"
    script: list[dict[str, Any]] = [{"status": 429, "times": 1}, {"status": 529, "times": 1}, {"text": "Paris: sunny."}]
    agent = [sys.executable, str(EXAMPLES / "anthropic_weather_agent.py"), "Hello"]
    with FakeProvider(script) as provider:
        remote = remote_args(provider.url)
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *remote, "--", *agent)
        assert rec.returncode == 0, rec.stderr
        assert len(provider.requests) == 3  # the SDK saw both errors and retried
        retry_counts = [r["headers"].get("x-stainless-retry-count") for r in provider.requests]
        assert retry_counts == ["0", "1", "2"]
    trace = load_trace(cassette)
    assert [s.type for s in trace.steps] == ["model_input", "model_output", "metadata"]
    assert {k: v for k, v in trace.steps[1].payload.items() if k != "tokens"} == {"type": "final_answer", "text": "Paris: sunny."}
    assert trace.steps[1].payload["tokens"]["output"] > 0  # the usage of the answer that got through, in neutral names
    assert b"retry" not in cassette.read_bytes()  # per-attempt headers are never stored


def test_certs_prints_where_the_ca_is_and_never_the_key(tmp_path: Path) -> None:
    confdir = tmp_path / "fresh-confdir"
    result = CliRunner().invoke(main, ["certs", "--confdir", str(confdir)])
    assert result.exit_code == 0, result.output
    cert = confdir / "mitmproxy-ca-cert.pem"
    assert cert.exists()  # created on first use
    assert str(cert) in result.output
    assert f"export NODE_EXTRA_CA_CERTS={cert}" in result.output
    bundle_line = next(line for line in result.output.splitlines() if line.startswith("export SSL_CERT_FILE="))
    bundle = Path(bundle_line.split("=", 1)[1])
    data = bundle.read_text()
    assert cert.read_text().strip() in data and data.count("BEGIN CERTIFICATE") > 1  # system roots kept
    assert "PRIVATE KEY" not in result.output and "PRIVATE KEY" not in data
