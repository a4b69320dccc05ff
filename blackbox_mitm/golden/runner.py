"""Running goldens: each one a ``blackbox replay`` subprocess under a timeout, its output kept as bounded tails.

One golden is ``python -m blackbox_mitm replay GOLDEN --report TMP -- CMD``: its
own process (one proxy each, so parallel runs share none of mitmproxy's global
state) in its own process group, which is what a timeout kills — the agent
with it. Both output streams are read as they are written into a ``TailBuffer``
that keeps the last 64 KiB: an agent that prints gigabytes costs 64 KiB a
stream. The replay's JSON report and the exit status then decide the outcome
(``classify``):

    timeout     the command outlived --timeout (SIGTERM to the group, then SIGKILL)
    divergence  a request left the recorded path (the report's difference)
    overrun     more model calls than the recording holds
    exit        the command exited non-zero without being refused
    incomplete  the command exited 0 before making every recorded call
    error       the golden cannot be read or verified (the command never runs),
                or the replay itself failed before it could report
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from blackbox_mitm.golden.suite import GoldenCase
from blackbox_mitm.proxy.environment import default_confdir

__all__ = [
    "DEFAULT_TIMEOUT",
    "FAILURE_KINDS",
    "TAIL_BYTES",
    "GoldenResult",
    "ProcessResult",
    "TailBuffer",
    "classify",
    "golden_env",
    "run_golden",
    "run_process",
    "run_suite",
    "substitute",
]

TAIL_BYTES = 64 * 1024
DEFAULT_TIMEOUT = 300.0
FAILURE_KINDS = ("divergence", "incomplete", "overrun", "exit", "timeout")
KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL: time for the replay to write its report
DRAIN_GRACE = 1.0  # seconds to keep reading after the process exited (a stray child may hold the pipe)
POLL = 0.1
CHUNK = 65536
_PLACEHOLDER = re.compile(r"\{(run|input|cassette)\}")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


class TailBuffer:
    """The last ``limit`` bytes written to it, and how many were written in all."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self.limit = limit
        self.total = 0
        self._buf = bytearray()

    def write(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if len(chunk) >= self.limit:
            self._buf[:] = chunk[len(chunk) - self.limit :]
            return
        self._buf += chunk
        excess = len(self._buf) - self.limit
        if excess > 0:
            del self._buf[:excess]

    @property
    def dropped(self) -> int:
        """Bytes written before the tail (0 when everything is kept)."""
        return self.total - len(self._buf)

    def getvalue(self) -> bytes:
        return bytes(self._buf)

    def text(self) -> str:
        """The tail as UTF-8 text (invalid bytes replaced); a character cut in half by the tail is dropped."""
        data = bytes(self._buf)
        if self.dropped:
            skip = 0
            while skip < min(3, len(data)) and 0x80 <= data[skip] <= 0xBF:
                skip += 1
            data = data[skip:]
        return data.decode("utf-8", errors="replace")


@dataclass(slots=True)
class ProcessResult:
    exit_code: int
    timed_out: bool
    cancelled: bool
    duration: float
    stdout: TailBuffer
    stderr: TailBuffer


def run_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout: float,
    cwd: str | os.PathLike[str] | None = None,
    cancel: threading.Event | None = None,
    tail_bytes: int = TAIL_BYTES,
) -> ProcessResult:
    """Run ``argv`` in its own process group, keeping the tails of its output; kill the group at ``timeout``.

    ``exit_code`` is the status, or -N for signal N. Raises ``OSError`` when the
    program cannot be started.
    """
    start = time.monotonic()
    out, err = TailBuffer(tail_bytes), TailBuffer(tail_bytes)
    proc = subprocess.Popen(
        list(argv), env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, process_group=0
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        timed_out, cancelled = _pump(proc, {proc.stdout.fileno(): out, proc.stderr.fileno(): err}, start + timeout, cancel)
    finally:
        if proc.poll() is None:  # an exception (Ctrl-C) left it running: leave nothing behind
            _signal_group(proc, signal.SIGKILL)
        proc.stdout.close()
        proc.stderr.close()
        code = proc.wait()
    return ProcessResult(code, timed_out, cancelled, time.monotonic() - start, out, err)


def _pump(
    proc: subprocess.Popen[bytes], buffers: dict[int, TailBuffer], deadline: float, cancel: threading.Event | None
) -> tuple[bool, bool]:
    """Read both streams into their tails until the process is gone; enforce the deadline. (timed out, cancelled)."""
    sel = selectors.DefaultSelector()
    for fd, buf in buffers.items():
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ, buf)
    timed_out = cancelled = killed = False
    stopping_at: float | None = None
    exited_at: float | None = None
    try:
        while True:
            now = time.monotonic()
            if proc.poll() is None:
                if stopping_at is None:
                    timed_out = now >= deadline
                    cancelled = not timed_out and cancel is not None and cancel.is_set()
                    if timed_out or cancelled:
                        _signal_group(proc, signal.SIGTERM)
                        stopping_at = now
                elif not killed and now - stopping_at >= KILL_GRACE:
                    _signal_group(proc, signal.SIGKILL)
                    killed = True
            else:
                if not sel.get_map():
                    break
                exited_at = exited_at if exited_at is not None else now
                if now - exited_at >= DRAIN_GRACE:
                    _signal_group(proc, signal.SIGKILL)  # whatever of the group still holds the pipes
                    break
            if not sel.get_map():
                try:
                    proc.wait(POLL)
                except subprocess.TimeoutExpired:
                    pass
                continue
            for key, _ in sel.select(POLL):
                try:
                    chunk = os.read(key.fd, CHUNK)
                except BlockingIOError:
                    continue
                if chunk:
                    key.data.write(chunk)
                else:
                    sel.unregister(key.fd)
    finally:
        sel.close()
    return timed_out, cancelled


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass(slots=True)
class GoldenResult:
    """One golden's outcome: ``passed``, ``failure`` (with a kind in ``FAILURE_KINDS``) or ``error``."""

    case: GoldenCase
    outcome: str
    kind: str | None = None
    message: str = ""
    details: str = ""
    duration: float = 0.0
    stdout: TailBuffer = field(default_factory=TailBuffer)
    stderr: TailBuffer = field(default_factory=TailBuffer)
    command: list[str] = field(default_factory=list)
    status: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"


