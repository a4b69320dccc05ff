"""Inner pytest sessions shared by several tests: one folder of inner test modules, run in a subprocess, each run's
outcome kept per inner test, each inner test's part of the output found by its name.

``pytester`` is function-scoped, so a module-scoped fixture cannot use it; ``InnerSuite.run`` does what
``pytester.runpytest_subprocess`` does (``python -m pytest`` in the suite's folder, the plugin loaded from its pytest11
entry point, ``--basetemp`` of its own, ``HOME`` a fresh folder, ``PYTEST_ADDOPTS`` unset, ``PY_COLORS=0``, the folder on
``PYTHONPATH``, stdin closed) and returns pytester's own ``RunResult``. The folder's ``conftest.py`` writes each inner
test's categories as pytest counts them (the terminal reporter's ``stats``, which its summary line is made of) to a file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import EXAMPLES

OUTCOMES = "BLACKBOX_TEST_INNER_OUTCOMES"  # where the inner conftest writes the outcomes
CONFTEST = f"""
import json, os

def pytest_terminal_summary(terminalreporter):
    outcomes = {{}}
    for category, reports in terminalreporter.stats.items():
        for report in reports:
            if getattr(report, "count_towards_summary", True) and getattr(report, "nodeid", None) is not None:
                outcomes.setdefault(report.nodeid, []).append(category)
    with open(os.environ[{OUTCOMES!r}], "w") as f:
        json.dump(outcomes, f)
"""
HEADER = f"""
import os, subprocess, sys
import pytest
sys.path.insert(0, {str(EXAMPLES)!r})
from openai_weather_agent import run, ask
AGENT = {str(EXAMPLES / "openai_weather_agent.py")!r}
"""
# the terminal reporter's categories as RunResult.assert_outcomes names them
NAMES = {"passed": "passed", "failed": "failed", "error": "errors", "skipped": "skipped", "xfailed": "xfailed", "xpassed": "xpassed"}


@dataclass
class InnerRun:
    """One inner session: pytester's ``RunResult``, and each inner node id's categories."""

    result: pytest.RunResult
    outcomes: dict[str, list[str]]

    def counts(self, module: str | None = None) -> dict[str, int]:
        """The outcomes of ``module``'s tests (of every test when None), named and counted as ``assert_outcomes`` does."""
        counted = Counter(
            NAMES[category]
            for nodeid, categories in self.outcomes.items()
            if module is None or nodeid.split("::")[0] == module
            for category in categories
            if category in NAMES
        )
        return dict(counted)

    def assert_outcomes(self, module: str, **expected: int) -> None:
        """``RunResult.assert_outcomes`` for ``module``'s tests alone (the whole session's summary line agreeing)."""
        summary = {name: n for name, n in self.result.parseoutcomes().items() if name in NAMES.values()}
        assert self.counts() == summary, self.result.stdout.str()
        assert self.counts(module) == {name: n for name, n in expected.items() if n}, self.result.stdout.str()

    def section(self, test: str) -> pytest.LineMatcher:
        """The output of inner test ``test`` (a function's name): its ``___ test ___`` failure or error section."""
        lines = self.result.outlines
        titles = (test, f"ERROR at setup of {test}", f"ERROR at teardown of {test}")
        starts = [i for i, line in enumerate(lines) if line.startswith("__") and line.strip("_ ") in titles]
        assert len(starts) == 1, f"{len(starts)} sections for {test}:\n" + "\n".join(lines)
        end = starts[0] + 1
        while end < len(lines) and not lines[end].startswith(("__", "=")):  # "_ _ _" parts a traceback's entries
            end += 1
        return pytest.LineMatcher(lines[starts[0] : end])


class InnerSuite:
    """A folder of inner test modules, run with ``python -m pytest`` in a subprocess."""

    def __init__(self, path: Path, confdir: Path) -> None:
        self.path, self.confdir, self._runs = path, confdir, 0
        (path / "conftest.py").write_text(CONFTEST)

    def write(self, name: str, body: str, **constants: object) -> Path:
        """The test module ``name``: the weather agent imported, ``constants`` as strings, then ``body``."""
        defined = "".join(f"{key} = {str(value)!r}\n" for key, value in constants.items())
        module = self.path / name
        module.write_text(HEADER + defined + body)
        return module

    def run(self, *args: str, ci: bool = False) -> InnerRun:
        """``python -m pytest -p no:cacheprovider --blackbox-confdir=... ARGS``; CI is unset (as on a developer's
        machine) unless asked, and the provider key set (recording talks to a provider, which wants one)."""
        self._runs += 1
        basetemp, home, outcomes = (self.path / f"{what}-{self._runs}" for what in ("runpytest", "home", "outcomes"))
        home.mkdir()
        env = {name: value for name, value in os.environ.items() if name not in ("CI", "PYTEST_ADDOPTS", "TOX_ENV_DIR")}
        env |= {"HOME": str(home), "USERPROFILE": str(home), "PY_COLORS": "0", "PYTEST_DEBUG_TEMPROOT": str(self.path)}
        env |= {"PYTHONPATH": os.pathsep.join(filter(None, [str(self.path), env.get("PYTHONPATH", "")]))}
        env |= {"OPENAI_API_KEY": "sk-test-not-a-real-key-000", OUTCOMES: str(outcomes)} | ({"CI": "true"} if ci else {})
        command = [sys.executable, "-m", "pytest", f"--basetemp={basetemp}", "-p", "no:cacheprovider"]
        start = time.time()
        proc = subprocess.run(
            [*command, f"--blackbox-confdir={self.confdir}", *args],
            cwd=self.path, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        result = pytest.RunResult(proc.returncode, proc.stdout.splitlines(), proc.stderr.splitlines(), time.time() - start)
        return InnerRun(result, json.loads(outcomes.read_text()) if outcomes.exists() else {})
