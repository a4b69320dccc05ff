"""What every benchmark section shares: statistics, processes, the report's pieces, the machine.

* ``Stats`` / ``summarize``: a median with the min and max over rounds.
* ``Service``: a subprocess listening on 127.0.0.1 (a proxy, the fake provider),
  started, waited for until it accepts connections, and always stopped (SIGTERM,
  then SIGKILL) — use it in a ``with`` block.
* ``Section`` / ``Target``: one part of the report, its markdown and its data,
  and each target it checks (met, missed by how much, or not measured).
* ``machine_info``: the machine and the versions the numbers belong to.
"""

from __future__ import annotations

import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
BIN = Path(sys.executable).parent
HOST = "127.0.0.1"

__all__ = [
    "BIN",
    "HOST",
    "PYTHON",
    "ROOT",
    "Context",
    "Section",
    "Service",
    "Stats",
    "Target",
    "free_port",
    "machine_info",
    "md_table",
    "mitmdump_path",
    "proc_cpu_seconds",
    "ratio_stats",
    "summarize",
]


# --------------------------------------------------------------------------- statistics


@dataclass(frozen=True, slots=True)
class Stats:
    """The median, min and max of one figure over rounds."""

    median: float
    min: float
    max: float
    n: int

    def fmt(self, scale: float = 1.0, digits: int = 2, unit: str = "") -> str:
        """``median (min–max)`` scaled (e.g. 1e3 for seconds -> ms)."""
        m, lo, hi = (v * scale for v in (self.median, self.min, self.max))
        if self.n == 1:
            return f"{m:.{digits}f}{unit}"
        return f"{m:.{digits}f}{unit} ({lo:.{digits}f}–{hi:.{digits}f})"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def summarize(values: Iterable[float]) -> Stats:
    vals = list(values)
    if not vals:
        raise ValueError("no values to summarize")
    return Stats(statistics.median(vals), min(vals), max(vals), len(vals))


def ratio_stats(numerators: Sequence[float], denominators: Sequence[float]) -> Stats:
    """Per-round ratios (each round's two figures were measured side by side), summarized."""
    return summarize(a / b for a, b in zip(numerators, denominators, strict=True) if b > 0)


# --------------------------------------------------------------------------- the report


@dataclass(slots=True)
class Target:
    """One target of the issue: ``value`` (a ratio's median) against ``limit``; None when not measured."""

    name: str
    goal: str
    value: float | None
    limit: float
    note: str = ""

    @property
    def met(self) -> bool | None:
        return None if self.value is None else self.value <= self.limit

    def verdict(self) -> str:
        if self.value is None:
            return "not measured"
        if self.met:
            return f"met ({self.value:.2f}; {100 * (self.limit - self.value) / self.limit:.0f}% headroom)"
        return f"**missed** ({self.value:.2f}, {100 * (self.value - self.limit) / self.limit:.0f}% over)"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "goal": self.goal, "value": self.value, "limit": self.limit, "met": self.met, "note": self.note}


@dataclass(slots=True)
class Section:
    """One part of the report: a title, markdown lines, raw data, targets, how long it took."""

    key: str
    title: str
    lines: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    targets: list[Target] = field(default_factory=list)
    headline: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "data": self.data,
            "targets": [t.to_json() for t in self.targets],
            "headline": self.headline,
            "seconds": self.seconds,
            "error": self.error,
        }


def md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


@dataclass(slots=True)
class Context:
    """The run's settings and shared resources, handed to every section."""

    quick: bool
    rounds: int
    workdir: Path
    confdir: Path
    profile: bool
    log: Callable[[str], None]
    shared: dict[str, Any] = field(default_factory=dict)

    def path(self, name: str) -> Path:
        return self.workdir / name


# --------------------------------------------------------------------------- processes


def free_port() -> int:
    """A port nothing listens on at the moment (127.0.0.1)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def mitmdump_path() -> str:
    candidate = BIN / "mitmdump"
    return str(candidate) if candidate.exists() else "mitmdump"


def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``); 0.0 when unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Service:
    """A subprocess that listens on ``127.0.0.1:port``; stopped on leaving the ``with`` block, whatever happened."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        port: int,
        log_dir: Path,
        env: dict[str, str] | None = None,
        ready_timeout: float = 120.0,
        stop_timeout: float = 60.0,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.port = port
        self.env = env
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self.log_path = log_dir / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_s = 0.0

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> Service:
        t0 = time.perf_counter()
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env, cwd=ROOT)
        deadline = time.monotonic() + self.ready_timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode} before listening:\n{self.log_tail()}")
            try:
                with socket.create_connection((HOST, self.port), timeout=1.0):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"{self.name} did not listen on {self.port} within {self.ready_timeout:.0f}s:\n{self.log_tail()}"
                    ) from None
                time.sleep(0.05)
        self.started_s = time.perf_counter() - t0
        return self

    def stop(self) -> int | None:
        """SIGTERM, wait, SIGKILL if it does not go; returns the exit status."""
        if self.proc is None:
            return None
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        return proc.returncode

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def __enter__(self) -> Service:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --------------------------------------------------------------------------- the machine


def _first_line(path: str, prefix: str) -> str | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _version(module: str) -> str:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return "not installed"


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "blackbox_mitm"], cwd=ROOT, capture_output=True, text=True, timeout=10
        )
        return out.stdout.strip() + (" (+ uncommitted changes in blackbox_mitm/)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine_info() -> dict[str, Any]:
    mem_kb = _first_line("/proc/meminfo", "MemTotal")
    try:
        load = os.getloadavg()
    except OSError:
        load = (0.0, 0.0, 0.0)
    return {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "nproc": os.cpu_count(),
        "cpu": _first_line("/proc/cpuinfo", "model name") or platform.processor() or "unknown",
        "ram_gib": round(int(mem_kb.split()[0]) / 1024 / 1024, 1) if mem_kb else None,
        "kernel": platform.release(),
        "python": platform.python_version() + f" ({platform.python_implementation()})",
        "mitmproxy": _version("mitmproxy"),
        "openai": _version("openai"),
        "httpx2": _version("httpx2"),
        "orjson": _version("orjson"),
        "blackbox": _version("blackbox-mitm"),
        "commit": _git_commit(),
        "loadavg_start": [round(x, 2) for x in load],
    }
