"""What went wrong in one run, kept as it goes: refusals, answers not written or not recorded, notes, calls in flight.

``Session`` (session/engine.py) is a ``RunLog``: the engine decides what each call
gets, and every refusal, failed write and unrecorded answer is noted here, where
``blackbox record`` and the reports read them (``problems``). A note that the
cassette does not hold an answer also marks the recording (``RunRecorder.note_unrecordable``).
Thread-safe: concurrent flows note at once.
"""

from __future__ import annotations

import logging
import threading

from blackbox_mitm.session.calls import Ticket
from blackbox_mitm.session.recorder import RunRecorder

__all__ = ["RunLog"]

log = logging.getLogger("blackbox_mitm.session.engine")  # the engine's logger, as before this was split out


class RunLog:
    """A run's refusals, failed writes, unrecorded answers and notes, and how many forwarded calls are in flight."""

    def __init__(self, recorder: RunRecorder | None) -> None:
        self.recorder = recorder  # the run written as it goes (None: nothing is recorded)
        self.in_flight = 0
        self.refused: list[str] = []  # requests and answers refused (the agent got an error)
        self.failed_writes: list[str] = []  # answers that could not be made durable (the agent got an error)
        self.unrecorded: list[str] = []  # answers the agent got that the cassette does not hold
        self.notes: list[str] = []
        self._lock = threading.Lock()

    def call_done(self) -> None:
        with self._lock:
            self.in_flight = max(0, self.in_flight - 1)

    def on_call_failed(self, ticket: Ticket, reason: str, *, streamed: bool = True) -> None:
        """A forwarded call that did not complete (connection failed, stream cut off, error event): not a step."""
        self._note_failed(ticket, reason, streamed=streamed)
        self.call_done()

    def _note_failed(self, ticket: Ticket, reason: str, *, streamed: bool) -> None:
        if streamed:
            log.warning("blackbox: a streamed model call did not complete (%s); it was not recorded", reason)
            self.note(f"a streamed call did not complete: {reason}")
        else:
            log.warning("blackbox: a forwarded model call failed (%s); it was not recorded", reason)
            self.note(f"a model call failed: {reason}")

    def note(self, line: str) -> None:
        with self._lock:
            self.notes.append(line)

    def note_unrecorded(self, reason: str) -> None:
        """An answer reached the agent that the cassette does not hold: the run is marked."""
        log.error("blackbox: %s", reason)
        with self._lock:
            self.unrecorded.append(reason)
        if self.recorder is not None:
            self.recorder.note_unrecordable(reason)

    def problems(self) -> list[str]:
        """What makes a recording incomplete: refusals, answers not written, answers not recorded."""
        with self._lock:
            return [*(f"refused: {r}" for r in self.refused), *self.failed_writes, *self.unrecorded]

    def _note_refusal(self, message: str) -> None:
        log.warning("blackbox: refused: %s", message)
        with self._lock:
            self.refused.append(message)

    def _note_write_failed(self, exc: BaseException) -> str:
        reason = f"blackbox could not record this model call, so it is not passed on: {exc}"
        log.error("blackbox: %s", reason)
        with self._lock:
            self.failed_writes.append(reason)
        if self.recorder is not None:
            self.recorder.note_unrecordable(reason)
        return reason
