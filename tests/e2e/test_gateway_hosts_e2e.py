"""End to end: an OpenAI-compatible gateway named only in the project's ``blackbox.toml`` with the codec it speaks.

``[hosts] "llm.corp.example" = "openai"`` is all the project says: ``blackbox``
(run in the project folder, no ``--host``) intercepts the gateway, records its
chat completions (under OpenRouter's ``/api/v1`` prefix) through a real proxy,
and a strict offline replay answers them with the gateway gone. ``--map-remote``
sends the gateway's name to the fake provider on 127.0.0.1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

AGENT = [sys.executable, str(EXAMPLES / "openai_weather_agent.py")]
QUESTION = "What's the weather in Paris and Lyon?"
CHANGED = "What's the weather in Paris and Oslo?"
ANSWER = "Paris: cloudy, 18°C. Lyon: rain, 15°C."
GATEWAY = {"OPENAI_BASE_URL": "https://llm.corp.example/api/v1"}
KEY = "sk-or-v1-5b0e6c2d9a8f47e1b3c4d5e6f7a8b9c0"  # the shape of a gateway key; never a real one


def _blackbox(project: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real ``blackbox`` command run in ``project`` (where it finds blackbox.toml)."""
    full = {k: v for k, v in os.environ.items() if k.lower() not in ("https_proxy", "http_proxy", "blackbox_config")}
    full["PYTHONPATH"] = str(ROOT)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "blackbox_mitm", *args], env=full, capture_output=True, text=True, timeout=180, cwd=project
    )


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_gateway_named_in_blackbox_toml_records_and_replays_strictly(stream: bool, tmp_path: Path, confdir: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "blackbox.toml").write_text('[hosts]\n"llm.corp.example" = "openai"\n', encoding="utf-8")
    agent = [*AGENT, *(["--stream"] if stream else [])]
    cassette = tmp_path / "run.json"
    with FakeProvider() as fake:
        remote = rf"|https://llm\.corp\.example|{fake.url}"
        rec = _blackbox(project, "record", "-o", str(cassette), "--confdir", str(confdir), "--map-remote", remote, "--",
                        *agent, QUESTION, env={**GATEWAY, "OPENAI_API_KEY": KEY})  # fmt: skip
        assert rec.returncode == 0, rec.stderr
        paths = [r["path"] for r in fake.requests]
    assert rec.stdout.strip() == ANSWER
    assert "2 model calls" in rec.stderr
    assert paths == ["/api/v1/chat/completions"] * 2  # through the proxy to the gateway's own path
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    assert [s.type for s in trace.steps].count("model_input") == 2
    raw = cassette.read_bytes()
    for word in (KEY, "llm.corp.example", "/api/v1"):
        assert word.encode() not in raw, word
    rep = _blackbox(project, "replay", str(cassette), "--confdir", str(confdir), "--", *agent, QUESTION, env=GATEWAY)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert "2 of 2 model calls served from the recording, no divergence" in rep.stderr
    bad = _blackbox(project, "replay", str(cassette), "--confdir", str(confdir), "--", *agent, CHANGED, env=GATEWAY)
    assert bad.returncode != 0
    assert "differs" in bad.stderr


def test_blackbox_config_shows_the_gateway_and_its_codec(tmp_path: Path) -> None:
    (tmp_path / "blackbox.toml").write_text('[hosts]\n"llm.corp.example" = "openai"\n', encoding="utf-8")
    shown = _blackbox(tmp_path, "config", "--host", "localhost=openai")
    assert shown.returncode == 0, shown.stderr
    assert "hosts: (besides the providers' own)" in shown.stdout
    assert f"  llm.corp.example  openai  ({tmp_path / 'blackbox.toml'})" in shown.stdout
    assert "  localhost         openai  (--host)" in shown.stdout
    bad = _blackbox(tmp_path, "config", "--host", "localhost=ollama")
    assert bad.returncode == 2
    assert "localhost: unknown codec 'ollama'; the codecs are anthropic, bedrock, bedrock-converse, gemini, openai" in bad.stderr
