"""Profiles for the report: py-spy on a running proxy process, pyinstrument around an in-process call.

Neither profiler is a dependency of the project; ``make bench`` profiles when
they are installed in the venv (``.venv/bin/pip install py-spy pyinstrument``)
and says so in the report when they are not.

``PySpy`` samples every thread of another process (the proxy under load) without
stopping it (``--nonblocking``) and aggregates samples by function. Idle stacks
(a thread waiting in ``select`` or on a lock) are dropped, so the shares are of
the time the process was doing something. ``ours`` counts the samples with a
frame in Blackbox's per-call code (the addon, session, matcher, codecs, cassette),
as opposed to mitmproxy, asyncio, TLS and the interpreter.
"""

from __future__ import annotations

import importlib.util
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import BIN, md_table

__all__ = [
    "PySpy",
    "SpySummary",
    "pyinstrument_available",
    "pyinstrument_top",
    "pyspy_command",
    "pyspy_path",
    "share_of",
    "summarize_collapsed",
]

# Leaves that mean "waiting", not "working".
_IDLE_LEAVES = (
    "select (selectors.py",
    "poll (selectors.py",
    "wait (threading.py",
    "_wait_for_tstate_lock",
    "sleep (",
    "Event.wait",
    "Condition.wait",
    "EpollSelector.select",
    "_run_once (asyncio/base_events.py",
)
# Blackbox's per-call code; the runner thread and the CLI only wrap mitmproxy.
_OURS = (
    "blackbox_mitm/proxy/addon.py",
    "blackbox_mitm/session/",
    "blackbox_mitm/matcher/",
    "blackbox_mitm/codecs/",
    "blackbox_mitm/cassette/",
)


def pyspy_path() -> str | None:
    candidate = BIN / "py-spy"
    if candidate.exists():
        return str(candidate)
    return shutil.which("py-spy")


def pyinstrument_available() -> bool:
    return importlib.util.find_spec("pyinstrument") is not None


@dataclass(slots=True)
class SpySummary:
    """Busy samples of one process, the top functions by self time, and our share."""

    busy: int
    ours: int
    top_self: list[tuple[str, int]] = field(default_factory=list)
    top_ours: list[tuple[str, int]] = field(default_factory=list)

    @property
    def ours_share(self) -> float:
        return self.ours / self.busy if self.busy else 0.0

    def markdown(
        self, title: str, limit: int = 12, ours_label: str = "Blackbox's per-call code (addon, session, matcher, codecs, cassette)"
    ) -> list[str]:
        if not self.busy:
            return [f"*{title}: no busy samples.*"]
        lines = [f"**{title}** — {self.busy} busy samples; {100 * self.ours_share:.0f}% have a frame in {ours_label}.", ""]
        lines += md_table(
            ("self time", "function (file)"), [(f"{100 * n / self.busy:.1f}%", f"`{name}`") for name, n in self.top_self[:limit]]
        )
        if self.top_ours:
            lines += ["", "Blackbox functions, inclusive:", ""]
            lines += md_table(
                ("inclusive", "function (file)"), [(f"{100 * n / self.busy:.1f}%", f"`{name}`") for name, n in self.top_ours[:limit]]
            )
        return lines

    def to_json(self) -> dict[str, Any]:
        return {"busy": self.busy, "ours": self.ours, "top_self": self.top_self[:25], "top_ours": self.top_ours[:25]}


