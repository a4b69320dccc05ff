"""The Node/TypeScript tape tests (js/tape) under their three runners: node --test, vitest and jest.

Each runner is a real subprocess in js/tape, with BLACKBOX_BIN pointing at this
checkout's ``blackbox`` and the session's CA directory. They replay the fixture tape
js/tape/test/fixtures/weather.json, recorded from the Node example agent
(examples/node/weather_agent.js) against the fake provider; the first test records
it again through the real proxy and checks that the fixture is exactly what that
flow records, so the fixture cannot drift from the agent.

node --test runs the package's own tests and its node:test example suite, which must all pass. The vitest and jest
example suites hold three tests that pass and three that fail on purpose; each of
those failures must carry, as its message, exactly the report that the Python side's
``replay_test`` raises for the same agent doing the same thing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, ROOT, blackbox, remote_args
from fake_provider import FakeProvider
from once import shared

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.testing import TapeMismatch, replay_test

pytestmark = pytest.mark.e2e

TAPE_PKG = ROOT / "js" / "tape"
FIXTURE = TAPE_PKG / "test" / "fixtures" / "weather.json"
AGENT = EXAMPLES / "node" / "weather_agent.js"
QUESTION = "What's the weather in Paris and Lyon?"
CHANGED = "What's the weather in Paris and Nice?"
NODE = shutil.which("node") or "node"

PASSING = (
    "the weather agent follows its recording",
    "a subprocess agent gets the tape through env()",
    "a changed prompt is caught, and the report names the place",
)
FAILING = {
    "fails on purpose: the prompt changed": "diverged",
    "fails on purpose: the agent stops after one call": "incomplete",
    "fails on purpose: the agent asks for more than the tape holds": "overran",
}


def _runner_env(confdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("https_proxy", "http_proxy", "all_proxy")}
    env["BLACKBOX_BIN"] = str(Path(sys.executable).with_name("blackbox"))
    env["BLACKBOX_CONFDIR"] = str(confdir)
    env.pop("NODE_OPTIONS", None)
    return env


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> dict[str, Any]:
    """The three runners, started together, each run to its end."""

    def make(out: Path) -> dict[str, Any]:
        if not (TAPE_PKG / "node_modules" / ".bin" / "vitest").exists() or not (EXAMPLES / "node" / "node_modules" / "openai").exists():
            pytest.fail("js/tape or examples/node has no node_modules: run `bash scripts/setup` (it runs `npm ci` in both)", pytrace=False)
        env = _runner_env(confdir)
        tests = [str(p.relative_to(TAPE_PKG)) for p in sorted((TAPE_PKG / "test").glob("*.test.cjs"))]
        tests += [str(p.relative_to(TAPE_PKG)) for p in sorted((TAPE_PKG / "examples" / "node-test").glob("*.test.mjs"))]
        commands = {
            "node": [NODE, "--test", "--test-reporter=tap", *tests],
            "vitest": [
                str(TAPE_PKG / "node_modules" / ".bin" / "vitest"),
                "run",
                "--config",
                "examples/vitest/vitest.config.mjs",
                "--reporter=json",
                f"--outputFile={out / 'vitest.json'}",
            ],
            "jest": [
                str(TAPE_PKG / "node_modules" / ".bin" / "jest"),
                "--config",
                "examples/jest/jest.config.cjs",
                "--json",
                f"--outputFile={out / 'jest.json'}",
            ],
        }
        procs = {}
        for name, cmd in commands.items():  # output to files: a full pipe would stall a runner nobody is reading yet
            with (out / f"{name}.stdout").open("w") as stdout, (out / f"{name}.stderr").open("w") as stderr:
                procs[name] = subprocess.Popen(cmd, cwd=TAPE_PKG, env=env, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL)
        results: dict[str, Any] = {}
        try:
            for name, proc in procs.items():
                code = proc.wait(timeout=600)
                results[name] = {
                    "code": code,
                    "stdout": (out / f"{name}.stdout").read_text(),
                    "stderr": (out / f"{name}.stderr").read_text(),
                    "json": out / f"{name}.json",
                }
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.kill()
        return results

    return shared(tmp_path_factory, "js-runners", make)  # once a test session (tests/once.py)


def _python_report(fn: Any, **options: Any) -> str:
    """The message of the TapeMismatch that the Python side's replay_test raises for ``fn``."""
    with pytest.raises(TapeMismatch) as caught:
        replay_test(FIXTURE, fn, **options)
    return str(caught.value)


@pytest.fixture(scope="module")
def python_reports(confdir: Path) -> dict[str, str]:
    """What the Python side reports for each regression in the example suites, done the same way."""

    def agent(tape: Any, question: str) -> None:
        subprocess.run([NODE, str(AGENT), question], env=tape.env(), capture_output=True, timeout=120)

    def one_call(tape: Any) -> None:
        from openai import OpenAI

        OpenAI().chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": QUESTION}])

    def twice(tape: Any) -> None:
        agent(tape, QUESTION)
        agent(tape, QUESTION)

    return {
        "diverged": _python_report(lambda tape: agent(tape, CHANGED), confdir=confdir),
        "incomplete": _python_report(one_call, mode="sequence", confdir=confdir),
        "overran": _python_report(twice, confdir=confdir),
    }


