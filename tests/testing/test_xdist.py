"""The pytest plugin under pytest-xdist: tape tests spread over worker processes, each worker with its own proxies.

The inner suite runs with ``-n 2`` in a subprocess (as a user's CI would) and a
confdir with no CA yet, so the workers' first tapes race to create it; each test's
outcome is read back by name.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import EXAMPLES

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def tape(weather_runs: dict[str, Path]) -> Path:
    """The weather agent's Paris run, recorded once per session (tests/conftest.py): a test that re-records copies it."""
    return weather_runs["paris"]


SUITE = """
import os, subprocess, sys
from pathlib import Path
import pytest
sys.path.insert(0, {examples!r})
from openai_weather_agent import run
TAPE = {tape!r}
AGENT = {agent!r}
SEEN = Path({seen!r})

def _worker(name):
    (SEEN / f"{{name}}.{{os.environ['PYTEST_XDIST_WORKER']}}").touch()

@pytest.mark.blackbox_tape(TAPE)
def test_in_process():
    _worker("in_process")
    assert run("What's the weather in Paris?") == "Paris: cloudy, 18°C."

@pytest.mark.blackbox_tape(TAPE)
def test_subprocess_agent(blackbox_tape):
    _worker("subprocess_agent")
    out = subprocess.run([sys.executable, AGENT, "What's the weather in Paris?"], env=blackbox_tape.env(), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Paris: cloudy, 18°C."

@pytest.mark.blackbox_tape(TAPE)
def test_diverges():
    _worker("diverges")
    run("What's the weather in Lyon?")

@pytest.mark.blackbox_tape(TAPE)
def test_stops_early():
    _worker("stops_early")

def test_unmarked():
    _worker("unmarked")
    assert "HTTPS_PROXY" not in os.environ
"""


def test_tape_tests_run_under_xdist_with_per_test_outcomes(pytester: pytest.Pytester, tape: Path, tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    seen.mkdir()
    fresh_confdir = tmp_path / "confdir"  # no CA yet: the two workers' first tapes start at once
    pytester.makepyfile(
        SUITE.format(examples=str(EXAMPLES), tape=str(tape), agent=str(EXAMPLES / "openai_weather_agent.py"), seen=str(seen))
    )
    junit = tmp_path / "inner.xml"
    mp = pytest.MonkeyPatch()
    try:
        mp.delenv("CI", raising=False)
        for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
            mp.delenv(name, raising=False)
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "-n", "2", f"--blackbox-confdir={fresh_confdir}", f"--junitxml={junit}", timeout=240
        )  # fmt: skip
    finally:
        mp.undo()
    result.assert_outcomes(passed=3, failed=2)
    outcomes = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        failed = case.find("failure") is not None or case.find("error") is not None
        outcomes[case.get("name")] = ("failed", (case.find("failure").get("message") or "")) if failed else ("passed", "")  # type: ignore[union-attr]
    assert {name: outcome for name, (outcome, _) in outcomes.items()} == {
        "test_in_process": "passed",
        "test_subprocess_agent": "passed",
        "test_unmarked": "passed",
        "test_diverges": "failed",
        "test_stops_early": "failed",
    }
    assert "TapeMismatch" in outcomes["test_diverges"][1] and "differs" in outcomes["test_diverges"][1]
    assert (
        "TapeMismatch" in outcomes["test_stops_early"][1]
        and "stopped before making every recorded model call" in outcomes["test_stops_early"][1]
    )
    workers = {p.suffix for p in seen.iterdir()}
    assert workers == {".gw0", ".gw1"}, sorted(p.name for p in seen.iterdir())  # both workers ran tapes
