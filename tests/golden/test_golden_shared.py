"""`blackbox test` through one shared proxy: names kept apart, bad input kept to its golden, the old path kept, live progress.

Real goldens recorded once per session, real agent processes, the real `blackbox
test` command (marked e2e); the units (run names, the router, the progress line) in-process.
"""

from __future__ import annotations

import io
import json
import os
import pty
import select
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import ROOT
from test_golden_e2e import AGENT, ANSWERS, HELPER, QUESTIONS, junit_cases, make_suite, run_test

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.golden.progress import ERASE, Progress, result_line
from blackbox_mitm.golden.runner import GoldenResult
from blackbox_mitm.golden.shared import GoldenRouter, run_names
from blackbox_mitm.golden.suite import GoldenCase
from blackbox_mitm.session.router import RouteRefused

E2E = pytest.mark.e2e  # real goldens, real agent processes and a real proxy: make test, not make test-fast


@pytest.fixture(scope="module")
def recorded(weather_runs: dict[str, Path]) -> dict[str, Path]:
    """The Paris and Lyon runs, recorded once per session (tests/conftest.py): every test copies what it changes."""
    return weather_runs


# -- units ----------------------------------------------------------------------------------


def _case(name: str, run: str | None = "r") -> GoldenCase:
    return GoldenCase(path=Path(f"/g/{name}.json"), name=name, run=run)


def test_run_names_are_unique_plain_file_names() -> None:
    cases = [_case("paris"), _case("paris"), _case("paris"), _case("my run (copy)"), _case("..."), _case("paris-2")]
    assert run_names(cases) == ["paris", "paris-2", "paris-3", "my-run-copy", "golden", "paris-2-2"]


@E2E
def test_an_ended_golden_run_is_refused_and_an_unknown_one_has_no_cassette(tmp_path: Path, recorded: dict[str, Path]) -> None:
    router = GoldenRouter(tmp_path, mode="replay", cassettes={"a": recorded["paris"], "b": recorded["lyon"]})
    assert router.session_for("a").run_id == load_trace(recorded["paris"]).id
    report = router.end("a")
    assert report["verdict"] == "incomplete" and report["model_calls_served"] == 0
    with pytest.raises(RouteRefused, match="has ended"):
        router.session_for("a")
    assert "has ended" in router.finish("a")["error"]  # ending again reports nothing twice
    with pytest.raises(RouteRefused, match="no cassette"):
        router.session_for("paris")  # a golden's file name is not a run of this suite: only the mapped names are
    assert router.session_for("b").run_id == load_trace(recorded["lyon"]).id


def _result(name: str, outcome: str = "passed") -> GoldenResult:
    kind = None if outcome == "passed" else "exit"
    return GoldenResult(_case(name, run=name), outcome, kind, "the command exited 3\nsecond line", duration=1.25)


def test_progress_off_a_terminal_is_one_line_per_golden() -> None:
    out = io.StringIO()
    with Progress(2, out, live=False) as progress:
        progress.start(_case("a"))
        progress.finish(_result("a"))
        progress.finish(_result("b", "failure"))
    assert out.getvalue() == "PASS  a (1.2 s)\nFAIL  b [exit] the command exited 3\n      second line\n"
    assert "\r" not in out.getvalue()


def test_progress_on_a_terminal_is_one_line_redrawn_in_place() -> None:
    clock = iter([0.0, 0.5, 1.0, 2.0, 3.5, 4.0, 5.0, 6.0])
    out = io.StringIO()
    with Progress(3, out, live=True, clock=lambda: next(clock), tick=3600) as progress:
        progress.start(_case("a"))
        progress.start(_case("b"))
        progress.finish(_result("a"))
        progress.finish(_result("b", "failure"))
    frames = out.getvalue().split(ERASE)
    assert frames[1:5] == [
        "blackbox test: 0/3 done, 0 failed, 0 running, 0.5 s",
        "blackbox test: 0/3 done, 0 failed, 1 running, 1.0 s",
        "blackbox test: 0/3 done, 0 failed, 2 running, 2.0 s",
        "blackbox test: 1/3 done, 0 failed, 1 running, 3.5 s",  # a pass only counts
    ]
    assert frames[5] == result_line(_result("b", "failure")) + "\n"  # a failure is printed above the line
    assert frames[6] == "blackbox test: 2/3 done, 1 failed, 0 running, 4.0 s"
    assert frames[-1] == ""  # the line is erased at the end


# -- end to end -----------------------------------------------------------------------------


