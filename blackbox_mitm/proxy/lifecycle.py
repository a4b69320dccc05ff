"""One run through the in-process proxy, from its start to the run's terminal event.

Record, replay, fork, the long-running proxy and the pytest tape all live the same
life, written here once::

    with proxy_run(session, settings=ProxySettings(map_remote=...)) as run:
        run.run_command(argv)      # or run.wait() for a proxy that serves until stopped
    run.cassette                   # the cassette written, run.discarded why none was, run.report a replay's status

Start the proxy with the session's addon (a recording that cannot start is
discarded: nothing ran); run the wrapped command or wait for Ctrl-C / SIGTERM;
stop the proxy; then end the session: a recording is finished with its terminal
event (or discarded when ``keep`` says why not, as a fork does), a replay gets
its report. When the body raises, the proxy is stopped and the journal is left
for ``recover``: nothing recorded is lost.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from blackbox_mitm.proxy.environment import client_env
from blackbox_mitm.proxy.runner import ProxyRunner
from blackbox_mitm.proxy.wrap import proxy_for, run_command
from blackbox_mitm.session.build import ReplayReport, replay_report
from blackbox_mitm.session.engine import Session

__all__ = ["ProxyRun", "ProxySettings", "proxy_run", "wait_for_stop"]


@dataclass(frozen=True, slots=True)
class ProxySettings:
    """How the proxy is set up: extra provider hosts, CA folder, upstream rewrites, listening address."""

    hosts: Sequence[str] = ()  # each HOST or HOST=CODEC (the codec it speaks)
    confdir: str | Path | None = None
    map_remote: Sequence[str] = ()
    offline: bool = True  # a replay answers every other host locally
    listen_host: str = "127.0.0.1"
    listen_port: int = 0
    stream_delay_ms: int = 0


@dataclass(slots=True)
class ProxyRun:
    """A started run: its proxy, and once it ended, what became of it."""

    session: Session
    runner: ProxyRunner
    settings: ProxySettings
    exit_code: int | None = None  # the wrapped command's (None: the run ended with the proxy)
    cassette: Path | None = None  # the recording written at the end
    discarded: str | None = None  # why the recording was dropped instead
    report: ReplayReport | None = None  # a replay's end-of-run status
    _proxy_only: bool = field(default=False, repr=False)

    @property
    def replaying(self) -> bool:
        return self.session.mode == "replay"

    @property
    def url(self) -> str:
        return self.runner.url

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment that points a client at this proxy (proxy, CA bundles, Node preload, keys)."""
        return client_env(self.url, confdir=self.settings.confdir, base=base, replaying=self.replaying)

    def run_command(self, argv: Sequence[str], *, extra_env: dict[str, str] | None = None) -> int:
        """Run ``argv`` through the proxy and wait for it; its status is the run's exit code."""
        self.exit_code = run_command(argv, self.runner, confdir=self.settings.confdir, replaying=self.replaying, extra_env=extra_env)
        return self.exit_code

    def wait(self, stop: threading.Event | None = None) -> None:
        """Serve until ``stop`` is set, Ctrl-C, or SIGTERM: the run ends with the proxy."""
        self._proxy_only = True
        wait_for_stop(stop or threading.Event())


def wait_for_stop(stop: threading.Event) -> None:
    """Block until ``stop`` is set, Ctrl-C, or SIGTERM (a container stopped)."""
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


@contextmanager
def proxy_run(
    session: Session,
    *,
    settings: ProxySettings | None = None,
    keep: Callable[[Session], str | None] | None = None,
) -> Iterator[ProxyRun]:
    """Start the proxy for ``session``, yield the run, then stop it and end the session.

    ``keep(session)`` returns why a finished recording must be dropped (``None``
    keeps it). Raises ``ProxyStartError`` when the proxy cannot listen.
    """
    settings = settings or ProxySettings()
    runner = proxy_for(
        session,
        hosts=settings.hosts,
        confdir=settings.confdir,
        map_remote=settings.map_remote,
        offline=settings.offline,
        listen_host=settings.listen_host,
        listen_port=settings.listen_port,
        stream_delay_ms=settings.stream_delay_ms,
    )
    try:
        runner.start()
    except BaseException:
        if session.recorder is not None:
            session.recorder.discard()  # nothing ran: no cassette, no journal
        raise
    run = ProxyRun(session, runner, settings)
    try:
        yield run
    except BaseException:
        runner.stop()
        _abandon(session)
        raise
    runner.stop()
    _end(run, keep)


def _abandon(session: Session) -> None:
    """The run broke off: close the journal, unlocked and whole, for ``blackbox recover``."""
    if session.recorder is not None and session.recorder.journal is not None:
        session.recorder.journal.close()


def _end(run: ProxyRun, keep: Callable[[Session], str | None] | None) -> None:
    session = run.session
    recorder = session.recorder
    if recorder is not None and recorder.journal is not None:
        reason = keep(session) if keep is not None else None
        if reason is not None:
            recorder.discard()
            run.discarded = reason
        else:
            run.cassette = recorder.finish(
                session.cassette_path, exit_code=run.exit_code, in_flight=session.in_flight, proxy_only=run._proxy_only
            )
    if session.replay is not None and recorder is None:
        report = replay_report(session)
        if not run._proxy_only:
            report["exit_code"] = run.exit_code
        run.report = report