def substitute(command: Sequence[str], case: GoldenCase) -> list[str]:
    """``{run}``, ``{input}`` and ``{cassette}`` replaced in each argument (in one pass: values are not re-read)."""
    values = {"run": case.run or "", "input": _env_safe(case.input), "cassette": str(case.path.resolve())}
    return [_PLACEHOLDER.sub(lambda m: values[m[1]], arg) for arg in command]


def golden_env(case: GoldenCase, base: Mapping[str, str]) -> dict[str, str]:
    """The environment a golden's replay (and so its command) runs with.

    Besides the run's facts, the provider keys are replaced: a library that reads
    OPENAI_API_KEY but ignores the proxy must not carry the real key out of a test
    run. The agent gets BLACKBOX_REPLAY_KEY when set, else a placeholder.
    """
    from blackbox_mitm.proxy.environment import REPLAY_PLACEHOLDER_KEY

    env = dict(base)
    env["BLACKBOX_RUN"] = case.run or ""
    env["BLACKBOX_RUN_INPUT"] = _env_safe(case.input)
    env["BLACKBOX_CASSETTE"] = str(case.path.resolve())
    key = base.get("BLACKBOX_REPLAY_KEY") or REPLAY_PLACEHOLDER_KEY
    env["OPENAI_API_KEY"] = key
    env["ANTHROPIC_API_KEY"] = key
    return env


def _env_safe(text: str) -> str:
    """What can go into argv and the environment: no NUL, no lone surrogate (from a JavaScript recording)."""
    return _SURROGATE.sub("\ufffd", text.replace("\0", ""))


def run_golden(
    case: GoldenCase,
    command: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    confdir: str | os.PathLike[str] | None = None,
    base_env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    cancel: threading.Event | None = None,
) -> GoldenResult:
    """Replay one golden strictly under ``command`` and judge it. A golden with an ``error`` is never run."""
    if case.error is not None:
        return GoldenResult(case, "error", "error", case.error, f"the golden cannot be tested, so the command was not run:\n{case.error}")
    argv = substitute(command, case)
    env = golden_env(case, os.environ if base_env is None else base_env)
    with tempfile.TemporaryDirectory(prefix="blackbox-golden-") as tmp:
        report = Path(tmp) / "report.json"
        replay = [sys.executable, "-m", "blackbox_mitm", "replay", str(case.path), "--match", "strict", "--report", str(report)]
        # Always explicit: the replay's proxy and its client environment must name the same CA.
        replay += ["--confdir", str(confdir if confdir is not None else default_confdir())]
        try:
            proc = run_process([*replay, "--", *argv], env=env, timeout=timeout, cwd=cwd, cancel=cancel)
        except OSError as exc:
            message = f"the replay could not be started: {exc}"
            return GoldenResult(case, "error", "error", message, message, command=argv)
        status = _read_report(report)
    outcome, kind, message = classify(proc, status, timeout=timeout)
    # A divergence's message is the report's own difference: the report alone says it.
    details = _details("" if kind == "divergence" else message, argv, status)
    return GoldenResult(case, outcome, kind, message, details, proc.duration, proc.stdout, proc.stderr, argv, status)


