"""A tape: a strict replay of one cassette served by an in-process proxy for the length of a test.

``Tape`` starts a replay proxy on 127.0.0.1, and ``env()`` is the environment
that makes clients use it (proxy and CA variables for Python, Node and curl).
``activate()`` applies that environment to this process, for clients built
inside the test. ``check()`` raises ``TapeMismatch`` — an ``AssertionError`` —
when the agent diverged, overran the recording, or stopped early.
``replay_test(cassette, fn)`` does all of it around one function.

Tapes work under pytest-xdist (``pytest -n 4``): each worker is its own process
with its own proxies; the first tapes of several workers create the CA once.

``mask`` (regular expressions strict matching ignores), ``redact`` (the rules
the tape was recorded with) and ``pace`` (``"recorded"`` or a factor) add to
the project config (``blackbox_mitm.config``, found from the working
directory); ``default_masks=False`` turns the built-in masks off.

With ``record=True`` a missing tape is recorded instead (against the real
upstream, or wherever ``map_remote`` sends it) so a suite can be bootstrapped.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from blackbox_mitm.codecs import key_env_vars
from blackbox_mitm.errors import TapeMismatch
from blackbox_mitm.matcher import render_report, verdict
from blackbox_mitm.proxy.environment import ca_bundle, client_env, default_confdir
from blackbox_mitm.proxy.lifecycle import ProxyRun, ProxySettings, proxy_run
from blackbox_mitm.proxy.runner import ProxyRunner
from blackbox_mitm.session.build import record_session, replay_report, replay_session
from blackbox_mitm.session.engine import Session

__all__ = ["Tape", "TapeMismatch", "replay_test"]


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
        mask: Sequence[str] = (),
        redact: Sequence[str] = (),
        pace: str | float | None = None,
        default_masks: bool = True,
        rerecord: bool = False,  # record it afresh even when it exists (--blackbox-record=all)
    ) -> None:
        if mode not in ("strict", "sequence"):
            raise ValueError(f"mode must be 'strict' or 'sequence', not {mode!r}")
        if isinstance(mask, str) or isinstance(redact, str):
            raise ValueError("mask and redact are lists of regular expressions: mask=[r'...']")
        from blackbox_mitm.config import effective_settings

        self.settings = effective_settings(
            masks=list(mask), redact=list(redact), no_default_masks=not default_masks, hosts=hosts, pace=None if pace is None else str(pace)
        )
        self.cassette = Path(cassette)
        self.mode = mode
        self.rerecord = rerecord
        self.recording = rerecord or (record and not self.cassette.exists())
        self.confdir = confdir
        self.map_remote = list(map_remote)
        self.hosts = list(self.settings.host_names)
        self.session: Session | None = None
        self._run: ProxyRun | None = None
        self._stack: ExitStack | None = None
        self._saved_env: dict[str, str | None] | None = None

    # -- life cycle (proxy.lifecycle: start, serve, end the run) ------------------------------

    def start(self) -> Tape:
        _ca_ready(self.confdir)
        s = self.settings
        if self.recording:
            self.session = record_session(self.cassette, overwrite=self.rerecord, redactor=s.redactor, environment=s.environment)
        else:
            self.session = replay_session(
                self.cassette, match=self.mode, rules=s.rules, redactor=s.redactor, pace=s.pace.value, environment=s.environment
            )
        settings = ProxySettings(hosts=self.hosts, confdir=self.confdir, map_remote=self.map_remote)
        stack = ExitStack()
        self._run = stack.enter_context(proxy_run(self.session, settings=settings))
        self._stack = stack
        return self

    def stop(self, *, exit_code: int | None = 0) -> None:
        """Stop the proxy; a recording is finished with ``exit_code`` (the test's outcome)."""
        self.deactivate()
        if self._stack is None or self._run is None:
            return
        self._run.exit_code = exit_code
        stack, self._stack = self._stack, None
        stack.close()

    @property
    def runner(self) -> ProxyRunner | None:
        """The running proxy (``None`` before ``start`` and after ``stop``)."""
        return self._run.runner if self._run is not None and self._stack is not None else None

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
        wanted = self.env(base={k: v for k, v in os.environ.items() if k in (*key_env_vars(), "NODE_OPTIONS", "NO_PROXY", "no_proxy")})
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


def _ca_ready(confdir: str | Path | None) -> None:
    """The CA and its bundle exist before a proxy starts. Under ``pytest -n`` the workers' first tapes start at
    once: one creates the CA while the others wait on a lock, so no worker trusts a CA another one replaced."""
    directory = Path(confdir).expanduser() if confdir else default_confdir()
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".blackbox-ca.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ca_bundle(directory)  # creates the CA if it is still missing, then the bundle


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
