"""Answers to overlapping calls released in the order the recording completed them.

An agent that runs work concurrently (Claude Code's background subagents, an
agent's side calls beside its main loop, any client with requests in flight
at once) sees the answers in the order they *complete*, and acts on that order:
Claude Code tells its main loop which subagent finished first. A replay answers
from the cassette at once, so without care the order is whatever the machine's
scheduler makes of a few milliseconds.

The cassette already says what is needed. The recorder appends a call's steps
when its answer completes, so the recorded calls are in completion order; a
model_input's timestamp is when its request arrived and a model_output's when
its answer completed. Call ``i`` *overlapped* an earlier-completed call ``j``
when ``i``'s request arrived before (or in the same millisecond as) ``j``'s
answer completed. ``overlaps`` lists, for each call, those predecessors. Only answers a later
request carries (``perceived.taken_in``) are kept in it: the order of answers
nothing carries on (independent conversations run side by side, the way a
benchmark's concurrent clients or a batch job call a model) cannot be seen in
the recording, so they are sent at once, as if they had never overlapped.

``ReleaseOrder`` is the rule a replay keeps: a served call's answer (a whole
response, or a stream's final event) is released only after every predecessor
has been delivered, and at least ``gap_ms`` after the last of them — long
enough that the agent has handled one end before the next arrives. A call with
no predecessors, or whose predecessors were delivered long enough ago, goes at
once. A predecessor the agent has not asked for within ``wait_ms`` of the
answer being ready (a replay that took another path) is not waited for again,
nor one asked for but still not delivered a minute later (its agent hung up);
it is listed in the release's ``skipped``. No answer ever waits for a later
one (predecessors completed earlier), so a replay that repeats the recording
cannot deadlock.

The clock alone is a trade-off on a busy machine (too short a gap and the agent
handles two ends together; too long and it starts its next turn before the last
one), so an answer is first held on *causality* (happens-before): every recorded
request that arrived before the answer's recorded completion cannot have
depended on that answer, so a faithful agent sends it whatever the answer says.
``gates`` lists, for each overlapping call, how many requests (in recorded
arrival order) must have arrived in the replay before its answer goes: Claude
Code's main-loop turn that carries subagent A's end arrived before B's answer
completed, so it is B's gate, and B ends only once the agent has taken A's end
in. Gates are requests, never answers, and a request that arrived before X
completed cannot wait for X, so a faithful replay cannot deadlock on them; a
gate not seen within ``gate_wait_ms`` (the agent took another path, or is
slow beyond reason) is given up on, logged as a warning, and listed in the
release's ``gates_timed_out``. The completion order and the gap stay, as the
tie-breaker for what arrival times cannot tell. That order is the one the agent
*took* the answers in, where its next request says so (``session/perceived.py``):
on a loaded machine the recorded agent may have handled two answers that
completed 5 ms apart the other way round.

An answer asked for a moment ago is not released at once either: it waits
``settle_ms`` after its own request arrived (a replay's session sets it; 0
here). Measured with Claude Code on a loaded 2-core machine (load 10): the
subagent whose request arrived last had its answer released within 90 ms of
asking (mostly within 2 ms), the next 5 to 135 ms later, and in 10 of 10 such
misses Claude Code took that freshly answered subagent's end after the
others' — an agent still busy with the request it just sent handles its
answer later than one that has been waiting. The other misses were one turn split in two (Claude Code began a turn
between two ends 25 ms apart): no separation rules that out.

Every release is logged (``releases``): which call, when, the predecessor it
waited for last, the earliest time the separation allowed and the gate request
it waited for last. Plain Python and thread-safe; the clock is injectable
(milliseconds, monotonic).
"""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from blackbox_mitm.matcher.outcomes import RecordedCall
from blackbox_mitm.session.perceived import perceived_order, taken_in

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_GAP_MS",
    "DEFAULT_GATE_WAIT_MS",
    "DEFAULT_SETTLE_MS",
    "DEFAULT_WAIT_MS",
    "Hold",
    "Release",
    "ReleaseOrder",
    "gates",
    "overlaps",
]

