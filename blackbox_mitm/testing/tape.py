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
directory); ``default_masks=False`` turns the built-in masks off, ``no_mask=[NAME]`` one of them.

With ``record=True`` a missing tape is recorded instead (against the real
upstream, or wherever ``map_remote`` sends it) so a suite can be bootstrapped.
With ``update=True`` (``--blackbox-record=divergent``) a tape the agent left can
be re-recorded: ``rewind(status)`` ends the replay and serves the tape again as
a rewind (``blackbox fork --live-after``: the recorded calls before the one the
agent did not make as recorded replayed strictly, the rest live), and ``stop``
puts the new run in the tape's place, the old one kept as
``.history/<name>.<run id>.json`` beside it (``golden.update.install``).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from blackbox_mitm.codecs import key_env_vars
from blackbox_mitm.errors import TapeMismatch
from blackbox_mitm.matcher import render_report, verdict
from blackbox_mitm.proxy.environment import ca_bundle, client_env, default_confdir
from blackbox_mitm.proxy.lifecycle import ProxyRun, ProxySettings, proxy_run
from blackbox_mitm.proxy.runner import ProxyRunner
from blackbox_mitm.session.build import record_session, replay_report, replay_session
from blackbox_mitm.session.engine import Session

if TYPE_CHECKING:
    from blackbox_mitm.cassette.trace import Trace

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
        no_mask: Sequence[str] = (),  # names of masks left out (blackbox masks lists them)
        rerecord: bool = False,  # record it afresh even when it exists (--blackbox-record=all)
        update: bool = False,  # re-record it from where the agent parted when it diverges (--blackbox-record=divergent)
    ) -> None:
        if mode not in ("strict", "sequence"):
            raise ValueError(f"mode must be 'strict' or 'sequence', not {mode!r}")
        if isinstance(mask, str) or isinstance(redact, str):
            raise ValueError("mask and redact are lists of regular expressions: mask=[r'...']")
        if isinstance(no_mask, str):
            raise ValueError("no_mask is a list of mask names: no_mask=['gemini-cli.pgid']")
        from blackbox_mitm.config import effective_settings

        self.settings = effective_settings(
            masks=list(mask),
            redact=list(redact),
            no_default_masks=not default_masks,
            no_mask=list(no_mask),
            hosts=hosts,
            pace=None if pace is None else str(pace),
        )
        self.cassette = Path(cassette)
        self.mode = mode
        self.rerecord = rerecord
        self.update = update
        self.updated: Path | None = None  # after an update: where the old tape was kept
        self._parent: Trace | None = None  # while rewinding: the tape being replaced
        self._scratch: Path | None = None
        self.recording = rerecord or (record and not self.cassette.exists())
        self.confdir = confdir
        self.map_remote = list(map_remote)
        self.hosts = list(self.settings.host_specs)
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
        return self._serve()

    def _serve(self, keep: Callable[[Session], str | None] | None = None) -> Tape:
        assert self.session is not None
        settings = ProxySettings(hosts=self.hosts, confdir=self.confdir, map_remote=self.map_remote)
        stack = ExitStack()
        self._run = stack.enter_context(proxy_run(self.session, settings=settings, keep=keep))
        self._stack = stack
        return self

    def rewind(self, status: dict[str, Any]) -> None:
        """End the replay the agent left and serve the tape again, live from where it parted (``update=True``)."""
        from blackbox_mitm.codecs.verified import load_verified
        from blackbox_mitm.golden.update import rewind_point
        from blackbox_mitm.session.fork import discard_reason, fork_session, plan_fork

        active = self._saved_env is not None
        self.stop()
        parent = load_verified(self.cassette)
        self._scratch = Path(tempfile.mkdtemp(prefix="blackbox-tape-update-"))
        s = self.settings
        plan = plan_fork(parent, live_after=rewind_point(parent, status))
        out = self._scratch / f"{self.cassette.name.split('.')[0]}.json"
        self.session = fork_session(
            plan, out, match=self.mode, tail="upstream", rules=s.rules, redactor=s.redactor, environment=s.environment
        )
        self._parent, self.recording = parent, True
        self._serve(keep=discard_reason)
        if active:
            self.activate()

    def rewind_problem(self) -> str | None:
        """After a rewound run: why it cannot replace the tape (its replayed prefix diverged), or None."""
        from blackbox_mitm.session.fork import discard_reason

        return discard_reason(self.session) if self._parent is not None and self.session is not None else None

    def stop(self, *, exit_code: int | None = 0) -> None:
        """Stop the proxy; a recording is finished with ``exit_code`` (the test's outcome), a rewound one put in place."""
        self.deactivate()
        if self._stack is None or self._run is None:
            return
        self._run.exit_code = exit_code
        stack, self._stack = self._stack, None
        stack.close()
        if self._parent is not None:
            self._install(exit_code)

    def _install(self, exit_code: int | None) -> None:
        from blackbox_mitm.golden.update import install

        assert self._parent is not None and self._run is not None and self._scratch is not None
        parent, self._parent = self._parent, None
        try:
            if self._run.cassette is not None and exit_code == 0:  # a failed test leaves the tape as it was
                self.updated, _ = install(self.cassette, parent, self._run.cassette)
        finally:
            shutil.rmtree(self._scratch, ignore_errors=True)

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
        return dict(replay_report(self.session))

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
