"""Running a whole suite of goldens, ``jobs`` at once: each through the shared proxy, or as its own replay.

``run_suite`` picks per suite: with a ``serve`` function (``proxy.shared.serve_router``)
every golden goes through one proxy (``golden.shared``), without one each is a
``runner.run_golden`` process. It sits above both, so that neither imports the other.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from blackbox_mitm.golden.process import POLL
from blackbox_mitm.golden.runner import DEFAULT_TIMEOUT, GoldenResult, run_golden
from blackbox_mitm.golden.settings import SuiteSettings
from blackbox_mitm.golden.shared import GoldenRouter, Serve, run_golden_shared, run_names
from blackbox_mitm.golden.suite import GoldenCase

__all__ = ["run_suite"]


def run_suite(
    cases: Sequence[GoldenCase],
    command: Sequence[str],
    *,
    jobs: int = 1,
    timeout: float = DEFAULT_TIMEOUT,
    confdir: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    on_result: Callable[[GoldenResult], None] | None = None,
    on_start: Callable[[GoldenCase], None] | None = None,
    serve: Serve | None = None,
    settings: SuiteSettings | None = None,
) -> list[GoldenResult]:
    """Run every golden, ``jobs`` at once; results in the order of ``cases`` (``on_result`` as each ends).

    With ``serve`` (``proxy.shared.serve_router``) every golden goes through the one
    proxy it starts (``golden.shared``); without, each is its own ``blackbox replay``.
    An exception in the caller's thread (Ctrl-C, SIGTERM turned into SystemExit)
    stops the runs in flight — their process groups are killed — before it propagates.
    """
    cancel = threading.Event()
    base_env = dict(os.environ)
    common: dict[str, Any] = {"timeout": timeout, "confdir": confdir, "base_env": base_env, "cwd": cwd, "cancel": cancel}

    def started(case: GoldenCase) -> None:
        if on_start is not None:
            on_start(case)

    if serve is None:

        def one(i: int) -> GoldenResult:
            started(cases[i])
            return run_golden(cases[i], command, settings=settings, **common)

        return _gather(len(cases), one, jobs, cancel, on_result)

    return _run_shared(cases, command, serve, settings, started, jobs, cancel, on_result, common)


def _run_shared(
    cases: Sequence[GoldenCase],
    command: Sequence[str],
    serve: Serve,
    settings: SuiteSettings | None,
    started: Callable[[GoldenCase], None],
    jobs: int,
    cancel: threading.Event,
    on_result: Callable[[GoldenResult], None] | None,
    common: dict[str, Any],
) -> list[GoldenResult]:
    """Every golden through the one proxy ``serve`` starts: a run each, named in the proxy URL (``golden.shared``)."""
    names = run_names(cases)
    with tempfile.TemporaryDirectory(prefix="blackbox-goldens-") as tmp:
        router = GoldenRouter(
            Path(tmp),
            mode="replay",
            match="strict",
            session_options=(settings or SuiteSettings()).session_options,
            cassettes={n: c.path for n, c in zip(names, cases, strict=True)},
        )
        with serve(router) as proxy:

            def shared(i: int) -> GoldenResult:
                started(cases[i])
                return run_golden_shared(cases[i], names[i], command, router=router, proxy=proxy, **common)

            return _gather(len(cases), shared, jobs, cancel, on_result)


def _gather(
    count: int, task: Callable[[int], GoldenResult], jobs: int, cancel: threading.Event, on_result: Callable[[GoldenResult], None] | None
) -> list[GoldenResult]:
    results: dict[int, GoldenResult] = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="blackbox-golden") as pool:
        pending: dict[Future[GoldenResult], int] = {pool.submit(task, i): i for i in range(count)}
        try:
            while pending:
                done, _ = wait(pending, timeout=POLL * 5, return_when=FIRST_COMPLETED)
                for future in done:
                    index = pending.pop(future)
                    results[index] = future.result()
                    if on_result is not None:
                        on_result(results[index])
        except BaseException:
            cancel.set()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return [results[i] for i in range(count)]
