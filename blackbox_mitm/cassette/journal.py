"""The crash-safe recording journal beside a cassette, and its recovery.

While a run records, its steps go to ``RUN.json.journal``: a first line with the
trace's own fields, then one line per batch of steps (the steps one model call
completes), each written with a single ``write`` and ``fsync``ed before the agent
gets the response. Appending never touches earlier lines. At the end of the run
the journal becomes the cassette (one atomic write) and is removed.

If the recorder dies (``kill -9``), ``recover_journal`` — run by ``blackbox
recover`` and by every loader that meets a journal — keeps every complete batch
whose hashes chain, drops a torn last line, appends a ``run_failed`` marker and
writes a valid cassette.
"""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from blackbox_mitm.cassette.store import decode_json, encode_json, save_trace, trace_from_json
from blackbox_mitm.cassette.trace import Trace, TraceStep
from blackbox_mitm.errors import CassetteError, CassetteExistsError

__all__ = ["INTERRUPTED", "Journal", "journal_path", "recover_journal"]

JOURNAL_VERSION = 1
INTERRUPTED = "recording_interrupted"


def journal_path(cassette: str | os.PathLike[str]) -> Path:
    p = Path(cassette)
    return p.with_name(p.name + ".journal")


class Journal:
    """Append-only, fsynced log of a trace being recorded."""

    def __init__(self, cassette: str | os.PathLike[str], trace: Trace, *, overwrite: bool = False, fsync: bool = True) -> None:
        self.cassette = Path(cassette)
        self.path = journal_path(self.cassette)
        self.trace = trace
        self.overwrite = overwrite
        self.fsync = fsync
        if self.cassette.exists() and not overwrite:
            raise CassetteExistsError(
                "the cassette already exists; choose another file, or allow replacing it (--overwrite; blackbox_overwrite=true under mitmdump)",
                path=str(self.cassette),
            )
        if self.path.exists():
            raise CassetteError(
                "an interrupted recording's journal is here; run `blackbox recover` on the cassette first (or delete the journal to discard it)",
                path=str(self.path),
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        # Held while the recording runs: recovery refuses a journal that is still being written.
        # The kernel drops the lock when the process dies, even by kill -9.
        fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        header = {"journal": JOURNAL_VERSION, "overwrite": overwrite, "trace": trace.header_json()}
        self._write(encode_json(header) + b"\n")
        # A fork's copied prefix is part of the run from the start.
        if trace.steps:
            self.append(trace.steps)

    def append(self, steps: Iterable[TraceStep]) -> None:
        line = encode_json([s.to_json() for s in steps]) + b"\n"
        self._write(line)

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            raise CassetteError("the journal is closed", path=str(self.path))
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        if self.fsync:
            os.fsync(self._fd)

    def finish(self) -> Path:
        """Write the cassette from the trace and remove the journal."""
        self.close()
        out = save_trace(self.trace, self.cassette, overwrite=self.overwrite)
        self.path.unlink(missing_ok=True)
        return out

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def read_journal(path: Path) -> tuple[Trace, bool, int]:
    """Rebuild the trace a journal holds: (trace, overwrite, batches dropped)."""
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    try:
        header = decode_json(lines[0])
        trace = trace_from_json({**header["trace"], "steps": []}, path=str(path))
    except (ValueError, KeyError, TypeError) as exc:
        raise CassetteError("the journal's first line is unreadable; nothing can be recovered from it", path=str(path)) from exc
    dropped = 0
    complete = lines[1:-1] if not raw.endswith(b"\n") else lines[1:]
    if not raw.endswith(b"\n") and len(lines) > 1:
        dropped += 1  # a torn last write: its batch never reached the agent
    for n, line in enumerate(complete):
        if not line.strip():
            continue
        try:
            batch = decode_json(line)
        except ValueError:
            dropped += len(complete) - n
            break
        good = _chain(trace, batch)
        if not good:
            dropped += len(complete) - n
            break
    return trace, bool(header.get("overwrite")), dropped


def _chain(trace: Trace, batch: Any) -> bool:
    if not isinstance(batch, list):
        return False
    staged: list[TraceStep] = []
    prev = trace.steps[-1].hash if trace.steps else None
    for s in batch:
        try:
            step = TraceStep(s["id"], s["index"], s["type"], s["timestamp"], s["payload"], s["prevHash"], s["hash"])
        except (KeyError, TypeError):
            return False
        if step.index != len(trace.steps) + len(staged) or step.prevHash != prev or step.expected_hash() != step.hash:
            return False
        staged.append(step)
        prev = step.hash
    trace.steps.extend(staged)
    return True


def _still_recording(jpath: Path) -> bool:
    fd = os.open(jpath, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def recover_journal(cassette: str | os.PathLike[str], *, quiet: bool = False) -> tuple[Path, int]:
    """Turn an interrupted recording's journal into a valid cassette ending in ``run_failed``.

    Returns the cassette path and the number of steps it holds.
    """
    cassette = Path(cassette)
    jpath = journal_path(cassette)
    if not jpath.exists():
        raise CassetteError("there is no journal to recover beside this cassette (nothing was interrupted)", path=str(cassette))
    if _still_recording(jpath):
        raise CassetteError(
            "a recording is still writing this journal; let it finish (or stop it), then run `blackbox recover` if it was interrupted",
            path=str(jpath),
        )
    trace, overwrite, dropped = read_journal(jpath)
    if cassette.exists() and not overwrite:
        raise CassetteError(
            f"both the cassette and an interrupted recording's journal ({jpath.name}) exist; "
            "move the cassette aside and run `blackbox recover` again, or delete the journal to discard it",
            path=str(cassette),
        )
    last_terminal = (
        trace.steps
        and trace.steps[-1].type == "metadata"
        and isinstance(trace.steps[-1].payload, dict)
        and trace.steps[-1].payload.get("event") in ("run_completed", "run_failed")
    )
    if not last_terminal:
        trace.append(
            "metadata",
            {
                "event": "run_failed",
                "status": "error",
                "reason": INTERRUPTED,
                "message": "the recording proxy stopped before the run ended; recovered from its journal"
                + (f" ({dropped} incomplete write dropped)" if dropped else ""),
            },
        )
    save_trace(trace, cassette, overwrite=overwrite)
    jpath.unlink()
    if not quiet:
        print(f"blackbox: recovered {cassette} from an interrupted recording ({len(trace.steps)} steps)", file=sys.stderr)
    return cassette, len(trace.steps)
