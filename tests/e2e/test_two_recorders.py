"""Two real `blackbox record` processes on one cassette: the second is told the first is live and touches nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, blackbox

from blackbox_mitm.cassette import journal_path, load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

# The wrapped command of the first recording: it runs until the test lets it go.
WAIT = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.05)\n"


def test_a_second_record_of_a_live_cassette_is_refused_and_the_first_completes(tmp_path: Path, confdir: Path) -> None:
    cassette = tmp_path / "run.json"
    go = tmp_path / "go"
    env = {**os.environ, "BLACKBOX_CONFDIR": str(confdir)}
    env.pop("HTTPS_PROXY", None)
    first = subprocess.Popen(
        [sys.executable, "-m", "blackbox_mitm", "record", "-o", str(cassette), "--", sys.executable, "-c", WAIT, str(go)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 60
        while not journal_path(cassette).exists():
            assert first.poll() is None and time.time() < deadline, "the first recording never started its journal"
            time.sleep(0.05)
        journal_before = journal_path(cassette).read_bytes()

        second = blackbox("record", "-o", str(cassette), "--", sys.executable, "-c", "pass", env={"BLACKBOX_CONFDIR": str(confdir)})
        assert second.returncode == 2, second.stdout + second.stderr
        said = second.stdout + second.stderr
        assert "is live on this cassette" in said and f"process {first.pid}" in said  # the lock's owner, named
        assert "blackbox recover" not in said and "Traceback" not in said
        assert journal_path(cassette).read_bytes() == journal_before
        assert not cassette.exists()
    finally:
        go.touch()
        out, err = first.communicate(timeout=60)
    assert first.returncode == 0, out + err
    trace = load_trace(cassette, recover=False)
    assert verify_trace(trace) == [] and trace.steps[-1].payload["event"] == "run_completed"
    assert not journal_path(cassette).exists()
