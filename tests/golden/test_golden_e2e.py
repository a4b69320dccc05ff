"""`blackbox test` end to end: real goldens recorded through the proxy, real subprocess agents, the JUnit read back.

The goldens are recorded once per session with `blackbox record`, the fake provider
and examples/openai_weather_agent.py (tests/conftest.py ``weather_runs``); every test copies the ones it needs into a
folder of its own. The provider is gone by the time any golden is tested.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import WEATHER_AGENT, WEATHER_ANSWERS, WEATHER_QUESTIONS, blackbox

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.golden.runner import TAIL_BYTES
from blackbox_mitm.proxy.environment import REPLAY_PLACEHOLDER_KEY

pytestmark = pytest.mark.e2e

AGENT = WEATHER_AGENT
HELPER = [sys.executable, str(Path(__file__).with_name("golden_agents.py"))]
QUESTIONS = WEATHER_QUESTIONS
ANSWERS = WEATHER_ANSWERS


@pytest.fixture(scope="module")
def recorded(weather_runs: dict[str, Path]) -> dict[str, Path]:
    """The Paris and Lyon runs, recorded once per session (tests/conftest.py): every test copies what it changes."""
    return weather_runs


@pytest.fixture(scope="module")
def run_ids(recorded: dict[str, Path]) -> dict[str, str]:
    return {name: load_trace(path).id for name, path in recorded.items()}


def make_suite(tmp_path: Path, recorded: dict[str, Path], *names: str) -> Path:
    goldens = tmp_path / "goldens"
    goldens.mkdir()
    for name in names:
        shutil.copy(recorded[name], goldens / f"{name}.json")
    return goldens


def run_test(confdir: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return blackbox("test", "--confdir", str(confdir), *args, env=env)


def junit_cases(root: ET.Element) -> list[ET.Element]:
    suites = root.findall("testsuite")
    assert len(suites) == 1
    return suites[0].findall("testcase")


def only_case(root: ET.Element) -> ET.Element:
    cases = junit_cases(root)
    assert len(cases) == 1
    return cases[0]


def test_a_golden_replayed_by_the_same_agent_passes(
    tmp_path: Path, confdir: Path, recorded: dict[str, Path], run_ids: dict[str, str]
) -> None:
    goldens = make_suite(tmp_path, recorded, "paris")
    proc = run_test(confdir, "--goldens", str(goldens), "--", *AGENT, "{input}")
    assert proc.returncode == 0, proc.stderr
    root = ET.fromstring(proc.stdout)  # the XML is stdout, alone
    assert root.tag == "testsuites"
    suite = root.find("testsuite")
    assert suite is not None
    assert {k: suite.get(k) for k in ("name", "tests", "failures", "errors", "skipped")} == {
        "name": "blackbox.golden",
        "tests": "1",
        "failures": "0",
        "errors": "0",
        "skipped": "0",
    }
    assert float(suite.get("time", "-1")) > 0
    case = only_case(root)
    assert case.get("name") == run_ids["paris"]
    assert case.get("classname") == "blackbox.golden"
    assert case.find("failure") is None and case.find("error") is None
    assert (case.findtext("system-out") or "").strip() == ANSWERS["paris"]
    assert "2 of 2 model calls served" in (case.findtext("system-err") or "")
    assert f"PASS  {run_ids['paris']}" in proc.stderr
    assert "1 golden, 1 passed, 0 failed, 0 errors" in proc.stderr


def test_a_suite_with_a_divergence_is_reported_field_by_field(
    tmp_path: Path, confdir: Path, recorded: dict[str, Path], run_ids: dict[str, str]
) -> None:
    goldens = make_suite(tmp_path, recorded, "paris", "lyon")
    junit = tmp_path / "reports" / "goldens.xml"
    # The command asks about Lyon whatever the golden: the Lyon golden passes, the Paris one diverges.
    proc = run_test(confdir, "--goldens", str(goldens), "--junit", str(junit), "--", *AGENT, QUESTIONS["lyon"])
    assert proc.returncode == 1, proc.stderr

    # With --junit the human summary is stdout.
    assert "2 goldens, 1 passed, 1 failed, 0 errors" in proc.stdout
    assert f"FAIL  {run_ids['paris']} [divergence]" in proc.stdout
    assert "message 0 (user): content differs at character 22" in proc.stdout

    root = ET.parse(junit).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("2", "1", "0")
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("2", "1", "0", "0")
    lyon, paris = junit_cases(root)  # sorted by golden name: lyon before paris
    assert [lyon.get("name"), paris.get("name")] == [run_ids["lyon"], run_ids["paris"]]
    assert {lyon.get("classname"), paris.get("classname")} == {"blackbox.golden"}
    for case in (lyon, paris):
        assert float(case.get("time", "-1")) > 0

    assert lyon.find("failure") is None
    assert (lyon.findtext("system-out") or "").strip() == ANSWERS["lyon"]

    failure = paris.find("failure")
    assert failure is not None
    assert failure.get("type") == "divergence"
    message = failure.get("message", "")
    assert message.startswith(f"the agent diverged from recorded run {run_ids['paris']} at step 0:")
    assert "message 0 (user): content differs at character 22" in message
    assert 'recorded: "What\'s the weather in Paris?"' in message
    assert 'got:      "What\'s the weather in Lyon?"' in message
    details = failure.text or ""
    assert "diverged — the agent left the recorded path" in details
    assert "model calls served: 0 of 2" in details
    assert "command: " in details and "Lyon?" in details
    assert paris.findtext("system-out", "") == ""  # the agent got an error, never an answer
    assert "API error" in (paris.findtext("system-err") or "")


def test_an_agent_that_outlives_the_timeout_is_killed(tmp_path: Path, confdir: Path, recorded: dict[str, Path]) -> None:
    goldens = make_suite(tmp_path, recorded, "paris")
    pidfile = tmp_path / "agent.pid"
    started = time.monotonic()
    proc = run_test(confdir, "--goldens", str(goldens), "--timeout", "2", "--", *HELPER, "sleep", str(pidfile), "--ignore-term")
    elapsed = time.monotonic() - started
    assert proc.returncode == 1, proc.stderr
    assert elapsed < 300  # not the agent's ten minutes (a bound for a hang, not a timing: load cannot reach it)
    failure = only_case(ET.fromstring(proc.stdout)).find("failure")
    assert failure is not None
    assert failure.get("type") == "timeout"
    assert failure.get("message", "").startswith("the command did not finish within 2 s and was killed")
    # Deaf to SIGTERM, it was killed with its process group all the same.
    assert _gone(int(pidfile.read_text()))


def _gone(pid: int, wait: float = 5.0) -> bool:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z":
            return True  # dead, not yet reaped by its parent
        time.sleep(0.05)
    return False


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["exit-after", "3", "{input}"], "the command exited 3 after 2 of 2 recorded model calls"),
        (["-c", "import sys; sys.exit(4)"], "the command exited 4 after 0 of 2 recorded model calls"),
    ],
    ids=["after-every-call", "before-any-call"],
)
def test_an_agent_that_exits_non_zero_fails_as_exit(
    tmp_path: Path, confdir: Path, recorded: dict[str, Path], command: list[str], message: str
) -> None:
    goldens = make_suite(tmp_path, recorded, "paris")
    argv = [*HELPER, *command] if command[0] != "-c" else [sys.executable, *command]
    proc = run_test(confdir, "--goldens", str(goldens), "--", *argv)
    assert proc.returncode == 1, proc.stderr
    failure = only_case(ET.fromstring(proc.stdout)).find("failure")
    assert failure is not None
    assert failure.get("type") == "exit"
    assert failure.get("message") == message


def test_an_agent_that_stops_after_the_first_call_is_incomplete(tmp_path: Path, confdir: Path, recorded: dict[str, Path]) -> None:
    goldens = make_suite(tmp_path, recorded, "paris")
    proc = run_test(confdir, "--goldens", str(goldens), "--", *HELPER, "first-call-only", "{input}")
    assert proc.returncode == 1, proc.stderr
    failure = only_case(ET.fromstring(proc.stdout)).find("failure")
    assert failure is not None
    assert failure.get("type") == "incomplete"
    assert failure.get("message") == "the agent stopped early: it made 1 of 2 recorded model calls (never asked for model_input step 4)"


def test_an_agent_that_asks_for_more_calls_overruns(tmp_path: Path, confdir: Path, recorded: dict[str, Path]) -> None:
    goldens = make_suite(tmp_path, recorded, "paris")
    proc = run_test(confdir, "--goldens", str(goldens), "--", *HELPER, "overrun", "{input}")
    assert proc.returncode == 1, proc.stderr
    failure = only_case(ET.fromstring(proc.stdout)).find("failure")
    assert failure is not None
    assert failure.get("type") == "overrun"
    assert "all 2 recorded model calls were served and it asked for 1 more" in failure.get("message", "")


def test_a_corrupt_golden_is_an_error_and_its_command_never_runs(
    tmp_path: Path, confdir: Path, recorded: dict[str, Path], run_ids: dict[str, str]
) -> None:
    goldens = make_suite(tmp_path, recorded, "paris")
    (goldens / "broken.json").write_text('{"version": 2, "id": "broken-1", "steps": [')
    tampered = json.loads(recorded["lyon"].read_text())
    tampered["steps"][0]["payload"]["messages"][-1]["content"] = "What's the weather in Oslo?"
    (goldens / "tampered.json").write_text(json.dumps(tampered))
    ran = tmp_path / "ran"
    ran.mkdir()
    proc = run_test(confdir, "--goldens", str(goldens), "--", *HELPER, "mark", str(ran), "{run}", "{input}")
    assert proc.returncode == 1, proc.stderr

    root = ET.fromstring(proc.stdout)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "0", "2")
    broken, paris, tampered_case = junit_cases(root)
    # A golden that cannot be trusted has no run id to name it by: its file name does.
    assert [broken.get("name"), paris.get("name"), tampered_case.get("name")] == ["broken", run_ids["paris"], "tampered"]
    for case, says in ((broken, "is truncated"), (tampered_case, "does not verify")):
        error = case.find("error")
        assert error is not None
        assert error.get("type") == "error"
        assert says in error.get("message", "")
        assert "the command was not run" in (error.text or "")
        assert case.find("system-out") is None
    assert paris.find("failure") is None and paris.find("error") is None
    assert sorted(p.name for p in ran.iterdir()) == [run_ids["paris"]]


def test_an_empty_suite_fails_unless_allowed(tmp_path: Path, confdir: Path) -> None:
    goldens = tmp_path / "goldens"
    goldens.mkdir()
    (goldens / "notes.txt").write_text("not a golden")
    proc = run_test(confdir, "--goldens", str(goldens), "--", *AGENT, "{input}")
    assert proc.returncode == 1
    assert "a suite that tests nothing fails" in proc.stderr
    root = ET.fromstring(proc.stdout)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("0", "0", "0")

    allowed = run_test(confdir, "--goldens", str(goldens), "--allow-empty", "--", *AGENT, "{input}")
    assert allowed.returncode == 0, allowed.stderr
    assert ET.fromstring(allowed.stdout).get("tests") == "0"


def test_a_missing_suite_folder_is_a_usage_error(tmp_path: Path, confdir: Path) -> None:
    proc = run_test(confdir, "--goldens", str(tmp_path / "nowhere"), "--", *AGENT, "{input}")
    assert proc.returncode == 2
    assert "there is no goldens folder" in proc.stderr
    assert "blackbox golden add" in proc.stderr
    assert proc.stdout == ""


def test_placeholders_and_environment_reach_the_command(
    tmp_path: Path, confdir: Path, recorded: dict[str, Path], run_ids: dict[str, str]
) -> None:
    goldens = make_suite(tmp_path, recorded, "paris")
    seen = tmp_path / "seen.json"
    real_key = "sk-proj-" + "Q9w8E7r6T5y4U3i2" * 3
    proc = run_test(
        confdir,
        "--goldens",
        str(goldens),
        "--",
        *HELPER,
        "echo-env",
        str(seen),
        "{run}",
        "--task={input}",
        "{cassette}",
        "{unknown} {input}{run}",
        env={"OPENAI_API_KEY": real_key},
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(seen.read_text())
    cassette = str((goldens / "paris.json").resolve())
    question = QUESTIONS["paris"]
    assert data["argv"] == [run_ids["paris"], f"--task={question}", cassette, f"{{unknown}} {question}{run_ids['paris']}"]
    env = data["env"]
    assert env["BLACKBOX_RUN"] == run_ids["paris"]
    assert env["BLACKBOX_RUN_INPUT"] == question
    assert env["BLACKBOX_CASSETTE"] == cassette
    # Every golden goes through the suite's one proxy, its run named in the proxy URL.
    assert re.fullmatch(r"http://paris@127\.0\.0\.1:\d+", env["HTTPS_PROXY"]), env["HTTPS_PROXY"]
    # The real key stays out of the agent's reach; the replay needs none.
    assert env["OPENAI_API_KEY"] == env["ANTHROPIC_API_KEY"] == REPLAY_PLACEHOLDER_KEY

    handed = run_test(
        confdir,
        "--goldens",
        str(goldens),
        "--",
        *HELPER,
        "echo-env",
        str(seen),
        env={"OPENAI_API_KEY": real_key, "BLACKBOX_REPLAY_KEY": "replay-only-key"},
    )
    assert handed.returncode == 0, handed.stderr
    assert json.loads(seen.read_text())["env"]["OPENAI_API_KEY"] == "replay-only-key"


def test_two_goldens_run_at_once_with_j2(tmp_path: Path, confdir: Path, recorded: dict[str, Path], run_ids: dict[str, str]) -> None:
    goldens = make_suite(tmp_path, recorded, "paris", "lyon")
    meeting = tmp_path / "meeting"
    meeting.mkdir()
    # Each agent waits for the other to start: only a parallel run lets both finish.
    proc = run_test(confdir, "--goldens", str(goldens), "-j", "2", "--", *HELPER, "peer", str(meeting), "2", "{run}", "{input}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = junit_cases(ET.fromstring(proc.stdout))
    assert [c.get("name") for c in cases] == [run_ids["lyon"], run_ids["paris"]]  # suite order, whatever finished first
    assert [(c.findtext("system-out") or "").strip() for c in cases] == [ANSWERS["lyon"], ANSWERS["paris"]]
    assert sorted(p.name for p in meeting.iterdir()) == sorted(run_ids.values())


def test_output_is_kept_as_a_64_kib_tail(tmp_path: Path, confdir: Path, recorded: dict[str, Path]) -> None:
    goldens = make_suite(tmp_path, recorded, "paris")
    size = 1024 * 1024
    proc = run_test(confdir, "--goldens", str(goldens), "--", *HELPER, "flood", str(size), "{input}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    case = only_case(ET.fromstring(proc.stdout))
    out = case.findtext("system-out") or ""
    note, kept = out.split("\n", 1)
    assert len(kept.encode()) == TAIL_BYTES
    dropped = size + len(ANSWERS["paris"].encode()) + 1 - TAIL_BYTES
    assert note == f"[blackbox: {dropped} earlier bytes of this stream were not kept; the last {TAIL_BYTES} follow]"
    assert kept.endswith(ANSWERS["paris"] + "\n")  # the tail is the end of the output
    assert set(kept[: -len(ANSWERS["paris"]) - 1]) <= {"x", "\n"}
    err = case.findtext("system-err") or ""
    assert len(err.encode()) < TAIL_BYTES + 200
    assert "2 of 2 model calls served" in err
    assert len(proc.stdout.encode()) < 3 * TAIL_BYTES  # the report holds tails, not the megabytes


def test_run_tests_named_cassettes_instead_of_the_folder(
    tmp_path: Path, confdir: Path, recorded: dict[str, Path], run_ids: dict[str, str]
) -> None:
    proc = run_test(
        confdir,
        "--goldens",
        str(tmp_path / "nowhere"),
        "--run",
        str(recorded["paris"]),
        "--run",
        str(recorded["paris"]),
        "--",
        *AGENT,
        "{input}",
    )
    assert proc.returncode == 0, proc.stderr
    assert [c.get("name") for c in junit_cases(ET.fromstring(proc.stdout))] == [run_ids["paris"]]

    missing = run_test(confdir, "--run", str(tmp_path / "missing.json"), "--", *AGENT, "{input}")
    assert missing.returncode == 2
    assert "no such cassette file" in missing.stderr
