"""The pytest plugin through inner pytest sessions: tape tests pass, fail with the difference, and leave other tests alone.

Each inner session runs in a subprocess (as a user's suite would), isolated the way
``pytester.runpytest_subprocess`` isolates it, with the plugin loaded from its pytest11
entry point and a real in-process replay proxy per inner test. The inner test modules
that run with the same options share one session (tests/testing/inner_session.py keeps
each inner test's outcome and its part of the output): every module that replays with
no option runs in one session (``replays``), then the record tests' refusals in CI and
their recordings (one session each: an exit code, a provider's request count), then the
re-recorded tapes all replay in one more (``recorded``): 8 sessions, not 18.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import map_remote_for
from fake_provider import FakeProvider
from inner_session import InnerRun, InnerSuite

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.cassette.trace import Trace

pytestmark = pytest.mark.e2e

WALKS = """
@pytest.mark.blackbox_tape(TAPE)
def test_in_process():
    assert run("What's the weather in Paris?") == "Paris: cloudy, 18°C."

@pytest.mark.blackbox_tape(TAPE)
def test_subprocess_agent(blackbox_tape):
    out = subprocess.run([sys.executable, AGENT, "What's the weather in Paris?"], env=blackbox_tape.env(), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Paris: cloudy, 18°C."

def test_unmarked_is_untouched():
    assert "HTTPS_PROXY" not in os.environ and "blackbox" not in os.environ.get("SSL_CERT_FILE", "")
"""
DIVERGES = """
@pytest.mark.blackbox_tape(TAPE)
def test_changed_prompt():
    run("What's the weather in Lyon?")
"""
STOPS_EARLY_AND_OVERRUNS = """
import openai
from openai_weather_agent import TOOLS

@pytest.mark.blackbox_tape(TAPE)
def test_stops_after_the_first_call():
    messages = [
        {"role": "system", "content": "You are a weather assistant. Use get_weather for every city you are asked about."},
        {"role": "user", "content": "What's the weather in Paris?"},
    ]
    ask(openai.OpenAI(), messages, stream=False)

@pytest.mark.blackbox_tape(TAPE)
def test_runs_twice():
    run("What's the weather in Paris?")
    run("What's the weather in Paris?")
"""
SKIPS_AND_XFAILS = """
@pytest.mark.blackbox_tape(TAPE)
def test_skips_itself():
    pytest.skip("not today")

@pytest.mark.xfail(reason="known bug", strict=True)
@pytest.mark.blackbox_tape(TAPE)
def test_expected_failure():
    run("What's the weather in Lyon?")
"""
SEQUENCE = """
@pytest.mark.blackbox_tape(TAPE, mode="sequence")
def test_loose():
    assert run("What's the weather in Lyon?") == "Paris: cloudy, 18°C."
"""
REPLAY_TEST = """
from blackbox_mitm.testing import TapeMismatch, replay_test

def test_ok():
    assert replay_test(TAPE, lambda tape: run("What's the weather in Paris?"), confdir=CONFDIR) == "Paris: cloudy, 18°C."

def test_mismatch():
    with pytest.raises(TapeMismatch, match="content differs at character 22"):
        replay_test(TAPE, lambda tape: run("What's the weather in Lyon?"), confdir=CONFDIR)
"""
AGENT_ONLY = """
@pytest.mark.blackbox_tape(TAPE)
def test_agent():
    assert run("What's the weather in Paris?") == "Paris: cloudy, 18°C."
"""
CHANGED_AND_SAME_AGENT = """
import openai_weather_agent

@pytest.mark.blackbox_tape(TAPE)
def test_changed_agent():  # its tool now says sunny: the second model call leaves the tape
    openai_weather_agent.WEATHER["paris"] = {"forecast": "sunny", "celsius": 24}
    try:
        assert run("What's the weather in Paris?") == "Paris: sunny, 24°C."
    finally:
        openai_weather_agent.WEATHER["paris"] = {"forecast": "cloudy", "celsius": 18}

@pytest.mark.blackbox_tape(WALKED)
def test_same_agent():
    assert run("What's the weather in Paris?") == "Paris: cloudy, 18°C."
"""
RECORDING = ("test_missing.py", "test_record_all.py", "test_record_divergent.py")  # the modules whose tapes get recorded


@dataclass
class Suite:
    """The inner suite's folder, and what its tapes were before any inner session touched them."""

    inner: InnerSuite
    tape: Path  # the weather agent's Paris run, read only
    new_tape: Path  # test_missing.py's tape: not there yet
    again: Path  # test_record_all.py's tape: a copy of the Paris run
    again_id_before: str
    left: Path  # test_record_divergent.py's tape the changed agent leaves (a copy of the Paris run)
    left_before: Trace
    walked: Path  # and the copy the same agent walks
    walked_bytes: bytes


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory, confdir: Path, weather_runs: dict[str, Path]) -> Suite:
    """Every inner test module in one folder, each record test's tapes in a folder of their own."""
    tape = weather_runs["paris"]
    inner = InnerSuite(tmp_path_factory.mktemp("inner-suite"), confdir)
    tapes = inner.path / "tapes"
    again, divergent = tapes / "all", tapes / "divergent"
    for folder in (tapes / "missing", again, divergent):
        folder.mkdir(parents=True)
    (again / "again.json").write_bytes(tape.read_bytes())
    left, walked = divergent / "left.json", divergent / "walked.json"
    left.write_bytes(tape.read_bytes())
    walked.write_bytes(tape.read_bytes())
    modules = {"test_walks.py": WALKS, "test_diverges.py": DIVERGES, "test_stops_early.py": STOPS_EARLY_AND_OVERRUNS}
    modules |= {"test_skip_xfail.py": SKIPS_AND_XFAILS, "test_sequence.py": SEQUENCE, "test_replay_test.py": REPLAY_TEST}
    for name, body in modules.items():
        inner.write(name, body, TAPE=tape, CONFDIR=confdir)
    inner.write("test_missing.py", AGENT_ONLY, TAPE=tapes / "missing" / "new.json")
    inner.write("test_record_all.py", AGENT_ONLY, TAPE=again / "again.json")
    inner.write("test_record_divergent.py", CHANGED_AND_SAME_AGENT, TAPE=left, WALKED=walked)
    return Suite(inner, tape, tapes / "missing" / "new.json", again / "again.json", load_trace(again / "again.json").id, left,
                 load_trace(left), walked, walked.read_bytes())  # fmt: skip


