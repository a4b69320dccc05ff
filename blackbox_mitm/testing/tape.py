"""A tape: a strict replay of one cassette served by an in-process proxy for the length of a test.

``Tape`` starts a replay proxy on 127.0.0.1, and ``env()`` is the environment
that makes clients use it (proxy and CA variables for Python, Node and curl).
``activate()`` applies that environment to this process, for clients built
inside the test. ``check()`` raises ``TapeMismatch`` — an ``AssertionError`` —
when the agent diverged, overran the recording, or stopped early.
``replay_test(cassette, fn)`` does all of it around one function.

With ``record=True`` a missing tape is recorded instead (against the real
upstream, or wherever ``map_remote`` sends it) so a suite can be bootstrapped.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from blackbox_mitm.matcher import render_report, verdict
from blackbox_mitm.proxy.environment import client_env
from blackbox_mitm.proxy.runner import ProxyRunner
from blackbox_mitm.proxy.wrap import proxy_for
from blackbox_mitm.session.build import record_session, replay_report, replay_session
from blackbox_mitm.session.engine import Session

__all__ = ["Tape", "TapeMismatch", "replay_test"]


class TapeMismatch(AssertionError):
    """The agent left its recorded path: the message is the full report, difference included."""

    def __init__(self, report: str, status: dict[str, Any]) -> None:
        super().__init__(report)
        self.status = status


class Tape:
    """One cassette served for one test."""

    def __init__(
        self,
        cassette: str | os.PathLike[str],
        *,
        mode: str = "strict",
        record: bool = False,
        confdir: str | Path | None = None,
        map_remote: Sequence[str] = (),
        hosts: Sequence[str] = (),
    ) -> None:
        if mode not in ("strict", "sequence"):
            raise ValueError(f"mode must be 'strict' or 'sequence', not {mode!r}")
        self.cassette = Path(cassette)
        self.mode = mode
        self.recording = record and not self.cassette.exists()
        self.confdir = confdir
        self.map_remote = list(map_remote)
        self.hosts = list(hosts)
        self.session: Session | None = None
        self.runner: ProxyRunner | None = None
        self._saved_env: dict[str, str | None] | None = None

    # -- life cycle -------------------------------------------------------------------------

    def start(self) -> Tape:
        if self.recording:
            self.session = record_session(self.cassette)
        else:
            self.session = replay_session(self.cassette, match=self.mode)
        self.runner = proxy_for(
            self.session, replaying=not self.recording, hosts=self.hosts, confdir=self.confdir, map_remote=self.map_remote
        )
        try:
            self.runner.start()
        except Exception:
            if self.session.recorder is not None:
                self.session.recorder.discard()
            raise
        return self

    def stop(self, *, exit_code: int | None = 0) -> None:
        self.deactivate()
        if self.runner is not None:
            self.runner.stop()
            self.runner = None
        if self.recording and self.session is not None and self.session.recorder is not None and self.session.recorder.journal is not None:
            self.session.recorder.finish(self.cassette, exit_code=exit_code, in_flight=self.session.in_flight)

    def __enter__(self) -> Tape:
        self.start()
        self.activate()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop(exit_code=1 if exc[0] is not None else 0)

    # -- environment ------------------------------------------------------------------------

    @property
    def proxy_url(self) -> str:
        if self.runner is None:
            raise RuntimeError("the tape is not running")
        return self.runner.url

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment for a subprocess agent (proxy, CA bundles, Node preload, placeholder keys)."""
        return client_env(self.proxy_url, confdir=self.confdir, base=base, replaying=not self.recording)

    def activate(self) -> None:
        """Point this process's environment at the tape (clients built afterwards use it)."""
        if self._saved_env is not None:
            return
        wanted = self.env(
            base={
                k: v for k, v in os.environ.items() if k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NODE_OPTIONS", "NO_PROXY", "no_proxy")
            }
        )
        self._saved_env = {k: os.environ.get(k) for k in wanted}
        os.environ.update(wanted)

    def deactivate(self) -> None:
        if self._saved_env is None:
            return
        for k, v in self._saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self._saved_env = None

    # -- the verdict ----------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        if self.session is None or self.session.replay is None:
            return {"verdict": "ok", "recorded": str(self.cassette)}
        return replay_report(self.session)

    def check(self) -> None:
        """Raise TapeMismatch unless the agent walked the recording exactly."""
        if self.recording:
            return
        status = self.status()
        if verdict(status) != "ok":
            raise TapeMismatch(render_report(status), status)


def replay_test[T](cassette: str | os.PathLike[str], fn: Callable[[Tape], T], *, mode: str = "strict", **options: Any) -> T:
    """Run ``fn(tape)`` against a strict replay of ``cassette``; raise TapeMismatch if it left the path."""
    tape = Tape(cassette, mode=mode, **options)
    with tape:
        try:
            result = fn(tape)
        except Exception as exc:
            status = tape.status()
            if verdict(status) != "ok":
                raise TapeMismatch(render_report(status), status) from exc
            raise
        tape.check()
    return result
