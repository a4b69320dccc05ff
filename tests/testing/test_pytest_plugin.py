"""The pytest plugin through pytester: tape tests pass, fail with the difference, and leave other tests alone.

Each inner session runs in a subprocess (as a user's suite would), with the plugin
loaded from its pytest11 entry point and a real in-process replay proxy per test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, map_remote_for
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def tape(weather_runs: dict[str, Path]) -> Path:
    """The weather agent's Paris run, recorded once per session (tests/conftest.py): a test that re-records copies it."""
    return weather_runs["paris"]


def _header(tape: Path) -> str:
    return f"""
import os, subprocess, sys
import pytest
sys.path.insert(0, {str(EXAMPLES)!r})
from openai_weather_agent import run, ask
TAPE = {str(tape)!r}
AGENT = {str(EXAMPLES / "openai_weather_agent.py")!r}
"""


def _run(pytester: pytest.Pytester, confdir: Path, *args: str, ci: bool = False) -> pytest.RunResult:
    """Run the inner suite in a subprocess; CI is unset (as on a developer's machine) unless asked."""
    mp = pytest.MonkeyPatch()
    try:
        mp.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000")  # recording talks to a provider, which wants a key
        if ci:
            mp.setenv("CI", "true")
        else:
            mp.delenv("CI", raising=False)
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--blackbox-confdir={confdir}", *args, timeout=240)
    finally:
        mp.undo()


def test_a_test_that_walks_the_tape_passes(pytester: pytest.Pytester, confdir: Path, tape: Path) -> None:
    pytester.makepyfile(
        _header(tape)
        + """
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
    )
    result = _run(pytester, confdir)
    result.assert_outcomes(passed=3)


def test_divergence_fails_with_the_difference(pytester: pytest.Pytester, confdir: Path, tape: Path) -> None:
    pytester.makepyfile(
        _header(tape)
        + """
@pytest.mark.blackbox_tape(TAPE)
def test_changed_prompt():
    run("What's the weather in Lyon?")
"""
    )
    result = _run(pytester, confdir)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*TapeMismatch*", "*message 0 (user): content differs at character 22*", '*recorded: "What\'s the weather in Paris?"*']
    )


def test_early_stop_and_overrun_fail(pytester: pytest.Pytester, confdir: Path, tape: Path) -> None:
    pytester.makepyfile(
        _header(tape)
        + """
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
    )
    result = _run(pytester, confdir)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*test_stops_after_the_first_call*", "*incomplete*"])
    result.stdout.fnmatch_lines(["*test_runs_twice*", "*overran*"])


def test_skip_and_xfail_are_reported_as_they_were(pytester: pytest.Pytester, confdir: Path, tape: Path) -> None:
    pytester.makepyfile(
        _header(tape)
        + """
@pytest.mark.blackbox_tape(TAPE)
def test_skips_itself():
    pytest.skip("not today")

@pytest.mark.xfail(reason="known bug", strict=True)
@pytest.mark.blackbox_tape(TAPE)
def test_expected_failure():
    run("What's the weather in Lyon?")
"""
    )
    result = _run(pytester, confdir)
    result.assert_outcomes(skipped=1, xfailed=1)


def test_sequence_mode_serves_in_order_whatever_is_asked(pytester: pytest.Pytester, confdir: Path, tape: Path) -> None:
    pytester.makepyfile(
        _header(tape)
        + """
@pytest.mark.blackbox_tape(TAPE, mode="sequence")
def test_loose():
    assert run("What's the weather in Lyon?") == "Paris: cloudy, 18°C."
"""
    )
    _run(pytester, confdir).assert_outcomes(passed=1)


def test_replay_test_without_the_marker(pytester: pytest.Pytester, confdir: Path, tape: Path) -> None:
    pytester.makepyfile(
        _header(tape)
        + f"""
from blackbox_mitm.testing import TapeMismatch, replay_test

def test_ok():
    assert replay_test(TAPE, lambda tape: run("What's the weather in Paris?"), confdir={str(confdir)!r}) == "Paris: cloudy, 18°C."

def test_mismatch():
    with pytest.raises(TapeMismatch, match="content differs at character 22"):
        replay_test(TAPE, lambda tape: run("What's the weather in Lyon?"), confdir={str(confdir)!r})
"""
    )
    _run(pytester, confdir).assert_outcomes(passed=2)