DEFAULT_GAP_MS = 25.0  # measured: Claude Code on a loaded 2-core machine (docs/replay-and-divergence.md)
DEFAULT_WAIT_MS = 3000.0  # how long an answer waits for a predecessor the agent has not asked for
DEFAULT_SETTLE_MS = 250.0  # an answer asked for this recently waits: the agent may still be busy sending (measured)
DEFAULT_GATE_WAIT_MS = 10_000.0  # how long an answer waits for a request that arrived before it completed (generous)
_ASKED_CAP_MS = 60_000.0  # a predecessor asked for but never delivered (its agent hung up): not waited for past this
_SLICE_S = 0.1  # a waiting thread looks at its cancel event this often


def _monotonic_ms() -> float:
    return time.monotonic() * 1000.0


def overlaps(calls: Sequence[RecordedCall]) -> dict[int, tuple[int, ...]]:
    """For each call number, the earlier-completed calls it overlapped in the recording (only calls that have some).

    Calls are in completion order, so the walk back from each call stops at the first answer that completed before
    its request: linear in the calls for an agent that makes one at a time. A call without its model_input's
    timestamp overlaps nothing.
    """
    out: dict[int, tuple[int, ...]] = {}
    for i, call in enumerate(calls):
        if call.input_timestamp is None:
            continue
        start = float(call.input_timestamp)
        before: list[int] = []
        for j in range(i - 1, -1, -1):
            if float(calls[j].timestamp) < start:
                break
            before.append(calls[j].number)
        if before:
            out[call.number] = tuple(sorted(before))
    return out


def arrival_order(calls: Sequence[RecordedCall]) -> tuple[int, ...]:
    """The call numbers in the order their requests arrived in the recording (calls without the time left out)."""
    timed = [(float(c.input_timestamp), c.number) for c in calls if c.input_timestamp is not None]
    return tuple(number for _, number in sorted(timed))


def gates(calls: Sequence[RecordedCall], concerned: set[int]) -> dict[int, int]:
    """For each concerned call, how many requests of ``arrival_order`` arrived strictly before its answer completed.

    Those requests cannot have depended on the answer: it is held until they all arrived in the replay. A request
    in the same millisecond as the completion may have been its consequence, so it is not a gate.
    """
    arrivals = sorted(float(c.input_timestamp) for c in calls if c.input_timestamp is not None)
    return {c.number: bisect.bisect_left(arrivals, float(c.timestamp)) for c in calls if c.number in concerned}


def _taken_in_only(calls: Sequence[RecordedCall], clocked: dict[int, tuple[int, ...]]) -> dict[int, tuple[int, ...]]:
    """The overlapping pairs of ``clocked`` whose two answers some later request carries (``perceived.taken_in``)."""
    kept = taken_in(calls, {*clocked, *(j for preds in clocked.values() for j in preds)})
    pairs = {i: tuple(j for j in preds if j in kept) for i, preds in clocked.items() if i in kept}
    return {i: preds for i, preds in pairs.items() if preds}


def _reordered(clocked: dict[int, tuple[int, ...]], order: Sequence[int]) -> dict[int, tuple[int, ...]]:
    """The overlapping pairs of ``clocked``, each pointed the way ``order`` (the agent's) puts them."""
    rank = {number: r for r, number in enumerate(order)}
    out: dict[int, set[int]] = {}
    for i, preds in clocked.items():
        for j in preds:
            first, then = (j, i) if rank[j] < rank[i] else (i, j)
            out.setdefault(then, set()).add(first)
    return {i: tuple(sorted(preds)) for i, preds in sorted(out.items())}


@dataclass(frozen=True, slots=True)
class Release:
    """One answer let go: ``at_ms`` on the scheduler's clock, after ``after`` (None: it waited for nobody)."""

    call: int
    at_ms: float
    after: int | None = None  # the predecessor delivered last
    not_before_ms: float = 0.0  # that delivery plus the separation
    skipped: tuple[int, ...] = ()  # predecessors never asked for in time: not waited for
    gate: int | None = None  # of the requests that arrived before its recorded completion, the one seen last
    gates_timed_out: tuple[int, ...] = ()  # such requests not seen within gate_wait_ms: released without them


