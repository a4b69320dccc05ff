"""Many runs through one proxy: each client names its run in its proxy credentials.

``blackbox proxy --cassette-dir DIR`` serves every run whose cassette is in DIR
(``DIR/<run>.json``): a client sets ``HTTPS_PROXY=http://<run>@127.0.0.1:PORT``
and its model calls are recorded into, or replayed from, that run's cassette —
each run matched, reported and ended on its own. Several containers can share
one proxy this way, and ``blackbox test -j N`` can run its goldens through one.

A replay's report is ``DIR/<run>.report.json``: a run name ending in ``.report``
(whose cassette that would be) is refused, so no by-product Blackbox writes in DIR
ever shares a name with a cassette (journals end in ``.journal``, temporary files
begin with ``.``, neither of which a cassette name can).

A client that names no run, a run name that is not a plain file name, or a
cassette that cannot be read is refused for that client alone, with a message
saying what it sent and what to do: never another run's cassette, never fatal to
the other runs. Plain Python: the addon asks ``session_for`` per flow.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blackbox_mitm.errors import BlackboxError, RouteRefused
from blackbox_mitm.session.build import record_session, replay_report, replay_session
from blackbox_mitm.session.engine import Session

__all__ = ["REPORT_SUFFIX", "RUN_NAME", "RouteRefused", "RunRouter", "report_path", "run_from_proxy_authorization"]

log = logging.getLogger(__name__)

RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
#: A replay's report beside the cassettes: ``DIR/<run>.report.json``. No run name may end in ``.report``.
REPORT_SUFFIX = ".report.json"
_RESERVED_ENDING = REPORT_SUFFIX.removesuffix(".json")


def report_path(directory: Path, run: str) -> Path:
    """Where run ``run``'s replay report goes: never a cassette's name, as no run name ends in ``.report``."""
    return directory / f"{run}{REPORT_SUFFIX}"


def run_from_proxy_authorization(value: str | None) -> str | None:
    """The run a ``Proxy-Authorization: Basic base64(run:anything)`` names (None when there is none)."""
    if not value:
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "basic" or not token:
        return None
    try:
        user = base64.b64decode(token.strip(), validate=True).decode("utf-8").partition(":")[0]
    except (ValueError, UnicodeDecodeError):
        return None
    return user or None


@dataclass
class _Run:
    session: Session | None = None
    error: str | None = None
    report: dict[str, Any] | None = None
    cassette: Path | None = None


@dataclass
class RunRouter:
    """The runs of one directory, each a session made on its first model call."""

    directory: Path
    mode: str = "replay"  # "record" | "replay"
    match: str = "strict"
    overwrite: bool = False
    # Extra replay_session keywords for a cassette (masks, redaction, pace: golden.settings.SuiteSettings).
    session_options: Callable[[Path], dict[str, Any]] | None = None
    # Whether replay reports go beside the cassettes (DIR/<run>.report.json), so that no run may be named into their place.
    reports_beside: bool = True
    # Every run's environment (session.environment.RunEnvironment): the proxy's own; None: no substitution.
    environment: Any = None
    _runs: dict[str, _Run] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.mode not in ("record", "replay"):
            raise ValueError(f"unknown mode {self.mode!r}")
        if not self.directory.is_dir():
            raise RouteRefused(f"{self.directory}: not a directory", hint="name the folder that holds the runs' cassettes (DIR/<run>.json)")

    def cassette_of(self, run: str) -> Path:
        return self.directory / f"{run}.json"

    def session_for(self, run: str | None) -> Session:
        """The session of ``run`` (made on first use); ``RouteRefused`` says why there is none."""
        if run is None:
            raise RouteRefused(
                "this proxy serves several runs and the request named none: put the run in the proxy URL, "
                "HTTPS_PROXY=http://<run>@HOST:PORT (a cassette DIR/<run>.json)"
            )
        if not RUN_NAME.fullmatch(run):
            raise RouteRefused(f"the proxy credentials name the run {run[:80]!r}, which is not a plain file name (letters, digits, . _ -)")
        if self.reports_beside and run.endswith(_RESERVED_ENDING):
            raise RouteRefused(
                f"the proxy credentials name the run {run!r}: a run name may not end in {_RESERVED_ENDING!r}, as "
                f"DIR/<run>{REPORT_SUFFIX} is where a replay's report goes; name the run otherwise"
            )
        with self._lock:
            entry = self._runs.get(run)
            if entry is None:
                entry = self._runs[run] = self._open(run)
        if entry.session is None:
            raise RouteRefused(entry.error or f"run {run} cannot be served")
        return entry.session

    def _open(self, run: str) -> _Run:
        path = self.cassette_of(run)
        try:
            if self.mode == "replay":
                if not path.is_file():
                    return _Run(error=f"the proxy credentials name the run {run!r}, but there is no cassette {path} to replay")
                extra = self.session_options(path) if self.session_options is not None else {}
                extra.setdefault("environment", self.environment)
                return _Run(session=replay_session(path, match=self.match, **extra), cassette=path)
            session = record_session(path, overwrite=self.overwrite, run_id=run, environment=self.environment)
            return _Run(session=session, cassette=path)
        except BlackboxError as exc:
            log.warning("blackbox: run %s cannot be served: %s", run, exc)
            return _Run(error=f"run {run!r} cannot be served: {exc}")

    def runs(self) -> list[str]:
        with self._lock:
            return sorted(self._runs)

    def finish(self, run: str) -> dict[str, Any]:
        """End one run: a recording gets its terminal event and cassette, a replay its report."""
        with self._lock:
            entry = self._runs.get(run)
        if entry is None or entry.session is None:
            return {"run": run, "error": entry.error if entry else "the run made no model call"}
        if entry.report is not None:
            return entry.report
        session = entry.session
        if session.recorder is not None:
            out = session.recorder.finish(entry.cassette, exit_code=None, in_flight=session.in_flight, proxy_only=True)
            entry.report = {"run": run, "cassette": str(out), "model_calls": session.recorder.model_calls, "problems": session.problems()}
        else:
            entry.report = dict(replay_report(session))  # one of the ways a run ends (see finish)
        return entry.report

    def finish_all(self) -> dict[str, dict[str, Any]]:
        return {run: self.finish(run) for run in self.runs()}
