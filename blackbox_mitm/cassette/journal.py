"""The crash-safe recording journal beside a cassette, and its recovery.

While a run records, its steps go to ``RUN.json.journal``: a first line with the
trace's own fields, then one line per batch of steps (the steps one model call
completes), each written with a single ``write`` and ``fsync``ed before the agent
gets the response. Appending never touches earlier lines. Calls that overlap share
their ``fsync`` (``group_commit``): each writes its line in hash-chain order, then
waits, outside the recorder's lock, for one ``fsync`` that covers it; a lone call
pays one ``fsync`` of its own, as before. An ``fsync`` that fails fails the journal
for the rest of the run: the file is cut back to its last durable line, and every
call not yet covered, and every later one, is refused (``RecordFailed``). At the end of the run
the journal becomes the cassette (one atomic write) and is removed.

A plain journal that is fsynced is written over zeros: before a line would go past
them, the recorder writes zeros ahead of it (64 KiB, doubling up to 1 MiB a time),
and each line is written in place over them. An ``fsync`` then flushes the line's
data only, not the file's new size and new blocks as an appended line's does: on
ext4 about 110 µs against 160-240 µs, paid before every answer. A file that takes no
more zeros (a full disk, a size limit) is appended to as before. The zeros are not
part of the journal: its lines never hold a NUL byte (JSON escapes it), so a
reader cuts the file at the first one (``compression.journal_plain``); after a
crash the first NUL is past every line an ``fsync`` covered, since an ``fsync``
writes out every earlier line too.

If the recorder dies (``kill -9``), ``recover_journal`` — run by ``blackbox
recover`` and by every loader that meets a journal — keeps every complete batch
whose hashes chain, drops a torn last line, appends a ``run_failed`` marker and
writes a valid cassette (``recovery``).

Ownership. The recorder holds an exclusive ``flock`` on its journal for the
whole run (the kernel drops it when the process dies, even by ``kill -9``), so
a journal that is locked belongs to a **live** recording: a second recorder of
the same cassette, and ``recover``, are told so and touch nothing. The journal's
first line names its owner (run id, process id). A recorder removes a journal
only when the file at the journal's path is still the one it opened (same
device and inode, checked on the descriptor it holds), and replaces a cassette
only when it is absent or still the very file it was allowed to replace when
the run started; otherwise its run is saved beside it (``RUN.<run-id>.json``)
and nothing of anyone else's is touched.
"""

from __future__ import annotations

import fcntl
import logging
import os
import secrets
import threading
from collections.abc import Iterable
from pathlib import Path

from blackbox_mitm.cassette import compression
from blackbox_mitm.cassette.files import INTERRUPTED, file_identity, journal_path, live_owner
from blackbox_mitm.cassette.group_commit import GroupCommit
from blackbox_mitm.cassette.recovery import recover_journal
from blackbox_mitm.cassette.store import encode_json, save_trace
from blackbox_mitm.cassette.trace import Trace, TraceStep, now_ms
from blackbox_mitm.errors import CassetteError, CassetteExistsError

__all__ = ["INTERRUPTED", "Journal", "file_identity", "journal_path", "live_owner", "recover_journal"]

JOURNAL_VERSION = 1
#: Zeros written ahead of a plain, fsynced journal's lines (the module docstring): the first time, and the most at once.
ZEROS_FIRST = 64 << 10
ZEROS_MOST = 1 << 20
_ZEROS = bytes(ZEROS_MOST)

log = logging.getLogger(__name__)