class ReleaseOrder:
    """When each served answer may be released (see the module docstring)."""

    def __init__(
        self,
        calls: Sequence[RecordedCall],
        *,
        gap_ms: float = DEFAULT_GAP_MS,
        wait_ms: float = DEFAULT_WAIT_MS,
        gate_wait_ms: float = DEFAULT_GATE_WAIT_MS,
        clock: Callable[[], float] = _monotonic_ms,
        settle_ms: float = 0.0,
    ) -> None:
        if gap_ms < 0 or wait_ms < 0 or gate_wait_ms < 0 or settle_ms < 0:
            raise ValueError("gap_ms, wait_ms, gate_wait_ms and settle_ms must be 0 or more")
        self.settle_ms = float(settle_ms)
        self.gap_ms = float(gap_ms)
        self.wait_ms = float(wait_ms)
        self.gate_wait_ms = float(gate_wait_ms)
        clocked = overlaps(calls)
        clocked = _taken_in_only(calls, clocked) if clocked else clocked  # one call at a time: nothing to hold, no scan
        self._concerned = {*clocked, *(j for preds in clocked.values() for j in preds)}
        self.predecessors = _reordered(clocked, perceived_order(calls, self._concerned)) if clocked else {}
        self.arrivals = arrival_order(calls) if clocked else ()
        self.gates = gates(calls, self._concerned) if clocked else {}
        self._clock = clock
        self._cond = threading.Condition()
        self._asked: set[int] = set()
        self._seen = 0  # how many of ``arrivals`` (a prefix) arrived or were given up on
        self._gave_up: set[int] = set()  # gate requests given up on
        self._arrived_at: dict[int, int] = {}  # call -> its request's place in this replay's arrivals
        self._delivered: dict[int, float] = {}
        self._abandoned: set[int] = set()  # predecessors given up on
        self._timed_out: dict[int, tuple[int, ...]] = {}  # call -> the gate requests its answer gave up on
        self._log: list[Release] = []
        self._wakers: list[Callable[[], None]] = []  # event-loop waiters (Hold.wait_async), woken by each release

    @property
    def releases(self) -> list[Release]:
        """What was released so far, in release order."""
        with self._cond:
            return list(self._log)

    def concerns(self, number: int) -> bool:
        """Whether call ``number`` overlapped another in the recording (else its answer is simply sent)."""
        return number in self._concerned

    def arrived(self, number: int) -> None:
        """Call ``number``'s request arrived and was served (an answer the rule does not hold: it is a gate only)."""
        with self._cond:
            self._arrive(number)

    def hold(self, number: int) -> Hold:
        """Call ``number`` was served: its answer's hold (``Hold.now`` or ``Hold.wait`` releases it)."""
        with self._cond:
            self._arrive(number)
        return Hold(self, number, self._clock())

    # -- under the lock ------------------------------------------------------------------

    def _arrive(self, number: int) -> None:
        self._asked.add(number)
        self._arrived_at.setdefault(number, len(self._arrived_at))
        self._advance()
        self._cond.notify_all()
        self._wake_all()

    def _advance(self) -> None:
        while self._seen < len(self.arrivals) and (self.arrivals[self._seen] in self._asked or self.arrivals[self._seen] in self._gave_up):
            self._seen += 1

    def _gate(self, number: int, ready_ms: float, now: float) -> float | None:
        """None when every request that arrived before ``number``'s recorded completion arrived; else ms to wait."""
        need = self.gates.get(number, 0)
        if self._seen >= need:
            return None
        if now < ready_ms + self.gate_wait_ms:
            return ready_ms + self.gate_wait_ms - now
        missing = tuple(j for j in self.arrivals[:need] if j not in self._asked and j not in self._gave_up)
        log.warning(
            "blackbox: call %d's answer waited %.0f ms for the requests of calls %s, which arrived before it completed "
            "in the recording and have not arrived in this replay; released without them",
            number, now - ready_ms, ", ".join(map(str, missing)),
        )  # fmt: skip
        self._gave_up.update(missing)
        self._timed_out[number] = self._timed_out.get(number, ()) + missing
        self._advance()
        return None

    def _decide(self, number: int, ready_ms: float, now: float) -> tuple[Release | None, float | None]:
        """(the release, None) when ``number`` may go at ``now``; else (None, how long to wait at most, ms)."""
        gate_wait = self._gate(number, ready_ms, now)
        if gate_wait is not None:
            return None, gate_wait
        release, wait = self._by_order(number, ready_ms, now)
        if release is None:
            return None, wait
        need = self.gates.get(number, 0)
        seen = [(self._arrived_at[j], j) for j in self.arrivals[:need] if j != number and j in self._arrived_at]
        last_gate = max(seen)[1] if seen else None
        return dataclasses.replace(release, gate=last_gate, gates_timed_out=self._timed_out.get(number, ())), None

    def _by_order(self, number: int, ready_ms: float, now: float) -> tuple[Release | None, float | None]:
        """The completion-order rule with its separation, once the gates are passed."""
        if now < ready_ms + self.settle_ms:  # asked for a moment ago: the agent may still be busy with the request
            return None, ready_ms + self.settle_ms - now
        preds = self.predecessors.get(number, ())
        waiting = [j for j in preds if j not in self._delivered and j not in self._abandoned]
        if waiting:
            unasked = [j for j in waiting if j not in self._asked]
            deadline = ready_ms + (self.wait_ms if unasked else self.wait_ms + _ASKED_CAP_MS)
            if now >= deadline:
                self._abandoned.update(unasked or waiting)
                return self._by_order(number, ready_ms, now)
            return None, deadline - now
        delivered = [(self._delivered[j], j) for j in preds if j in self._delivered]
        if not delivered:
            return Release(number, now, skipped=tuple(j for j in preds if j in self._abandoned)), None
        last_ms, last = max(delivered)
        not_before = last_ms + self.gap_ms
        if now < not_before:
            return None, not_before - now
        return Release(number, now, last, not_before, tuple(j for j in preds if j in self._abandoned)), None

    def _mark(self, release: Release) -> Release:
        log.debug("blackbox: released %s", release)
        self._delivered[release.call] = release.at_ms
        self._log.append(release)
        self._cond.notify_all()
        self._wake_all()
        return release

    def _wake_all(self) -> None:
        wakers, self._wakers = self._wakers, []
        for wake in wakers:
            wake()


