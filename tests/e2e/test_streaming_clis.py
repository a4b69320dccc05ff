"""End to end: third-party CLIs that always stream, recorded against the fake provider and replayed offline.

* ``llm`` with the ``llm-anthropic`` plugin (its Anthropic models always stream);
* aider (streams by default) on ``gpt-4o-mini``.

They live in their own virtualenvs (aider pins old versions of ``openai``, ``httpx``
and friends, and needs Python 3.12), made by ``scripts/setup-streaming-clis``, which
``scripts/setup`` runs. A missing venv fails these tests rather than skipping them.

Both CLIs are kept offline: their configuration lives in tmp (``LLM_USER_PATH``,
``HOME``), and aider gets the flags and environment that stop its update check,
analytics and model-metadata downloads. That nothing else was asked for is checked
twice: every request the fake provider saw is a model call, and the replay (which
refuses and logs any other host) logs no refusal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, remote_args
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

CLIS = ROOT / ".venv-clis"
LLM = CLIS / "llm" / "bin" / "llm"
AIDER = CLIS / "aider" / "bin" / "aider"


def _need(executable: Path) -> Path:
    if not executable.exists():
        pytest.fail(f"{executable} is missing: run scripts/setup-streaming-clis (scripts/setup runs it)")
    return executable


def blackbox(*args: str, env: dict[str, str], cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the real `blackbox` command, as conftest.blackbox does, in a working directory of the test's."""
    full_env = {k: v for k, v in os.environ.items() if k.lower() != "https_proxy"}
    full_env.setdefault("ANTHROPIC_API_KEY", "sk-test-not-a-real-key-000")
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "blackbox_mitm", *args], env=full_env, capture_output=True, text=True, timeout=timeout, cwd=cwd or ROOT
    )


def _remote(provider: FakeProvider) -> list[str]:
    out = remote_args(provider.url)
    return out


def _offline_replay(
    cassette: Path, confdir: Path, argv: list[str], env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    rep = blackbox("replay", "-v", str(cassette), "--confdir", str(confdir), "--", *argv, env=env, cwd=cwd)
    assert "offline: refused" not in rep.stderr, rep.stderr  # the CLI asked for nothing but model calls
    return rep


# --------------------------------------------------------------------------- llm + llm-anthropic

WEATHER_FUNCTION = 'def get_weather(city: str) -> str:\n    "Current weather for a city."\n    return city + ": sunny, 21C"\n'


def _llm_home(tmp_path: Path, name: str, key: str | None = None) -> dict[str, str]:
    home = tmp_path / name
    home.mkdir()
    env = {"LLM_USER_PATH": str(home)}
    if key is not None:
        subprocess.run([str(_need(LLM)), "keys", "set", "anthropic", "--value", key], env={"LLM_USER_PATH": str(home)}, check=True)
        assert json.loads((home / "keys.json").read_text())["anthropic"] == key
    return env


def test_llm_anthropic_streams_record_and_replay_offline(tmp_path: Path, confdir: Path) -> None:
    key = "sk-ant-api03-" + "Zq7Xw2Lp9Rt4" * 4
    argv = [str(_need(LLM)), "-m", "claude-sonnet-4.5", "What's the weather in Paris?"]
    cassette = tmp_path / "llm.json"
    with FakeProvider() as fake:
        env = _llm_home(tmp_path, "record-home", key)  # the key set the way llm users set it
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *_remote(fake), "--", *argv, env=env)
        assert rec.returncode == 0, rec.stderr
        assert [(r["method"], r["path"]) for r in fake.requests] == [("POST", "/v1/messages")]
        request = fake.requests[0]
        assert request["body"]["stream"] is True and request["body"]["model"] == "claude-sonnet-4-5"
        assert request["headers"]["x-api-key"] == key
    assert rec.stdout == "Echo: What's the weather in Paris?\n"
    assert key.encode() not in cassette.read_bytes()
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    assert [s.type for s in trace.steps] == ["model_input", "model_output", "metadata"]
    assert trace.steps[0].payload["params"]["stream"] is True
    answer = dict(trace.steps[1].payload)
    assert answer.pop("tokens")["input"] > 0  # the stream's usage, as neutral counts (the fake counts the request)
    assert answer == {"type": "final_answer", "text": "Echo: What's the weather in Paris?"}

    # A fresh llm home with no key at all, and no provider: answered from the cassette.
    rep = _offline_replay(cassette, confdir, argv, _llm_home(tmp_path, "replay-home"))
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert "1 of 1 model calls served" in rep.stderr


