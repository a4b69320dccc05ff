"""Group commit for the recording journal: one ``fsync`` covers every line written before it began.

The journal promises that a call's steps are on disk before the agent sees the answer. Calls that
overlap each write their line (in hash-chain order, under the recorder's lock) and then wait here,
outside that lock, until a completed ``fsync`` covers their line. The first waiter to find no
``fsync`` running starts one for everything written so far (it is the *leader*); waiters that come
while it runs wait for it, and if their line was written after it began, for the next one. A lone
call leads its own ``fsync`` at once, the same single ``fsync`` as before, on whichever thread it
runs.

When an ``fsync`` fails, nothing written after the last one that succeeded is known to be on disk
(and after a failed ``fsync`` Linux may drop the unwritten pages and report success the next time),
so the journal is failed for good: every waiter not yet covered, and every later write, gets the
error, and the journal's owner cuts the file back to ``durable_offset``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["GroupCommit"]


class GroupCommit:
    """Counts written lines and durable lines; ``wait(seq)`` returns once line ``seq`` is fsynced."""

    def __init__(self, sync: Callable[[], None], offset: int = 0) -> None:
        self._sync = sync
        self._cond = threading.Condition(threading.Lock())
        self._written = 0  # lines written so far (each line's sequence number is its count)
        self._written_offset = offset  # the file's end after the last written line
        self._durable = 0  # lines covered by a completed fsync
        self.durable_offset = offset  # the file's end after the last durable line
        self._syncing = False
        self.failed: OSError | None = None
        self.fsyncs = 0  # completed fsyncs, for the benchmarks: lines / fsyncs is the grouping
        self.lines = 0

    def wrote(self, end_offset: int) -> int:
        """Note one more line written (the file now ends at ``end_offset``); its sequence number."""
        with self._cond:
            self._written += 1
            self._written_offset = end_offset
            return self._written

    def wait(self, seq: int) -> None:
        """Return once a completed fsync covers line ``seq``; raise the fsync's ``OSError`` if none will."""
        with self._cond:
            while True:
                if self._durable >= seq:
                    return
                if self.failed is not None:  # a copy: each waiter's own traceback
                    raise OSError(self.failed.errno, self.failed.strerror or str(self.failed))
                if not self._syncing:
                    break
                self._cond.wait()
            self._syncing = True
            target, target_offset = self._written, self._written_offset
        try:
            self._sync()
        except OSError as exc:
            with self._cond:
                self.failed = exc
                self._syncing = False
                self._cond.notify_all()
            raise
        with self._cond:
            self.lines += target - self._durable
            self._durable, self.durable_offset = target, target_offset
            self._syncing = False
            self.fsyncs += 1
            self._cond.notify_all()
