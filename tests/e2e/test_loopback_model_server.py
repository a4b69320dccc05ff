"""End to end: a model server on loopback (an Ollama-style OpenAI-compatible server on localhost) recorded when asked.

By default loopback stays in NO_PROXY (an agent's local services are not the
provider). ``--host localhost`` names it: ``blackbox record`` then routes
``localhost`` through the proxy and records its model calls; an offline replay
answers them with the server gone.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, blackbox
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.proxy.environment import client_env

pytestmark = pytest.mark.e2e

AGENT = [sys.executable, str(EXAMPLES / "openai_weather_agent.py")]
QUESTION = "What's the weather in Paris and Lyon?"


def test_loopback_leaves_no_proxy_only_when_named(confdir: Path) -> None:
    default = client_env("http://127.0.0.1:1", confdir=confdir, base={})
    assert default["NO_PROXY"].split(",") == ["localhost", "127.0.0.1", "::1"]
    named = client_env(
        "http://127.0.0.1:1", confdir=confdir, base={"NO_PROXY": "localhost:11434,corp.example"}, proxied_loopback=["localhost"]
    )
    assert named["NO_PROXY"].split(",") == ["corp.example", "127.0.0.1", "::1"]


def test_a_model_server_on_localhost_is_recorded_with_host_localhost_and_replays_offline(tmp_path: Path, confdir: Path) -> None:
    cassette = tmp_path / "run.json"
    with FakeProvider() as server:  # stands in for `ollama serve` (its OpenAI-compatible /v1)
        env = {"OPENAI_BASE_URL": f"http://localhost:{server.port}/v1", "OPENAI_API_KEY": "ollama"}
        unnamed = blackbox("record", "-o", str(tmp_path / "unnamed.json"), "--confdir", str(confdir), "--", *AGENT, QUESTION, env=env)
        assert unnamed.returncode == 0, unnamed.stderr
        assert "0 model calls" in unnamed.stderr  # loopback went direct: nothing recorded
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), "--host", "localhost", "--", *AGENT, QUESTION, env=env)
        assert rec.returncode == 0, rec.stderr
        port = server.port
    assert "2 model calls" in rec.stderr
    assert rec.stdout.strip() == "Paris: cloudy, 18°C. Lyon: rain, 15°C."
    assert sum(s.type == "model_input" for s in load_trace(cassette).steps) == 2
    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--host", "localhost", "--", *AGENT, QUESTION,
                   env={"OPENAI_BASE_URL": f"http://localhost:{port}/v1"})  # fmt: skip
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