def _short(frame: str) -> str:
    # "Session.on_request (blackbox_mitm/session/engine.py:134)" -> without the line number
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    path = where.rsplit(":", 1)[0]
    for marker in ("site-packages/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
    return f"{name} ({path})"


def _samples(path: Path) -> list[tuple[list[str], int]]:
    """Busy stacks (root first) and their sample counts from py-spy's raw output; idle stacks dropped."""
    out = []
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        if any(marker in frames[-1] for marker in _IDLE_LEAVES):
            continue
        out.append((frames, int(count)))
    return out


def share_of(path: Path, marker: str) -> float:
    """The share of busy samples with a frame containing ``marker`` (e.g. ``_find_and_load``: imports)."""
    samples = _samples(path)
    busy = sum(n for _, n in samples)
    hit = sum(n for frames, n in samples if any(marker in f for f in frames))
    return hit / busy if busy else 0.0


def summarize_collapsed(
    path: Path, *, thread_filter: Callable[[list[str]], bool] | None = None, ours_files: tuple[str, ...] = _OURS
) -> SpySummary:
    """Aggregate py-spy's raw (collapsed) output: ``frame;frame;... count`` per line, root first.

    ``ours_files`` names the files (path fragments) whose frames count as Blackbox's.
    """
    self_time: Counter[str] = Counter()
    ours_incl: Counter[str] = Counter()
    busy = ours = 0
    for frames, n in _samples(path):
        if thread_filter is not None and not thread_filter(frames):
            continue
        busy += n
        self_time[_short(frames[-1])] += n
        mine = {_short(f) for f in frames if any(m in f for m in ours_files)}
        if mine:
            ours += n
            for f in mine:
                ours_incl[f] += n
    return SpySummary(busy, ours, self_time.most_common(40), ours_incl.most_common(40))


class PySpy:
    """``with PySpy(pid, out) as spy: ...load...``; then ``spy.summary()``. A no-op when py-spy is missing."""

    def __init__(self, pid: int, out: Path, *, rate: int = 200) -> None:
        self.pid = pid
        self.out = out
        self.rate = rate
        self.proc: subprocess.Popen[bytes] | None = None
        self.error: str | None = None

    def __enter__(self) -> PySpy:
        exe = pyspy_path()
        if exe is None:
            self.error = "py-spy is not installed"
            return self
        argv = [exe, "record", "--pid", str(self.pid), "--format", "raw", "--function", "--nonblocking", "--rate", str(self.rate)]
        argv += ["--output", str(self.out)]
        log = self.out.with_suffix(".log").open("wb")
        try:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        finally:
            log.close()
        time.sleep(0.5)  # attached before the load starts
        if self.proc.poll() is not None:
            self.error = f"py-spy exited with {self.proc.returncode}: {self.out.with_suffix('.log').read_text(errors='replace')[-500:]}"
            self.proc = None
        return self

    def __exit__(self, *exc: object) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # py-spy writes its output on Ctrl-C
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)

    def summary(self, thread_filter: Callable[[list[str]], bool] | None = None) -> SpySummary | None:
        if self.error or not self.out.exists():
            if self.error is None:
                self.error = "py-spy wrote no output"
            return None
        return summarize_collapsed(self.out, thread_filter=thread_filter)


def pyspy_command(argv: list[str], out: Path, *, rate: int = 500, timeout: float = 600) -> str | None:
    """Run ``argv`` under ``py-spy record`` (every thread, from its first instruction); None or the reason it failed."""
    exe = pyspy_path()
    if exe is None:
        return "py-spy is not installed"
    cmd = [exe, "record", "--format", "raw", "--function", "--rate", str(rate), "--output", str(out), "--", *argv]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if not out.exists():
        return f"py-spy wrote no output ({proc.returncode}): {proc.stderr[-500:]}"
    return None


def pyinstrument_top(fn: Callable[[], Any], *, interval: float = 0.0005, lines: int = 40) -> tuple[Any, str]:
    """Run ``fn`` under pyinstrument; return its result and the top of the call tree as text."""
    from pyinstrument import Profiler

    profiler = Profiler(interval=interval)
    profiler.start()
    try:
        result = fn()
    finally:
        profiler.stop()
    text = profiler.output_text(unicode=True, color=False, show_all=False)
    rows = text.splitlines()
    # Skip pyinstrument's banner: the tree starts at the first line that begins with a time.
    start = next((i for i, line in enumerate(rows) if line.strip()[:1].isdigit()), len(rows))
    body = [line.rstrip() for line in rows[start:] if line.strip()]
    return result, "\n".join(body[:lines])
