"""Shared fixtures: a CA directory made once per session, the fake provider, running `blackbox` for real, and the
weather agent's Paris and Lyon runs recorded once per session for the tests that only replay or copy them."""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The suite behaves the same on a developer's machine and in a CI job: `blackbox test --update` (and some agent
# programs) act differently when CI is set, so it is unset here and a test that wants it sets it itself.
for _ci_variable in ("CI", "CONTINUOUS_INTEGRATION", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE"):
    os.environ.pop(_ci_variable, None)
# The suite starts a few thousand Python processes (`blackbox`, agents, fake servers, inner pytest sessions). With
# PYTHONDONTWRITEBYTECODE set (as in this project's containers) nothing of blackbox_mitm, examples/ or tests/ is ever
# cached, so each of them compiles those modules again (~0.2 s of CPU a `blackbox` process). The children get a
# bytecode cache of their own instead, outside the source tree (nothing is written next to a source file).
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) and "PYTHONPYCACHEPREFIX" not in os.environ:
    os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), f"blackbox-tests-pycache-{os.getuid()}")
# Which cassette contents verified before (cassette/verified_cache.py): one folder for the session and its processes,
# never the developer's ~/.cache, removed at the end by the process that made it.
if "BLACKBOX_CACHE_DIR" not in os.environ:
    os.environ["BLACKBOX_CACHE_DIR"] = tempfile.mkdtemp(prefix="blackbox-tests-cache-")
    atexit.register(shutil.rmtree, os.environ["BLACKBOX_CACHE_DIR"], ignore_errors=True)
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))


@pytest.fixture(scope="session")
def confdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """mitmproxy's confdir with a CA, shared by the whole run (creating a CA takes a moment)."""
    from blackbox_mitm.proxy.environment import ensure_ca

    d = tmp_path_factory.mktemp("mitmproxy-confdir")
    ensure_ca(d)
    return d


@pytest.fixture
def fake_provider() -> Iterator[object]:
    from fake_provider import FakeProvider

    with FakeProvider() as provider:
        yield provider


WEATHER_AGENT = [sys.executable, str(EXAMPLES / "openai_weather_agent.py")]
WEATHER_QUESTIONS = {"paris": "What's the weather in Paris?", "lyon": "What's the weather in Lyon?"}
WEATHER_ANSWERS = {"paris": "Paris: cloudy, 18°C.", "lyon": "Lyon: rain, 15°C."}


@pytest.fixture(scope="session")
def weather_runs(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> dict[str, Path]:
    """examples/openai_weather_agent.py asked about Paris and about Lyon, each recorded with `blackbox record` against
    the fake provider once per test session (by the first xdist worker to ask: tests/once.py), not once per module or
    worker: the goldens' and the tapes' tests share them. Read only: a test that changes a run (re-records, updates,
    tampers) copies it first."""
    from fake_provider import FakeProvider
    from once import once, session_folder

    folder = session_folder(tmp_path_factory, "weather-runs")

    def make() -> dict[str, Path]:
        out: dict[str, Path] = {}
        with FakeProvider() as provider:
            remote = remote_args(provider.url)
            for name, question in WEATHER_QUESTIONS.items():
                cassette = folder / f"{name}.json"
                cassette.unlink(missing_ok=True)  # an attempt that failed (in another worker) left its file
                rec = blackbox(
                    "record", "-o", str(cassette), "--confdir", str(confdir), *remote, "--", *WEATHER_AGENT, question, check=True
                )
                assert rec.stdout.strip() == WEATHER_ANSWERS[name]
                out[name] = cassette
        return out

    return once(folder, "weather-runs", make)


def map_remote_for(url: str) -> list[str]:
    """map_remote specs sending both providers' hosts to a local fake provider."""
    return [rf"|https://api\.openai\.com|{url}", rf"|https://api\.anthropic\.com|{url}"]


def remote_args(url: str) -> list[str]:
    """``--map-remote SPEC`` for each provider host, ready to splice into a `blackbox` command line."""
    return [arg for spec in map_remote_for(url) for arg in ("--map-remote", spec)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(proc: subprocess.Popen[str], port: int, what: str = "the proxy", timeout: float = 60) -> None:
    """Wait until ``proc`` listens on 127.0.0.1:``port``; kill it and fail with its output if it never does."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.2)
    proc.kill()
    out = proc.stdout.read() if proc.stdout else ""
    err = proc.stderr.read() if proc.stderr else ""
    raise AssertionError(f"{what} did not start listening on 127.0.0.1:{port}\n{out}{err}")


def blackbox(*args: str, env: dict[str, str] | None = None, timeout: float = 180, check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the real `blackbox` command (a separate process, a real proxy)."""
    full_env = dict(os.environ)
    full_env.pop("HTTPS_PROXY", None)
    full_env.pop("https_proxy", None)
    full_env.setdefault("OPENAI_API_KEY", "sk-test-not-a-real-key-000")
    full_env.setdefault("ANTHROPIC_API_KEY", "sk-test-not-a-real-key-000")
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "blackbox_mitm", *args], env=full_env, capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"blackbox {' '.join(args)} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook, which reads the xdist_group marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Property-based tests (hypothesis) are marked ``fuzz``: ``make test`` runs them, ``make test-fast`` leaves them
    out (they are most of its CPU), ``make fuzz`` runs them with 5,000 examples each (tests/fuzz/fuzz_strategies.py).

    A test using a module's own recording (a module-scoped fixture of its module that asks for ``tmp_path_factory``:
    it records a run once for the tests that only replay, fork or inspect it) is in that recording's xdist group: run
    with ``--dist loadgroup`` they go to one worker, which records the run once, not once per worker (``make test``'s
    ``--dist worksteal`` ignores the groups, as ``load`` does: replaying pytest-xdist's schedulers over a measured
    per-test timing of the whole suite, ``load`` left one worker running alone for the last fifth of the run, ``worksteal``
    ends the three workers within 2% of each other)."""
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.fuzz)
        group = _recording_group(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))


def _recording_group(item: pytest.Item) -> str | None:
    """``module::fixture`` for the first module recording ``item`` uses, or None."""
    info = getattr(item, "_fixtureinfo", None)
    module = getattr(getattr(item, "module", None), "__name__", None)
    if info is None or module is None:
        return None
    for name in info.names_closure:
        for definition in info.name2fixturedefs.get(name, ()):
            if definition.scope == "module" and "tmp_path_factory" in definition.argnames and definition.func.__module__ == module:
                return f"{module}::{name}"
    return None