@pytest.fixture(scope="module")
def replays(suite: Suite) -> InnerRun:
    """One inner session, no option: every module but test_record_all.py (whose tests all come after a recording)."""
    return suite.inner.run(*(p.name for p in sorted(suite.inner.path.glob("test_*.py")) if p.name != "test_record_all.py"))


@dataclass
class Recorded:
    """The record tests' inner sessions after ``replays``: refused in CI, recording, then replaying what they recorded."""

    refused: dict[str, InnerRun]  # by --blackbox-record option, run with CI set
    new_tape_after_refusal: bool  # test_missing.py's tape existed right after --blackbox-record was refused
    recorded: dict[str, tuple[InnerRun, int]]  # by option: the session against a fake provider, and its request count
    replayed: InnerRun  # RECORDING again, no option and no provider


@pytest.fixture(scope="module")
def recorded(suite: Suite, replays: InnerRun) -> Recorded:
    """After ``replays`` (test_missing.py's tape is still missing there, test_record_divergent.py's left one mismatches)."""
    options = {"--blackbox-record": "test_missing.py", "--blackbox-record=all": "test_record_all.py"}
    options["--blackbox-record=divergent"] = "test_record_divergent.py"
    refused = {option: suite.inner.run(module, option, ci=True) for option, module in options.items()}
    new_tape_after_refusal = suite.new_tape.exists()
    recordings = {}
    for option, module in options.items():
        with FakeProvider() as provider:
            remote = [f"--blackbox-map-remote={spec}" for spec in map_remote_for(provider.url)]
            run = suite.inner.run(module, option, *remote)  # the module first: --blackbox-record takes a value
            recordings[option] = (run, len(provider.requests))
    return Recorded(refused, new_tape_after_refusal, recordings, suite.inner.run(*RECORDING))


def test_a_test_that_walks_the_tape_passes(replays: InnerRun) -> None:
    replays.assert_outcomes("test_walks.py", passed=3)


