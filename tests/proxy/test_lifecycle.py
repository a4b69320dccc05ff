"""``proxy.lifecycle.proxy_run``: one run's life through a real in-process mitmproxy, start to terminal event.

The wrapped commands are real processes; the model calls go to the fake provider
(a real HTTP server on 127.0.0.1) through ``map_remote``.
"""

from __future__ import annotations

import socket
import sys
import threading
from pathlib import Path

import pytest
from conftest import EXAMPLES, map_remote_for
from fake_provider import FakeProvider

from blackbox_mitm.cassette import journal_path, load_trace, recover_journal
from blackbox_mitm.errors import ProxyStartError
from blackbox_mitm.proxy.lifecycle import ProxySettings, proxy_run
from blackbox_mitm.session.build import record_session, replay_session

AGENT = [sys.executable, str(EXAMPLES / "openai_weather_agent.py"), "What's the weather in Paris?"]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000")
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("https_proxy", raising=False)


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


@pytest.mark.e2e  # a real agent process through the proxy, recorded and replayed: make test, not make test-fast
def test_a_recorded_run_is_finished_with_its_terminal_event(tmp_path: Path, confdir: Path) -> None:
    out = tmp_path / "run.json"
    session = record_session(out, fsync=False)
    with FakeProvider() as provider:
        settings = ProxySettings(confdir=confdir, map_remote=map_remote_for(provider.url))
        with proxy_run(session, settings=settings) as run:
            assert run.run_command(AGENT) == 0
    assert run.exit_code == 0 and run.cassette == out and run.discarded is None
    trace = load_trace(out)
    assert [s.type for s in trace.steps] == [
        "model_input",
        "model_output",
        "tool_call",
        "tool_result",
        "model_input",
        "model_output",
        "metadata",
    ]
    assert trace.steps[-1].payload == {"event": "run_completed", "status": "success", "result": "Paris: cloudy, 18°C."}
    assert not journal_path(out).exists()

    replayed = replay_session(out)
    with proxy_run(replayed, settings=ProxySettings(confdir=confdir)) as again:
        again.run_command(AGENT)
    assert again.report is not None
    assert (again.report["verdict"], again.report["model_calls_served"], again.report["exit_code"]) == ("ok", 2, 0)


def test_the_commands_exit_status_ends_the_run(tmp_path: Path, confdir: Path) -> None:
    out = tmp_path / "run.json"
    with proxy_run(record_session(out, fsync=False), settings=ProxySettings(confdir=confdir)) as run:
        assert run.run_command(_python("raise SystemExit(3)")) == 3
    assert load_trace(out).steps[-1].payload == {"event": "run_failed", "status": "error", "reason": "process_exit", "exitCode": 3}


def test_keep_may_discard_the_recording(tmp_path: Path, confdir: Path) -> None:
    out = tmp_path / "child.json"
    session = record_session(out, fsync=False)
    with proxy_run(session, settings=ProxySettings(confdir=confdir), keep=lambda s: "the prefix diverged") as run:
        run.run_command(_python("pass"))
    assert run.discarded == "the prefix diverged" and run.cassette is None
    assert not out.exists() and not journal_path(out).exists()


def test_a_proxy_that_cannot_listen_leaves_no_journal(tmp_path: Path, confdir: Path) -> None:
    out = tmp_path / "run.json"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        settings = ProxySettings(confdir=confdir, listen_port=taken.getsockname()[1])
        with pytest.raises(ProxyStartError), proxy_run(record_session(out, fsync=False), settings=settings):
            pytest.fail("the body must not run when the proxy did not start")
    assert not out.exists() and not journal_path(out).exists()


def test_a_run_that_breaks_off_leaves_its_journal_for_recover(tmp_path: Path, confdir: Path) -> None:
    out = tmp_path / "run.json"
    with (
        pytest.raises(KeyboardInterrupt),
        proxy_run(record_session(out, fsync=False), settings=ProxySettings(confdir=confdir)) as run,
    ):
        assert run.url.startswith("http://127.0.0.1:")
        raise KeyboardInterrupt
    assert not out.exists() and journal_path(out).exists()
    recovered, _ = recover_journal(out, quiet=True)  # the journal was closed: no longer locked as live
    assert load_trace(recovered).steps[-1].payload["reason"] == "recording_interrupted"


def test_a_run_that_ends_with_the_proxy_says_so(tmp_path: Path, confdir: Path) -> None:
    out = tmp_path / "run.json"
    stop = threading.Event()
    with proxy_run(record_session(out, fsync=False), settings=ProxySettings(confdir=confdir)) as run:
        threading.Timer(0.2, stop.set).start()
        run.wait(stop)
    assert run.exit_code is None
    assert load_trace(out).steps[-1].payload["reason"] == "proxy_stopped"


def test_the_wrapped_command_is_set_to_die_with_blackbox(tmp_path: Path, confdir: Path) -> None:
    """Linux: the child asks the kernel which signal it gets when its parent dies (PR_GET_PDEATHSIG)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("parent-death signals are Linux's")
    seen = tmp_path / "pdeathsig"
    code = (
        "import ctypes, ctypes.util\n"
        "sig = ctypes.c_int(0)\n"
        "ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6').prctl(2, ctypes.byref(sig), 0, 0, 0)\n"
        f"open({str(seen)!r}, 'w').write(str(sig.value))\n"
    )
    with proxy_run(record_session(tmp_path / "run.json", fsync=False), settings=ProxySettings(confdir=confdir)) as run:
        assert run.run_command(_python(code)) == 0
    assert seen.read_text() == "9"  # SIGKILL