class Hold:
    """One served answer, not yet released."""

    def __init__(self, order: ReleaseOrder, number: int, ready_ms: float) -> None:
        self.order = order
        self.number = number
        self.ready_ms = ready_ms
        self.release: Release | None = None

    def now(self) -> bool:
        """Release it now if the rule allows (True), else leave it held (False) for ``wait``. Never blocks."""
        order = self.order
        with order._cond:
            if self.release is not None:
                return True
            release, _ = order._decide(self.number, self.ready_ms, order._clock())
            if release is None:
                return False
            self.release = order._mark(release)
            return True

    def wait(self, cancel: threading.Event | None = None) -> Release | None:
        """Block until the rule allows, then release it. ``cancel`` set: stop waiting (None: not released)."""
        order = self.order
        with order._cond:
            while self.release is None:
                if cancel is not None and cancel.is_set():
                    return None
                release, wait_ms = order._decide(self.number, self.ready_ms, order._clock())
                if release is not None:
                    self.release = order._mark(release)
                    break
                timeout = _SLICE_S if wait_ms is None else min(_SLICE_S, max(wait_ms, 0.0) / 1000.0)
                order._cond.wait(timeout)
            return self.release

    async def wait_async(self) -> Release:
        """``wait`` for an event loop (the proxy's): never blocks it."""
        order = self.order
        loop: asyncio.AbstractEventLoop | None = None  # asked for only when there is something to wait for
        while True:
            with order._cond:
                if self.release is not None:
                    return self.release
                release, wait_ms = order._decide(self.number, self.ready_ms, order._clock())
                if release is not None:
                    self.release = order._mark(release)
                    return self.release
                loop = loop or asyncio.get_running_loop()
                woken = asyncio.Event()
                order._wakers.append(functools.partial(_wake, loop, woken))
            timeout = _SLICE_S if wait_ms is None else min(_SLICE_S, max(wait_ms, 0.0) / 1000.0)
            try:
                await asyncio.wait_for(woken.wait(), timeout)
            except TimeoutError:
                pass


def _wake(loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
    if not loop.is_closed():
        loop.call_soon_threadsafe(event.set)