def test_divergence_fails_with_the_difference(replays: InnerRun) -> None:
    replays.assert_outcomes("test_diverges.py", failed=1)
    replays.section("test_changed_prompt").fnmatch_lines(
        ["*TapeMismatch*", "*message 0 (user): content differs at character 22*", '*recorded: "What\'s the weather in Paris?"*']
    )


def test_early_stop_and_overrun_fail(replays: InnerRun) -> None:
    replays.assert_outcomes("test_stops_early.py", failed=2)
    replays.section("test_stops_after_the_first_call").fnmatch_lines(["*test_stops_after_the_first_call*", "*incomplete*"])
    replays.section("test_runs_twice").fnmatch_lines(["*test_runs_twice*", "*overran*"])


def test_skip_and_xfail_are_reported_as_they_were(replays: InnerRun) -> None:
    replays.assert_outcomes("test_skip_xfail.py", skipped=1, xfailed=1)


def test_sequence_mode_serves_in_order_whatever_is_asked(replays: InnerRun) -> None:
    replays.assert_outcomes("test_sequence.py", passed=1)


def test_replay_test_without_the_marker(replays: InnerRun) -> None:
    replays.assert_outcomes("test_replay_test.py", passed=2)


def test_missing_tape_fails_or_is_recorded_on_request(replays: InnerRun, recorded: Recorded, suite: Suite) -> None:
    replays.assert_outcomes("test_missing.py", errors=1)  # a missing tape is a set-up error, like a missing fixture
    replays.section("test_agent").fnmatch_lines(["*does not exist*--blackbox-record*"])

    in_ci = recorded.refused["--blackbox-record"].result
    assert in_ci.ret == pytest.ExitCode.USAGE_ERROR
    in_ci.stderr.fnmatch_lines(["*CI is set*--blackbox-record=ci*"])
    assert not recorded.new_tape_after_refusal

    run, requests = recorded.recorded["--blackbox-record"]
    run.assert_outcomes("test_missing.py", passed=1)
    assert requests == 2
    assert [s.type for s in load_trace(suite.new_tape).steps][-1] == "metadata"
    # Now the tape exists: the same test replays it with no provider at all.
    recorded.replayed.assert_outcomes("test_missing.py", passed=1)


def test_record_all_re_records_an_existing_tape_and_is_refused_in_ci(recorded: Recorded, suite: Suite) -> None:
    in_ci = recorded.refused["--blackbox-record=all"].result
    assert in_ci.ret == pytest.ExitCode.USAGE_ERROR
    in_ci.stderr.fnmatch_lines(["*CI is set*re-recording every tape*"])
    run, requests = recorded.recorded["--blackbox-record=all"]
    run.assert_outcomes("test_record_all.py", passed=1)
    assert requests == 2  # the tape existed, and it was recorded afresh
    assert load_trace(suite.again).id != suite.again_id_before
    recorded.replayed.assert_outcomes("test_record_all.py", passed=1)  # and it replays


def test_record_divergent_re_records_a_tape_the_agent_left_and_keeps_one_it_walked(
    replays: InnerRun, recorded: Recorded, suite: Suite
) -> None:
    in_ci = recorded.refused["--blackbox-record=divergent"].result
    assert in_ci.ret == pytest.ExitCode.USAGE_ERROR
    in_ci.stderr.fnmatch_lines(["*CI is set*re-recording the tapes an agent left*"])
    replays.assert_outcomes("test_record_divergent.py", passed=1, failed=1)  # without the option: a mismatch

    run, requests = recorded.recorded["--blackbox-record=divergent"]
    run.assert_outcomes("test_record_divergent.py", passed=2)
    assert requests == 1  # the first call replayed, only the second one live
    assert suite.walked.read_bytes() == suite.walked_bytes  # walked exactly: untouched
    old, new = suite.left_before, load_trace(suite.left)
    assert new.parentId == old.id
    assert [s.hash for s in new.steps[:2]] == [s.hash for s in old.steps[:2]]
    assert new.steps[3].payload["result"] == '{"city":"Paris","forecast":"sunny","celsius":24}'
    assert (suite.left.parent / ".history" / f"left.{old.id}.json").read_bytes() == suite.tape.read_bytes()
    recorded.replayed.assert_outcomes("test_record_divergent.py", passed=2)  # the updated tape replays offline