def _message(failure: str) -> str:
    """A runner's failure text without the error's name and stack: the error's message."""
    text = failure.removeprefix("TapeMismatch: ")
    return re.split(r"\n    at ", text, maxsplit=1)[0]


def _suite_results(path: Path) -> dict[str, tuple[str, list[str]]]:
    data = json.loads(path.read_text())
    return {a["title"]: (a["status"], a["failureMessages"]) for suite in data["testResults"] for a in suite["assertionResults"]}


def test_fixture_tape_is_what_the_node_example_records(tmp_path: Path, confdir: Path) -> None:
    with FakeProvider() as provider:
        cassette = tmp_path / "weather.json"
        rec = blackbox(
            "record", "-o", str(cassette), "--confdir", str(confdir), *remote_args(provider.url), "--", NODE, str(AGENT), QUESTION
        )
        assert rec.returncode == 0, rec.stderr
    fresh, fixture = load_trace(cassette), load_trace(FIXTURE)
    assert [(s.type, s.payload) for s in fresh.steps] == [(s.type, s.payload) for s in fixture.steps], (
        "js/tape/test/fixtures/weather.json is stale: re-record it with "
        "`blackbox record -o js/tape/test/fixtures/weather.json -- node examples/node/weather_agent.js "
        f'"{QUESTION}"` against examples/fake_provider.py and update the run id in the example suites'
    )


def test_node_test_runs_the_package_tests_green(runs: dict[str, Any]) -> None:
    run = runs["node"]
    assert run["code"] == 0, run["stdout"][-4000:] + run["stderr"][-2000:]
    oks = re.findall(r"^ok \d+ - (.+)$", run["stdout"], re.M)
    assert not re.search(r"^not ok", run["stdout"], re.M)
    for name in (
        "an agent that walks the recording gets its recorded answers, and replayTest returns what fn returned",
        "a diverging agent fails with the same report the blackbox CLI prints, and the refused call as its cause",
        "an agent that stops early fails as incomplete, even though fn itself succeeded",
        "an agent that makes more calls than the tape holds fails as overran, with its error as the cause",
        "node:https requests are routed and trust the replay CA too",
        "overlapping replayTest calls in one process are refused with the reason; the first goes on",
        "separate processes replay at the same time, each with its own proxy",
        "after a tape, the environment, fetch and node:https are as they were",
        "the types compile, and reject a bad match, a bad pace, a missing fn and an unknown option",
        *PASSING,  # the node:test example suite
    ):
        assert name in oks, f"node --test did not pass {name!r}"
    assert re.search(r"^# fail 0$", run["stdout"], re.M)


@pytest.mark.parametrize("runner", ["vitest", "jest"])
def test_example_suite_reports_each_regression_with_the_python_report(
    runner: str, runs: dict[str, Any], python_reports: dict[str, str]
) -> None:
    run = runs[runner]
    assert run["code"] == 1, f"{runner} should fail (three tests fail on purpose)\n{run['stdout'][-3000:]}{run['stderr'][-3000:]}"
    results = _suite_results(run["json"])
    assert set(results) == {*PASSING, *FAILING}, results.keys()
    for title in PASSING:
        status, failures = results[title]
        assert status == "passed", f"{runner}: {title}: {failures}"
    for title, outcome in FAILING.items():
        status, failures = results[title]
        assert status == "failed", f"{runner}: {title} passed, but it must fail as {outcome}"
        assert failures[0].startswith("TapeMismatch: "), failures[0][:300]
        assert _message(failures[0]) == python_reports[outcome], f"{runner}: {title}"
        assert python_reports[outcome].startswith(f"replay of recorded run {load_trace(FIXTURE).id}: {outcome} — ")


def test_replay_test_record_modes_against_a_live_fake_provider(tmp_path: Path, confdir: Path) -> None:
    """js/tape/test/record-modes.cjs under node --test: record 'missing', 'divergent' and 'all', and CI refusing them."""
    from conftest import map_remote_for

    env = _runner_env(confdir)
    env["OPENAI_API_KEY"] = "sk-test-not-a-real-key-000"
    env["BLACKBOX_TEST_DIR"] = str(tmp_path)
    env.pop("CI", None)
    with FakeProvider() as provider:
        env["BLACKBOX_TEST_MAP_REMOTE"] = json.dumps(map_remote_for(provider.url))
        proc = subprocess.run(
            [NODE, "--test", "--test-reporter=tap", "test/record-modes.cjs"],
            cwd=TAPE_PKG, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        live = len(provider.requests)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert re.search(r"^# pass 5$", proc.stdout, re.M) and re.search(r"^# fail 0$", proc.stdout, re.M), proc.stdout
    # missing: its calls; divergent: the rewound run's (the first call changed: all live); all: its calls.
    calls = sum(s.type == "model_input" for s in load_trace(FIXTURE).steps)
    assert live == 3 * calls
    kept = tmp_path / ".history" / f"left.{load_trace(FIXTURE).id}.json"
    assert kept.read_bytes() == FIXTURE.read_bytes()
    assert load_trace(tmp_path / "left.json").parentId == load_trace(FIXTURE).id