def test_llm_anthropic_streamed_parallel_tool_round(tmp_path: Path, confdir: Path) -> None:
    argv = [str(_need(LLM)), "-m", "claude-sonnet-4.5", "--td", "--functions", WEATHER_FUNCTION, "What's the weather in Paris and Lyon?"]
    cassette = tmp_path / "llm-tools.json"
    with FakeProvider() as fake:
        rec = blackbox(
            "record", "-o", str(cassette), "--confdir", str(confdir), *_remote(fake), "--", *argv, env=_llm_home(tmp_path, "rec")
        )
        assert rec.returncode == 0, rec.stderr
        assert [r["path"] for r in fake.requests] == ["/v1/messages", "/v1/messages"]
        assert all(r["body"]["stream"] is True for r in fake.requests)
    assert rec.stdout == "Let me check the weather. Paris: Paris: sunny, 21C. Lyon: Lyon: sunny, 21C.\n"
    assert "Tool call: get_weather({'city': 'Paris'})" in rec.stderr and "Tool call: get_weather({'city': 'Lyon'})" in rec.stderr
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
    assert [c["toolInput"] for c in trace.steps[1].payload["calls"]] == [{"city": "Paris"}, {"city": "Lyon"}]
    assert [s.payload["result"] for s in trace.steps if s.type == "tool_result"] == ["Paris: sunny, 21C", "Lyon: sunny, 21C"]

    rep = _offline_replay(cassette, confdir, argv, _llm_home(tmp_path, "rep"))
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert "Tool call: get_weather({'city': 'Paris'})" in rep.stderr and "Tool call: get_weather({'city': 'Lyon'})" in rep.stderr
    assert "2 of 2 model calls served" in rep.stderr


# --------------------------------------------------------------------------- aider

# What aider would otherwise download at start-up: its model database (aider's ModelInfoManager
# fetches litellm's price list from GitHub unless the model is in a local metadata file) and litellm's
# own copy of it (unless LITELLM_LOCAL_MODEL_COST_MAP is set).
GPT_4O_MINI = {
    "gpt-4o-mini": {
        "max_tokens": 16384,
        "max_input_tokens": 128000,
        "max_output_tokens": 16384,
        "input_cost_per_token": 1.5e-07,
        "output_cost_per_token": 6e-07,
        "litellm_provider": "openai",
        "mode": "chat",
        "supports_function_calling": True,
    }
}


def _aider(tmp_path: Path, name: str) -> tuple[list[str], dict[str, str], Path]:
    work = tmp_path / name
    (work / "home").mkdir(parents=True)
    metadata = tmp_path / "model-metadata.json"
    metadata.write_text(json.dumps(GPT_4O_MINI))
    argv = [
        str(_need(AIDER)),
        "--model", "gpt-4o-mini",
        "--message", "Say hello to the proxy.",
        "--no-git", "--yes-always",
        "--no-check-update", "--no-show-model-warnings", "--analytics-disable",
        "--model-metadata-file", str(metadata),
    ]  # fmt: skip
    env = {"HOME": str(work / "home"), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-test-not-a-real-key-000"}
    return argv, env, work


def test_aider_streams_record_and_replay_offline(tmp_path: Path, confdir: Path) -> None:
    argv, env, work = _aider(tmp_path, "record")
    cassette = tmp_path / "aider.json"
    with FakeProvider() as fake:
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *_remote(fake), "--", *argv, env=env, cwd=work)
        assert rec.returncode == 0, rec.stderr
        assert [(r["method"], r["path"]) for r in fake.requests] == [("POST", "/v1/chat/completions")]
        body = fake.requests[0]["body"]
        assert body["stream"] is True and body["model"] == "gpt-4o-mini"
    assert "Echo: Say hello to the proxy." in rec.stdout
    assert "Model: gpt-4o-mini" in rec.stdout
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    assert [s.type for s in trace.steps] == ["model_input", "model_output", "metadata"]
    assert trace.steps[0].payload["params"]["stream"] is True
    answer = dict(trace.steps[1].payload)
    assert answer.pop("tokens")["input"] > 0  # the stream's usage, as neutral counts (the fake counts the request)
    assert answer == {"type": "final_answer", "text": "Echo: Say hello to the proxy."}
    assert not (work / ".git").exists()

    argv, env, work = _aider(tmp_path, "replay")  # a fresh home and working directory
    rep = _offline_replay(cassette, confdir, argv, env, cwd=work)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert "1 of 1 model calls served" in rep.stderr