def _read_report(path: Path) -> dict[str, Any] | None:
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def classify(proc: ProcessResult, status: Mapping[str, Any] | None, *, timeout: float) -> tuple[str, str | None, str]:
    """(outcome, kind, message) from how the replay process ended and its report (see the module docstring)."""
    from blackbox_mitm.matcher import verdict
    from blackbox_mitm.matcher.outcomes import Divergence

    calls = _calls_line(status)
    if proc.cancelled:
        return "error", "error", "the run was interrupted before the command finished"
    if proc.timed_out:
        return "failure", "timeout", f"the command did not finish within {timeout:g} s and was killed{calls}"
    if status is None:
        return "error", "error", f"the replay ended ({_describe_code(proc.exit_code)}) without writing its report; see system-err"
    outcome = verdict(status)
    run = str(status.get("run") or "?")
    if outcome == "diverged":
        first = status.get("first_divergence")
        if isinstance(first, Mapping):
            return "failure", "divergence", Divergence.from_json(first, run_id=run).human()
        return "failure", "divergence", f"the agent left the recorded path of run {run} ({status.get('divergences')} refused requests)"
    if outcome == "overran":
        extra = int(status.get("exhausted_calls") or 0)
        return (
            "failure",
            "overrun",
            f"the agent overran recorded run {run}: all {status.get('model_calls', 0)} recorded model calls were served "
            f"and it asked for {extra} more",
        )
    code = status.get("exit_code")
    command_code = code if isinstance(code, int) else proc.exit_code
    if command_code != 0:
        return "failure", "exit", f"the command {_describe_code(command_code)}{calls}"
    if outcome == "incomplete":
        missing = ", ".join(str(s) for s in list(status.get("incomplete") or [])[:10])
        return (
            "failure",
            "incomplete",
            f"the agent stopped early: it made {status.get('model_calls_served', 0)} of {status.get('model_calls', 0)} "
            f"recorded model calls (never asked for model_input step {missing})",
        )
    if proc.exit_code != 0:
        return "failure", "exit", f"the replay {_describe_code(proc.exit_code)} after the command exited 0{calls}; see system-err"
    return "passed", None, f"the agent made exactly the recorded model calls{calls}"


def _calls_line(status: Mapping[str, Any] | None) -> str:
    if status is None:
        return ""
    return f" after {status.get('model_calls_served', 0)} of {status.get('model_calls', 0)} recorded model calls"


def _describe_code(code: int) -> str:
    signum = -code if code < 0 else code - 128 if code > 128 else 0
    if signum:
        try:
            return f"exited {code} (killed by {signal.Signals(signum).name})"
        except ValueError:
            pass
    return f"exited {code}"


def _details(message: str, argv: Sequence[str], status: Mapping[str, Any] | None) -> str:
    from blackbox_mitm.matcher import render_report

    lines = [message, ""] if message else []
    lines.append("command: " + subprocess.list2cmdline(list(argv)))
    if status is not None:
        lines += ["", render_report(status)]
        refused = [str(r) for r in status.get("refused") or []]
        if refused:
            lines += ["", "refused by the replay:", *(f"  {r}" for r in refused[:20])]
    return "\n".join(lines)


def run_suite(
    cases: Sequence[GoldenCase],
    command: Sequence[str],
    *,
    jobs: int = 1,
    timeout: float = DEFAULT_TIMEOUT,
    confdir: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    on_result: Callable[[GoldenResult], None] | None = None,
) -> list[GoldenResult]:
    """Run every golden, ``jobs`` at once; results in the order of ``cases`` (``on_result`` as each ends).

    An exception in the caller's thread (Ctrl-C, SIGTERM turned into SystemExit)
    stops the runs in flight — their process groups are killed — before it propagates.
    """
    cancel = threading.Event()
    results: dict[int, GoldenResult] = {}
    base_env = dict(os.environ)
    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="blackbox-golden") as pool:
        pending: dict[Future[GoldenResult], int] = {
            pool.submit(run_golden, case, command, timeout=timeout, confdir=confdir, base_env=base_env, cwd=cwd, cancel=cancel): i
            for i, case in enumerate(cases)
        }
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
    return [results[i] for i in range(len(cases))]
