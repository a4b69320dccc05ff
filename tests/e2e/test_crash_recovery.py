"""kill -9 of the recording proxy mid-run loses no completed step; `blackbox recover` gives a valid cassette."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, ROOT, blackbox, remote_args
from fake_provider import FakeProvider

from blackbox_mitm.cassette import journal_path, load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e


def test_kill_9_mid_run_then_recover(tmp_path: Path, confdir: Path) -> None:
    script: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
        {"text": "never delivered", "delay_ms": 120_000},
    ]
    cassette = tmp_path / "run.json"
    with FakeProvider(script) as provider:
        remote = remote_args(provider.url)
        env = dict(os.environ, OPENAI_API_KEY="sk-test-not-a-real-key-000")
        proc = subprocess.Popen(
            [sys.executable, "-m", "blackbox_mitm", "record", "-o", str(cassette), "--confdir", str(confdir), *remote, "--",
             sys.executable, str(EXAMPLES / "openai_weather_agent.py"), "What's the weather in Paris?"],
            cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            deadline = time.time() + 90
            while len(provider.requests) < 2 and time.time() < deadline and proc.poll() is None:
                time.sleep(0.1)
            assert len(provider.requests) == 2, "the agent never made its second call"
        finally:
            os.killpg(proc.pid, signal.SIGKILL)  # the recorder and its agent, no chance to clean up
            proc.wait(30)

    assert not cassette.exists()
    assert journal_path(cassette).exists()
    assert journal_path(cassette).read_bytes().endswith(b"\0")  # its lines were written over zeros (cassette/journal.py)

    rec = blackbox("recover", str(cassette))
    assert rec.returncode == 0, rec.stderr
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    # The first call completed (its response reached the agent), so its steps are there; the second never did.
    assert [s.type for s in trace.steps] == ["model_input", "model_output", "metadata"]
    assert trace.steps[1].payload["calls"][0]["toolInput"] == {"city": "Paris"}
    assert trace.steps[-1].payload["event"] == "run_failed"
    assert not journal_path(cassette).exists()

    # Recovering again: nothing to recover, said clearly, nothing lost.
    again = blackbox("recover", str(cassette))
    assert again.returncode == 2
    assert load_trace(cassette).steps == trace.steps