class Journal:
    """Append-only, fsynced log of a trace being recorded."""

    def __init__(
        self, cassette: str | os.PathLike[str], trace: Trace, *, overwrite: bool = False, fsync: bool = True, compact: bool = False
    ) -> None:
        self.cassette = Path(cassette)
        self.path = journal_path(self.cassette)
        self.trace = trace
        self.overwrite = overwrite
        self.fsync = fsync
        self.compact = compact  # the cassette on one line (``save_trace(compact=)``), and so its recovery
        self._plain = compression.kind_of(self.cassette) == compression.PLAIN  # read from the name once, not per write
        # The cassette this run may replace (with ``overwrite``): exactly the file there now.
        self.replaces = file_identity(self.cassette)
        if self.replaces is not None and not overwrite:
            raise CassetteExistsError(
                "the cassette already exists; choose another file, or allow replacing it (--overwrite; blackbox_overwrite=true under mitmdump)",
                path=str(self.cassette),
            )
        self._refuse_existing_journal()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = None
        self.end = 0  # the journal's lines end here; the file may go on with zeros (the module docstring)
        self._zeroed = 0  # the zeros ahead of the lines end here
        self._zeros_ahead = False
        self._write_lock = threading.Lock()  # one line at a time; the recorder's lock orders them
        self._group = GroupCommit(self._fsync)
        self._open_locked(
            {
                "journal": JOURNAL_VERSION,
                "overwrite": overwrite,
                "compact": compact,
                "replaces": self.replaces,
                "owner": {"pid": os.getpid(), "started": now_ms()},
                "trace": trace.header_json(),
            }
        )
        # A fork's copied prefix is part of the run from the start.
        if trace.steps:
            self.append(trace.steps)

    def _open_locked(self, header: dict[str, object]) -> None:
        """Create the journal already locked and headed: written under a private name, then linked into place.

        The link fails when a journal appeared meanwhile, so no one ever sees this
        journal unlocked or without its first line. The lock is held for the whole
        run: recovery and other recorders refuse a journal that is still being
        written; the kernel drops it when the process dies, even by kill -9.
        """
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")
        try:
            try:
                self._create(tmp, header)
                os.link(tmp, self.path)
            except FileExistsError:
                self._refuse_existing_journal()  # another recorder's, a moment ago
                raise CassetteError("a journal appeared beside the cassette as this recording started", path=str(self.path)) from None
            except OSError:
                # A filesystem without hard links: create it in place (exclusive), then lock it.
                self.close()
                self._create(self.path, header)
        except OSError as exc:
            self.close()
            if isinstance(exc, FileExistsError):
                self._refuse_existing_journal()
            raise CassetteError(
                f"cannot write the recording's journal ({exc.strerror or exc}); check the folder's permissions and free space",
                path=str(self.path),
            ) from exc
        except BaseException:
            self.close()
            raise
        finally:
            tmp.unlink(missing_ok=True)

    def _create(self, path: Path, header: dict[str, object]) -> None:
        # Not O_APPEND: lines are written in place (``os.pwrite`` at ``end``), over the zeros ahead of them.
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        st = os.fstat(self._fd)
        self._identity = (st.st_dev, st.st_ino)
        self._group = GroupCommit(self._fsync)  # a fresh file: nothing of the private name's attempt counts
        self.end = self._zeroed = 0  # a fresh file
        self._zeros_ahead = self.fsync and self._plain
        self.wait_durable(self._write(encode_json(header) + b"\n"))

    def _refuse_existing_journal(self) -> None:
        if file_identity(self.path) is None:
            return
        owner = live_owner(self.path)
        if owner is not None:
            raise CassetteError(
                f"{owner} is live on this cassette right now: it holds this journal's lock and is still writing it; "
                "let it finish (or stop it), or record to another file — do not delete its journal",
                path=str(self.path),
            )
        raise CassetteError(
            "an interrupted recording's journal is here (no recording holds it); run `blackbox recover` on the cassette first, "
            "or move the journal aside to discard that run",
            path=str(self.path),
        )

    def append(self, steps: Iterable[TraceStep]) -> None:
        """Write one line of steps and return once it is fsynced."""
        self.wait_durable(self.write(steps))

    def write(self, steps: Iterable[TraceStep]) -> int:
        """Write one line of steps, not yet fsynced: its sequence number for ``wait_durable``.

        The caller orders the lines (the recorder writes under its lock, in hash-chain order) and waits
        outside that lock, so that calls which overlap share one ``fsync``.
        """
        return self._write(encode_json([s.to_json() for s in steps]) + b"\n")

    def wait_durable(self, seq: int) -> None:
        """Return once line ``seq`` is on disk: the ``fsync`` that covers it may be another call's."""
        if not self.fsync or seq == 0:
            return
        try:
            self._group.wait(seq)
        except OSError as exc:
            raise self._not_durable(exc) from exc

    async def wait_durable_async(self, seq: int) -> None:
        """``wait_durable`` on an event loop, which it never blocks (``GroupCommit.wait_async``)."""
        if not self.fsync or seq == 0:
            return
        try:
            await self._group.wait_async(seq)
        except OSError as exc:
            raise self._not_durable(exc) from exc

    def _not_durable(self, exc: OSError) -> CassetteError:
        self._cut_to_durable()
        return CassetteError(
            f"the journal could not be fsynced ({exc.strerror or exc}); this call and any later one in this run "
            "are not recorded (the journal keeps every call answered before it)",
            path=str(self.path),
        )

    @property
    def fsyncs(self) -> tuple[int, int]:
        """(lines made durable, fsyncs that did it): their ratio is how many calls an fsync covered."""
        return self._group.lines, self._group.fsyncs

    def _fsync(self) -> None:
        fd = self._fd
        if fd is None:
            raise OSError(9, "the journal is closed")
        os.fsync(fd)

    def _cut_to_durable(self) -> None:
        """After a failed fsync: the file holds only lines that a completed fsync covered (and no zeros)."""
        with self._write_lock:
            if self._fd is not None:
                self._cut(self._group.durable_offset)

    def _cut(self, end: int) -> None:
        """The file cut back to ``end``, its zeros ahead with it (best effort: the journal has failed already)."""
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, end)
            except OSError:
                pass
        self.end = self._zeroed = end

    def _write(self, data: bytes) -> int:
        if not self._plain:
            data = compression.journal_member(self.cassette, data)  # a gzip member / zstd frame of its own for RUN.json.gz / .zst
        with self._write_lock:
            if self._fd is None:
                raise CassetteError("the journal is closed", path=str(self.path))
            if self._group.failed is not None:
                raise CassetteError(
                    f"an earlier fsync of the journal failed ({self._group.failed.strerror or self._group.failed}); "
                    "nothing more can be recorded durably in this run",
                    path=str(self.path),
                )
            start = self.end
            if self._zeros_ahead and start + len(data) > self._zeroed:
                self._write_zeros(self._fd, start + len(data))
            try:
                _write_at(self._fd, data, start)
            except OSError:
                self._cut(start)  # a full disk: never leave half a line that would swallow the next batch
                raise
            self.end = start + len(data)
            return self._group.wrote(self.end) if self.fsync else 0

    def _write_zeros(self, fd: int, needed: int) -> None:
        """Zeros from the last ones to past ``needed`` (the module docstring); none from now on if the file takes no more."""
        size = max(needed - self._zeroed, min(ZEROS_MOST, max(ZEROS_FIRST, self._zeroed)))
        try:
            for at in range(self._zeroed, self._zeroed + size, ZEROS_MOST):
                _write_at(fd, memoryview(_ZEROS)[: min(ZEROS_MOST, self._zeroed + size - at)], at)
        except OSError:  # a full disk or a size limit: appended as before (its own write says if the line fits)
            self._zeros_ahead = False
            self._cut(self.end)  # the zeros that were written go too
            return
        self._zeroed += size

    def finish(self) -> Path:
        """Write the cassette from the trace and remove this recorder's own journal; the cassette's path.

        Holds the journal's lock until both are done. When another recording
        wrote the cassette meanwhile, this run is saved beside it instead (see
        the module docstring) and that path is returned.
        """
        if self._fd is None:
            raise CassetteError("the journal is closed", path=str(self.path))
        out = self._save()
        self._remove_own_journal()
        self.close()
        return out

    def discard(self) -> None:
        """End the run without a cassette: remove this recorder's own journal (never another's)."""
        if self._fd is not None:
            self._remove_own_journal()
        self.close()

    def _save(self) -> Path:
        current = file_identity(self.cassette)
        if current is None or (self.overwrite and current == self.replaces):
            try:
                return save_trace(self.trace, self.cassette, overwrite=current is not None, compact=self.compact)
            except CassetteExistsError:
                pass  # created a moment ago by someone else: not ours to replace
        alternate = _beside(self.cassette, self.trace.id)
        out = save_trace(self.trace, alternate, compact=self.compact)
        log.warning(
            "blackbox: %s was written by another recording while this one ran; this run (%s) is saved as %s instead",
            self.cassette,
            self.trace.id,
            out,
        )
        return out

    def _remove_own_journal(self) -> None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return
        if (st.st_dev, st.st_ino) == self._identity:
            self.path.unlink()
        else:
            log.warning("blackbox: %s now belongs to another recording; it is left alone", self.path)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _write_at(fd: int, data: bytes | memoryview, at: int) -> None:
    """All of ``data`` at offset ``at`` (a short write is continued)."""
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, at)
        view, at = view[n:], at + n


def _beside(cassette: Path, run_id: str) -> Path:
    """A free name beside ``cassette`` for run ``run_id``: ``RUN.<run-id>.json`` (then ``-2``, ``-3``...)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in run_id)
    for n in range(1, 1000):
        candidate = cassette.with_name(f"{cassette.stem}.{safe}{'' if n == 1 else f'-{n}'}{cassette.suffix or '.json'}")
        if file_identity(candidate) is None and file_identity(journal_path(candidate)) is None:
            return candidate
    raise CassetteExistsError("no free file name beside the cassette for this run", path=str(cassette))
