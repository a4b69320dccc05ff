"""Recovering an interrupted recording: its journal becomes a valid cassette ending in ``run_failed``.

``recover_journal`` takes the journal's lock first (a journal that is locked
belongs to a live recording, which is told, and nothing is touched), reads it,
and keeps every batch whose hashes chain. A torn last line (the recorder died in
the middle of a write) is dropped: its batch never reached the agent. Anything
else that does not fit is refused and **the journal is kept**: a complete line
that is not a batch of this run's chain, followed by more lines (the journal
was changed after it was written), and a step whose id is not this run's
(``${traceId}:${index}``: another run's steps). The cassette is replaced only if
the recording was allowed to (``overwrite``) and it is still the file that was
there when the recording started; the journal is removed only if it is still
the file this recovery read.
"""

from __future__ import annotations

import fcntl
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from blackbox_mitm.cassette import compression
from blackbox_mitm.cassette.files import INTERRUPTED, file_identity, journal_path, owner_text, regular_file
from blackbox_mitm.cassette.jsonfile import decode_json, max_bytes
from blackbox_mitm.cassette.payloads import Metadata
from blackbox_mitm.cassette.records import JSONObject
from blackbox_mitm.cassette.store import save_trace, trace_from_json
from blackbox_mitm.cassette.trace import Trace, TraceStep
from blackbox_mitm.errors import CassetteError

__all__ = ["Recovered", "read_journal", "recover_journal"]

_KEEP = "the journal is kept as it is"


@dataclass(slots=True)
class Recovered:
    """What a journal holds: the trace rebuilt from it, its header, and how many torn batches were dropped."""

    trace: Trace
    header: JSONObject  # the journal's first line, as read
    dropped: int


def read_journal(raw: bytes, *, path: str = "<journal>") -> Recovered:
    """Rebuild the trace a journal's bytes hold; ``CassetteError`` when they cannot be trusted."""
    lines = raw.split(b"\n")
    try:
        header = decode_json(lines[0])
        trace = trace_from_json({**header["trace"], "steps": []}, path=path)
    except (ValueError, KeyError, TypeError) as exc:
        raise CassetteError(f"the journal's first line is unreadable; nothing can be recovered from it; {_KEEP}", path=path) from exc
    if not isinstance(header, dict):
        raise CassetteError(f"the journal's first line is not a journal header; {_KEEP}", path=path)
    torn = not raw.endswith(b"\n") and len(lines) > 1
    complete = lines[1:-1]  # the piece after the last newline is torn, or empty
    batches = [(n + 2, line) for n, line in enumerate(complete) if line.strip()]
    for k, (number, line) in enumerate(batches):
        why = _add_batch(trace, line, path)
        if why is None:
            continue
        if k == len(batches) - 1 and not torn:
            torn = True  # the last line: a write the recorder did not finish
            break
        raise CassetteError(
            f"line {number} of the journal is not a batch of this run's steps ({why}), and more lines follow it: "
            f"the journal was changed after it was written; nothing was recovered and {_KEEP} — restore it, "
            "or move it aside to discard the run",
            path=path,
        )
    return Recovered(trace, header, 1 if torn else 0)


def _add_batch(trace: Trace, line: bytes, path: str) -> str | None:
    """Append one journal line's steps to ``trace``; why not (None when they chain). Foreign ids raise."""
    try:
        batch = decode_json(line)
    except ValueError as exc:
        return f"not JSON: {exc}"
    if not isinstance(batch, list):
        return "not an array of steps"
    staged: list[TraceStep] = []
    prev = trace.steps[-1].hash if trace.steps else None
    for s in batch:
        try:
            step = TraceStep(s["id"], s["index"], s["type"], s["timestamp"], s["payload"], s["prevHash"], s["hash"])
            expected = step.expected_hash()
        except (KeyError, TypeError, ValueError) as exc:
            return f"a step without the fields of one ({type(exc).__name__}: {exc})"
        index = len(trace.steps) + len(staged)
        if step.id != f"{trace.id}:{index}" and isinstance(step.index, int) and step.index == index:
            raise CassetteError(
                f"step {index} carries the id {step.id!r}, not this run's {trace.id + ':' + str(index)!r}: these are another run's "
                f"steps; nothing was recovered and {_KEEP} — move it aside, and recover that run's own journal instead",
                path=path,
            )
        if step.index != index or step.prevHash != prev or expected != step.hash:
            return f"step {index} does not chain onto the steps before it"
        staged.append(step)
        prev = step.hash
    trace.steps.extend(staged)
    return None


