"""What ``blackbox test`` says while it runs: a live progress line on a terminal, a line per golden otherwise.

On a terminal the line ``blackbox test: 12/200 done, 1 failed, 2 running, 14.2 s``
is redrawn in place (``\\r`` and erase-line) as goldens start and end and every
half second; a golden that fails is printed in full above it, one that passes
only counts. Anywhere else (a CI log, a file) each golden gets its one summary
line as it ends, and nothing is redrawn.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TextIO

from blackbox_mitm.golden.runner import GoldenResult
from blackbox_mitm.golden.suite import GoldenCase

__all__ = ["Progress", "result_line"]

ERASE = "\r\x1b[2K"
TICK = 0.5


def result_line(result: GoldenResult) -> str:
    """A golden's summary: ``PASS  name (1.2 s)``, or its failure with the message's lines indented."""
    name = result.case.testcase_name
    if result.passed:
        return f"PASS  {name} ({result.duration:.1f} s)"
    label = "FAIL " if result.outcome == "failure" else "ERROR"
    first, *rest = result.message.splitlines() or [""]
    return "\n".join([f"{label} {name} [{result.kind}] {first}", *(f"      {line}" for line in rest)])


class Progress:
    """Counts of a running suite, shown live on a terminal (``live``) or as a line per result."""

    def __init__(self, total: int, stream: TextIO, *, live: bool, clock: Callable[[], float] = time.monotonic, tick: float = TICK) -> None:
        self.total = total
        self.tick = tick
        self.stream = stream
        self.live = live
        self.clock = clock
        self.started_at = clock()
        self.done = self.failed = self.running = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> Progress:
        if self.live:
            self._draw()
            self._ticker = threading.Thread(target=self._tick, name="blackbox-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self.live:
            with self._lock:
                self.stream.write(ERASE)
                self.stream.flush()

    def line(self) -> str:
        elapsed = self.clock() - self.started_at
        return f"blackbox test: {self.done}/{self.total} done, {self.failed} failed, {self.running} running, {elapsed:.1f} s"

    def start(self, case: GoldenCase) -> None:
        with self._lock:
            self.running += 1
        self._draw()

    def finish(self, result: GoldenResult) -> None:
        with self._lock:
            self.running = max(0, self.running - 1)
            self.done += 1
            self.failed += not result.passed
            if not self.live:
                self.stream.write(result_line(result) + "\n")
                self.stream.flush()
                return
            if not result.passed:
                self.stream.write(ERASE + result_line(result) + "\n")
        self._draw()

    def _draw(self) -> None:
        if not self.live:
            return
        with self._lock:
            self.stream.write(ERASE + self.line())
            self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(self.tick):
            self._draw()
