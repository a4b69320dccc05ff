"""End to end, what only a real ``blackbox`` process can show: the wrapped agent dies with its recorder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.e2e

BOUND = 30.0  # seconds: an upper bound for the condition, not a timing measurement


def _gone(pid: int) -> bool:
    """The process no longer runs (exited, or a zombie waiting for a reaper)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def _wait_until(condition: object, what: str) -> None:
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} within {BOUND:.0f} s")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signals are Linux's")
def test_kill_9_of_the_recorder_ends_the_wrapped_agent(tmp_path: Path, confdir: Path) -> None:
    pidfile = tmp_path / "agent.pid"
    agent = f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n"
    env = {k: v for k, v in os.environ.items() if k.lower() != "https_proxy"}
    recorder = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "blackbox_mitm",
            "record",
            "-o",
            str(tmp_path / "run.json"),
            "--confdir",
            str(confdir),
            "--",
            sys.executable,
            "-c",
            agent,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), "the agent did not start")
        child = int(pidfile.read_text())
        assert not _gone(child)
        recorder.send_signal(signal.SIGKILL)
        recorder.wait(timeout=BOUND)
        _wait_until(lambda: _gone(child), f"the agent (pid {child}) outlived its recorder")
    finally:
        recorder.kill()
        if pidfile.exists() and pidfile.read_text().strip() and not _gone(int(pidfile.read_text())):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
    assert (tmp_path / "run.json.journal").exists()  # what was recorded is kept for `blackbox recover`