@E2E
def test_two_goldens_of_one_run_id_and_an_unreadable_file_each_get_their_own_result(
    tmp_path: Path, confdir: Path, recorded: dict[str, Path]
) -> None:
    goldens = make_suite(tmp_path, recorded, "paris", "lyon")
    shutil.copy(recorded["paris"], goldens / "paris-copy.json")  # a second golden claiming the run id of the first
    (goldens / "zz-binary.json").write_bytes(b"\x1f\x8b\x08\x00\xff\xfe garbage \x00\x01")
    proc = run_test(confdir, "--goldens", str(goldens), "-j", "2", "--", *AGENT, "{input}")
    assert proc.returncode == 1, proc.stderr
    root = ET.fromstring(proc.stdout)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "0", "1")
    lyon, paris_copy, paris, binary = junit_cases(root)  # by file name: "-" sorts before "."
    paris_id = load_trace(recorded["paris"]).id
    # One run id, two goldens: each its own testcase, told apart by its file.
    assert (paris.get("name"), paris_copy.get("name")) == (f"{paris_id} [paris.json]", f"{paris_id} [paris-copy.json]")
    for case, file in ((paris, "paris.json"), (paris_copy, "paris-copy.json"), (lyon, "lyon.json")):
        assert case.find("failure") is None and case.find("error") is None, ET.tostring(case)
        assert f"replayed {goldens / file} — 2 of 2 model calls served" in (case.findtext("system-err") or "")
    assert (paris_copy.findtext("system-out") or "").strip() == ANSWERS["paris"]
    error = binary.find("error")
    assert binary.get("name") == "zz-binary" and error is not None
    assert "zz-binary.json" in error.get("message", "") and "the command was not run" in (error.text or "")


@E2E
@pytest.mark.parametrize(
    ("named", "says"),
    [("-", "the request named none"), ("nosuch", "the proxy credentials name the run 'nosuch', but there is no cassette")],
    ids=["no-run", "unknown-run"],
)
def test_a_client_naming_no_run_or_an_unknown_one_fails_alone(
    tmp_path: Path, confdir: Path, recorded: dict[str, Path], named: str, says: str
) -> None:
    goldens = make_suite(tmp_path, recorded, "paris", "lyon")
    proc = run_test(confdir, "--goldens", str(goldens), "--", *HELPER, "proxy-as", "paris", named, "{input}")
    assert proc.returncode == 1, proc.stderr
    lyon, paris = junit_cases(ET.fromstring(proc.stdout))
    assert lyon.find("failure") is None and (lyon.findtext("system-out") or "").strip() == ANSWERS["lyon"]
    failure = paris.find("failure")
    assert failure is not None and failure.get("type") == "exit"
    assert failure.get("message") == "the command exited 1 after 0 of 2 recorded model calls"
    assert says in (paris.findtext("system-err") or "")


@E2E
def test_proxy_per_golden_keeps_the_old_path(tmp_path: Path, confdir: Path, recorded: dict[str, Path]) -> None:
    goldens = make_suite(tmp_path, recorded, "paris", "lyon")
    proc = run_test(confdir, "--goldens", str(goldens), "--proxy-per-golden", "-j", "2", "--", *HELPER, "echo-env", str(tmp_path / "e"))
    assert proc.returncode == 0, proc.stderr
    for case in junit_cases(ET.fromstring(proc.stdout)):
        assert "model calls served from the recording, no divergence" in (case.findtext("system-err") or "")
    # Its own `blackbox replay` proxy: no run named in the URL.
    assert "@" not in json.loads((tmp_path / "e").read_text())["env"]["HTTPS_PROXY"]


@E2E
def test_on_a_terminal_blackbox_test_draws_a_live_progress_line(tmp_path: Path, confdir: Path, recorded: dict[str, Path]) -> None:
    goldens = make_suite(tmp_path, recorded, "paris", "lyon")
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    argv = [sys.executable, "-m", "blackbox_mitm", "test", "--confdir", str(confdir), "--goldens", str(goldens)]
    argv += ["--junit", str(tmp_path / "j.xml"), "--", *AGENT, QUESTIONS["lyon"]]
    # --junit: the human output is stdout, here the terminal.
    proc = subprocess.Popen(argv, stdout=follower, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, cwd=ROOT)
    os.close(follower)
    seen = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        seen += chunk
    proc.wait(60)
    os.close(leader)
    text = seen.decode()
    assert proc.returncode == 1
    assert "\r\x1b[2Kblackbox test: 0/2 done, 0 failed, 1 running" in text
    assert "\r\x1b[2Kblackbox test: 1/2 done" in text
    assert "FAIL  " in text and "[divergence]" in text  # the Paris golden, asked about Lyon
    assert "PASS  " not in text  # a pass only counts on a terminal
    assert "blackbox test: 2 goldens, 1 passed, 1 failed, 0 errors" in text
    case_names = [c.get("name") for c in junit_cases(ET.parse(tmp_path / "j.xml").getroot())]
    assert len(case_names) == 2