def test_missing_tape_fails_or_is_recorded_on_request(pytester: pytest.Pytester, confdir: Path, tmp_path: Path) -> None:
    new_tape = tmp_path / "new.json"
    pytester.makepyfile(
        _header(new_tape)
        + """
@pytest.mark.blackbox_tape(TAPE)
def test_agent():
    assert run("What's the weather in Paris?") == "Paris: cloudy, 18°C."
"""
    )
    missing = _run(pytester, confdir)
    missing.assert_outcomes(errors=1)  # a missing tape is a set-up error, like a missing fixture
    missing.stdout.fnmatch_lines(["*does not exist*--blackbox-record*"])

    in_ci = _run(pytester, confdir, "--blackbox-record", ci=True)
    assert in_ci.ret == pytest.ExitCode.USAGE_ERROR
    in_ci.stderr.fnmatch_lines(["*CI is set*--blackbox-record=ci*"])
    assert not new_tape.exists()

    with FakeProvider() as provider:
        remote = [f"--blackbox-map-remote={spec}" for spec in map_remote_for(provider.url)]
        recorded = _run(pytester, confdir, "--blackbox-record", *remote)
        recorded.assert_outcomes(passed=1)
        assert len(provider.requests) == 2
    assert [s.type for s in load_trace(new_tape).steps][-1] == "metadata"
    # Now the tape exists: the same test replays it with no provider at all.
    _run(pytester, confdir).assert_outcomes(passed=1)


def test_record_all_re_records_an_existing_tape_and_is_refused_in_ci(
    pytester: pytest.Pytester, confdir: Path, tmp_path: Path, tape: Path
) -> None:
    copy = tmp_path / "again.json"
    copy.write_bytes(tape.read_bytes())
    before = load_trace(copy).id
    pytester.makepyfile(
        _header(copy)
        + """
@pytest.mark.blackbox_tape(TAPE)
def test_agent():
    assert run("What's the weather in Paris?") == "Paris: cloudy, 18°C."
"""
    )
    in_ci = _run(pytester, confdir, "--blackbox-record=all", ci=True)
    assert in_ci.ret == pytest.ExitCode.USAGE_ERROR
    in_ci.stderr.fnmatch_lines(["*CI is set*re-recording every tape*"])
    with FakeProvider() as provider:
        remote = [f"--blackbox-map-remote={spec}" for spec in map_remote_for(provider.url)]
        _run(pytester, confdir, "--blackbox-record=all", *remote).assert_outcomes(passed=1)
        assert len(provider.requests) == 2  # the tape existed, and it was recorded afresh
    assert load_trace(copy).id != before
    _run(pytester, confdir).assert_outcomes(passed=1)  # and it replays


def test_record_divergent_re_records_a_tape_the_agent_left_and_keeps_one_it_walked(
    pytester: pytest.Pytester, confdir: Path, tmp_path: Path, tape: Path
) -> None:
    left, walked = tmp_path / "left.json", tmp_path / "walked.json"
    left.write_bytes(tape.read_bytes())
    walked.write_bytes(tape.read_bytes())
    old = load_trace(left)
    pytester.makepyfile(
        _header(left)
        + f"""
import openai_weather_agent

@pytest.mark.blackbox_tape(TAPE)
def test_changed_agent():  # its tool now says sunny: the second model call leaves the tape
    openai_weather_agent.WEATHER["paris"] = {{"forecast": "sunny", "celsius": 24}}
    try:
        assert run("What's the weather in Paris?") == "Paris: sunny, 24°C."
    finally:
        openai_weather_agent.WEATHER["paris"] = {{"forecast": "cloudy", "celsius": 18}}

@pytest.mark.blackbox_tape({str(walked)!r})
def test_same_agent():
    assert run("What's the weather in Paris?") == "Paris: cloudy, 18°C."
"""
    )
    walked_bytes = walked.read_bytes()
    in_ci = _run(pytester, confdir, "--blackbox-record=divergent", ci=True)
    assert in_ci.ret == pytest.ExitCode.USAGE_ERROR
    in_ci.stderr.fnmatch_lines(["*CI is set*re-recording the tapes an agent left*"])
    _run(pytester, confdir).assert_outcomes(passed=1, failed=1)  # without the option: a mismatch

    with FakeProvider() as provider:
        remote = [f"--blackbox-map-remote={spec}" for spec in map_remote_for(provider.url)]
        _run(pytester, confdir, "--blackbox-record=divergent", *remote).assert_outcomes(passed=2)
        assert len(provider.requests) == 1  # the first call replayed, only the second one live
    assert walked.read_bytes() == walked_bytes  # walked exactly: untouched
    new = load_trace(left)
    assert new.parentId == old.id
    assert [s.hash for s in new.steps[:2]] == [s.hash for s in old.steps[:2]]
    assert new.steps[3].payload["result"] == '{"city":"Paris","forecast":"sunny","celsius":24}'
    assert (tmp_path / ".history" / f"left.{old.id}.json").read_bytes() == tape.read_bytes()
    _run(pytester, confdir).assert_outcomes(passed=2)  # the updated tape replays offline
