"""Group commit for the recording journal: one ``fsync`` covers every line written before it began.

The journal promises that a call's steps are on disk before the agent sees the answer. Calls that
overlap each write their line (in hash-chain order, under the recorder's lock) and then wait here,
outside that lock, until a completed ``fsync`` covers their line. The first waiter to find no
``fsync`` running starts one for everything written so far (it is the *leader*); waiters that come
while it runs wait for it, and if their line was written after it began, for the next one. A lone
call leads its own ``fsync`` at once, the same single ``fsync`` as before, on whichever thread it
runs.

``wait_async`` is the same wait for a caller on an event loop (the proxy's overlapping calls): the loop
is never blocked, a waiter is a future that the ``fsync`` covering its line resolves, and a leader runs
its ``fsync`` on a worker thread — one hop per ``fsync``, not one per call. Threads and coroutines may
wait on the same journal at once; whichever leads, the others are woken.

When an ``fsync`` fails, nothing written after the last one that succeeded is known to be on disk
(and after a failed ``fsync`` Linux may drop the unwritten pages and report success the next time),
so the journal is failed for good: every waiter not yet covered, and every later write, gets the
error, and the journal's owner cuts the file back to ``durable_offset``.
"""

from __future__ import annotations

import asyncio
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
        self._futures: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []  # coroutines waiting (wait_async)
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
                if self._covered(seq):
                    return
                if not self._syncing:
                    break
                self._cond.wait()
            target = self._begin()
        self._lead(*target)

    async def wait_async(self, seq: int) -> None:
        """``wait`` on an event loop: await the fsync that covers line ``seq``, leading one on a worker thread if none runs."""
        loop = asyncio.get_running_loop()
        while True:
            with self._cond:
                if self._covered(seq):
                    return
                woken: asyncio.Future[None] | None = None
                if self._syncing:
                    woken = loop.create_future()
                    self._futures.append((loop, woken))
                else:
                    target = self._begin()
            if woken is None:
                try:
                    running = loop.run_in_executor(None, self._lead, *target)
                except RuntimeError:  # the loop's executor is shut down (the proxy is stopping): lead right here
                    self._lead(*target)
                    return
                await running
                return
            await woken  # the running fsync ended (done or failed): look again

    def _covered(self, seq: int) -> bool:
        """Whether line ``seq`` is durable (under the lock); raises when the journal failed before it was."""
        if self._durable >= seq:
            return True
        if self.failed is not None:  # a copy: each waiter's own traceback
            raise OSError(self.failed.errno, self.failed.strerror or str(self.failed))
        return False

    def _begin(self) -> tuple[int, int]:
        """Become the leader (under the lock): the lines written so far are what its fsync covers."""
        self._syncing = True
        return self._written, self._written_offset

    def _lead(self, target: int, target_offset: int) -> None:
        """Run the fsync, then mark what it covered durable (or the journal failed) and wake every waiter."""
        try:
            self._sync()
        except OSError as exc:
            with self._cond:
                self.failed = exc
                self._ended()
            raise
        with self._cond:
            self.lines += target - self._durable
            self._durable, self.durable_offset = target, target_offset
            self.fsyncs += 1
            self._ended()

    def _ended(self) -> None:
        """The fsync is over (under the lock): wake the threads and the coroutines that wait."""
        self._syncing = False
        self._cond.notify_all()
        futures, self._futures = self._futures, []
        for loop, future in futures:
            try:
                loop.call_soon_threadsafe(_wake, future)
            except RuntimeError:  # that loop is closed: nothing awaits there any more
                pass


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():  # a waiter cancelled meanwhile
        future.set_result(None)