def recover_journal(cassette: str | os.PathLike[str], *, quiet: bool = False) -> tuple[Path, int]:
    """Turn an interrupted recording's journal into a valid cassette ending in ``run_failed``.

    Returns the cassette path and the number of steps it holds.
    """
    cassette = Path(cassette)
    jpath = journal_path(cassette)
    try:
        fd = os.open(jpath, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise CassetteError("there is no journal to recover beside this cassette (nothing was interrupted)", path=str(cassette)) from None
    except OSError as exc:
        raise CassetteError(f"cannot read the journal ({exc.strerror}); check its permissions", path=str(jpath)) from exc
    try:
        regular_file(fd, jpath)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CassetteError(
                f"{owner_text(os.pread(fd, 1 << 20, 0))} is live and still writing this journal; let it finish (or stop it), "
                "then run `blackbox recover` if it was interrupted",
                path=str(jpath),
            ) from None
        st = os.fstat(fd)
        if st.st_size > max_bytes():
            raise CassetteError(
                f"the journal holds {st.st_size:,} bytes, more than a reader accepts (BLACKBOX_MAX_CASSETTE_BYTES)", path=str(jpath)
            )
        with os.fdopen(fd, "rb", closefd=False) as f:
            # RUN.json.gz / .zst journals: complete members only; a member cut off mid-write is that batch, dropped.
            raw, cut = compression.journal_plain(cassette, f.read(), path=str(jpath))
        recovered = read_journal(raw, path=str(jpath))
        recovered.dropped = max(recovered.dropped, int(cut))
        _check_cassette(cassette, jpath, recovered.header)
        trace = recovered.trace
        _mark_interrupted(trace, recovered.dropped, cassette)
        save_trace(
            trace,
            cassette,
            overwrite=bool(recovered.header.get("overwrite")) and file_identity(cassette) is not None,
            compact=bool(recovered.header.get("compact")),
        )
        now = file_identity(jpath)
        if now is not None and (now[0], now[1]) == (st.st_dev, st.st_ino):
            jpath.unlink()
    finally:
        os.close(fd)
    if not quiet:
        print(f"blackbox: recovered {cassette} from an interrupted recording ({len(trace.steps)} steps)", file=sys.stderr)
    return cassette, len(trace.steps)


def _check_cassette(cassette: Path, jpath: Path, header: JSONObject) -> None:
    """Refuse to replace a cassette the interrupted recording was not allowed to replace."""
    current = file_identity(cassette)
    if current is None:
        return
    if not header.get("overwrite"):
        raise CassetteError(
            f"both the cassette and an interrupted recording's journal ({jpath.name}) exist; "
            "move the cassette aside and run `blackbox recover` again, or move the journal aside to discard it",
            path=str(cassette),
        )
    replaces = header.get("replaces", current)  # journals from before ownership was recorded: as before
    if replaces != current:
        raise CassetteError(
            f"this cassette was written after the interrupted recording started, so it is not the one that recording may replace; "
            f"move it aside and run `blackbox recover` again ({_KEEP})",
            path=str(cassette),
        )


def _mark_interrupted(trace: Trace, dropped: int, cassette: Path) -> None:
    last = trace.steps[-1] if trace.steps else None
    if (
        last is not None
        and last.type == "metadata"
        and isinstance(last.payload, dict)
        and last.payload.get("event") in ("run_completed", "run_failed")
    ):
        return
    from blackbox_mitm.cassette.media import recover_media

    event: Metadata = {
        "event": "run_failed",
        "status": "error",
        "reason": INTERRUPTED,
        "message": "the recording proxy stopped before the run ended; recovered from its journal"
        + (f" ({dropped} incomplete write dropped)" if dropped else ""),
    }
    media = recover_media(cassette, trace)  # the media the recording spooled (cassette/media.py), sealed here
    trace.append("metadata", {**event, "media": media} if media is not None else event)
