"""A command in its own process group under a timeout, its two output streams kept as bounded tails.

Both streams are read as they are written into a ``TailBuffer`` that keeps the
last 64 KiB: a command that prints gigabytes costs 64 KiB a stream. At the
timeout (or when ``cancel`` is set) the whole group gets SIGTERM, then SIGKILL
after ``KILL_GRACE``: the command's children go with it.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["CHUNK", "DRAIN_GRACE", "KILL_GRACE", "POLL", "TAIL_BYTES", "ProcessResult", "TailBuffer", "run_process"]

TAIL_BYTES = 64 * 1024
KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL: time for the replay to write its report
DRAIN_GRACE = 1.0  # seconds to keep reading after the process exited (a stray child may hold the pipe)
POLL = 0.1
CHUNK = 65536


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
