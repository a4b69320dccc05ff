"""Goldens through one shared proxy: each golden a named run of one ``RunRouter``, its command the only process it starts.

``blackbox test`` starts one proxy for the whole suite (the CLI hands ``batch.run_suite``
a ``serve`` function from ``proxy/shared.py``: this package imports no mitmproxy)
instead of one ``blackbox replay`` process per golden. Each golden gets a run
name unique in the suite (its golden name; ``-2``, ``-3`` ... when two goldens
share one, as two ``--run`` files of one name or two goldens of one run id
would), and its command gets ``HTTPS_PROXY=http://<name>@127.0.0.1:PORT``. The
run's session is opened — its cassette loaded and verified — before the command
starts, so a golden that cannot be replayed is an error and its command never
runs; after the command exits the run is ended and its report judged by
``runner.classify`` exactly as a replay process's report would be. The lines a
``blackbox replay`` would have printed are added to the golden's stderr tail.
An ended run stays refused: a stray child of its command cannot restart it.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from blackbox_mitm.golden.runner import DEFAULT_TIMEOUT, GoldenResult, classify, details_of, golden_env, run_process, substitute
from blackbox_mitm.golden.suite import GoldenCase
from blackbox_mitm.proxy.environment import client_env
from blackbox_mitm.session.router import RUN_NAME, RouteRefused, RunRouter

__all__ = ["GoldenRouter", "ProxyServer", "Serve", "run_golden_shared", "run_names"]

_NOT_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class ProxyServer(Protocol):
    """What the runner needs of a started proxy: where it listens."""

    listen_host: str
    port: int


type Serve = Callable[[RunRouter], AbstractContextManager[ProxyServer]]


@dataclass
class GoldenRouter(RunRouter):
    """A router whose runs are named goldens (a name -> cassette map), not the files of its directory."""

    cassettes: dict[str, Path] = field(default_factory=dict)
    reports_beside: bool = False  # its reports go to JUnit, not beside the goldens: a golden may be named x.report

    def cassette_of(self, run: str) -> Path:
        found = self.cassettes.get(run)
        return found if found is not None else self.directory / f"{run}.json"

    def end(self, run: str) -> dict[str, Any]:
        """The run's report; from now on its name is refused (its session and replay data are let go)."""
        report = self.finish(run)
        with self._lock:
            entry = self._runs.get(run)
            if entry is not None:
                entry.session = None
                entry.error = f"run {run!r} has ended (its golden's command exited): a late request is not served"
        return report


def run_names(cases: Sequence[GoldenCase]) -> list[str]:
    """A run name per case, unique in the suite and a plain file name (the golden's name, made unique)."""
    names: list[str] = []
    seen: set[str] = set()
    for case in cases:
        base = _NOT_NAME.sub("-", case.name).strip("-._")[:100] or "golden"
        if not RUN_NAME.fullmatch(base):
            base = f"g-{base}"[:100]
        name, n = base, 1
        while name in seen:
            n += 1
            name = f"{base}-{n}"
        seen.add(name)
        names.append(name)
    return names


def run_golden_shared(
    case: GoldenCase,
    name: str,
    command: Sequence[str],
    *,
    router: GoldenRouter,
    proxy: ProxyServer,
    timeout: float = DEFAULT_TIMEOUT,
    confdir: str | os.PathLike[str] | None = None,
    base_env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    cancel: threading.Event | None = None,
) -> GoldenResult:
    """Replay one golden strictly through the shared proxy as run ``name`` and judge it like ``runner.run_golden``."""
    if case.error is not None:
        return GoldenResult(case, "error", "error", case.error, f"the golden cannot be tested, so the command was not run:\n{case.error}")
    argv = substitute(command, case)
    try:
        router.session_for(name)  # loaded and verified before anything runs
    except RouteRefused as exc:
        message = f"the golden cannot be replayed, so the command was not run: {exc}"
        return GoldenResult(case, "error", "error", message, message, command=argv)
    env = golden_env(case, os.environ if base_env is None else base_env)
    where = Path(confdir) if confdir is not None else None
    env = client_env(f"http://{name}@{proxy.listen_host}:{proxy.port}", confdir=where, base=env, replaying=True)
    try:
        proc = run_process(argv, env=env, timeout=timeout, cwd=cwd, cancel=cancel)
    except OSError as exc:
        router.end(name)
        message = f"the command could not be started: {exc}"
        return GoldenResult(case, "error", "error", message, message, command=argv)
    status = dict(router.end(name))
    status["exit_code"] = 128 - proc.exit_code if proc.exit_code < 0 else proc.exit_code  # as `blackbox replay` reports it
    outcome, kind, message = classify(proc, status, timeout=timeout)
    if not proc.cancelled:
        proc.stderr.write(_replay_lines(case, status).encode())
    details = details_of("" if kind == "divergence" else message, argv, status)
    return GoldenResult(case, outcome, kind, message, details, proc.duration, proc.stdout, proc.stderr, argv, status)


def _replay_lines(case: GoldenCase, status: Mapping[str, Any]) -> str:
    """What ``blackbox replay`` prints at the end of a run, for the golden's stderr."""
    from blackbox_mitm.matcher import render_report, verdict

    if verdict(status) != "ok":
        return "\n" + render_report(dict(status)) + "\n"
    served = status.get("model_calls_served", 0)
    return (
        f"blackbox: replayed {case.path} — {served} of {status.get('model_calls', 0)} model calls served "
        "from the recording, no divergence\n"
    )
