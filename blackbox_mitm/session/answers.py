"""A forwarded call's finished answer becomes steps: the session's one entry for it, in two halves.

``take_response`` decodes the answer (a whole body, or a stream's events once its final event came), writes
the call's steps to the journal under the recorder's lock, and returns a ``Settling``: what the agent gets,
once the journal line is fsynced. ``Settling.settle()`` waits for that fsync on the calling thread;
``await Settling.settle_async()`` waits on an event loop without blocking it — calls that overlap share one
fsync, run on a worker thread (``GroupCommit.wait_async``), so the proxy's loop hops to a thread once per
fsync instead of once per call. ``on_response`` is the two together, for callers that may block.

Either way nothing reaches the agent before its steps are on disk: an answer that cannot be made durable
is replaced by the API's error (status 500), and its steps leave the trace.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from blackbox_mitm.cassette.media import collecting
from blackbox_mitm.codecs import stream_content_type
from blackbox_mitm.codecs.base import CallIds, Codec, SseEvent
from blackbox_mitm.errors import BlackboxError, BlackboxUnsupportedError
from blackbox_mitm.session.calls import Answer, Ticket
from blackbox_mitm.session.numbers import refuse_unrepresentable_numbers
from blackbox_mitm.session.recorder import RecordFailed, SecretLeak, Written
from blackbox_mitm.session.run_log import RunLog

__all__ = ["AnswerIntake", "Settling", "error_answer"]

log = logging.getLogger("blackbox_mitm.session.engine")  # the engine's logger, as before this was split out


def error_answer(codec: Codec, message: str, *, status: int = 400, error_type: str | None = None) -> Answer:
    """The API's own error, as ``codec`` words it."""
    err = codec.encode_error(message, status=status, error_type=error_type)
    return Answer(err.status, dict(err.headers), err.body)


def _instead(ticket: Ticket, streamed: bool, message: str, status: int) -> Answer:
    """What the agent gets in place of an answer that was not recorded: for a stream, the in-stream error event."""
    if streamed:
        body = ticket.codec.encode_stream_error(message)
        return Answer(status, {"content-type": stream_content_type(ticket.codec)}, body, stream=True)
    return error_answer(ticket.codec, message, status=status)


@dataclass(slots=True)
class Settling:
    """A finished answer whose steps are written, not yet known to be on disk: settle it exactly once.

    ``answer`` is what the agent gets once settled (None: the answer as it came); ``written`` the journal
    line to wait for (None: nothing to wait for — not recorded, refused, or a run that keeps no journal).
    """

    intake: AnswerIntake
    ticket: Ticket
    streamed: bool
    answer: Answer | None = None
    written: Written | None = None

    def settle(self) -> Answer | None:
        """Wait for the fsync on this thread; what the agent gets."""
        try:
            if self.written is not None and self.intake.recorder is not None:
                self.intake.recorder.wait_durable(self.written)
            return self.answer
        except RecordFailed as exc:
            return self._failed(exc)
        finally:
            self.intake.call_done()

    async def settle_async(self) -> Answer | None:
        """Await the fsync on the running event loop, which it never blocks; what the agent gets."""
        try:
            if self.written is not None and self.intake.recorder is not None:
                await self.intake.recorder.wait_durable_async(self.written)
            return self.answer
        except RecordFailed as exc:
            return self._failed(exc)
        finally:
            self.intake.call_done()

    def _failed(self, exc: RecordFailed) -> Answer:
        return _instead(self.ticket, self.streamed, self.intake._note_write_failed(exc), 500)


class AnswerIntake(RunLog):
    """The session's side for answers (``Session`` is one): each forwarded call's answer, recorded durably."""

    ids: CallIds  # the run's provider-id ↔ neutral-id map (set by Session)

    def on_response(
        self, ticket: Ticket, status: int, answer: bytes | Sequence[SseEvent] | None, *, response_ms: int | None = None
    ) -> Answer | None:
        """The one entry for a forwarded call's finished answer: a whole body, or a stream's events (server-sent
        events, WebSocket frames) once its final event arrived. The answer is recorded before the agent sees its end.

        None: pass the answer on as it came (recorded; or an error status, or a stream that did not complete: not
        recorded). An Answer: what the agent gets instead — the API's error, or for a stream the codec's in-stream
        error event, sent in place of the final event. ``take_response(...).settle()``: it blocks for the fsync.
        """
        return self.take_response(ticket, status, answer, response_ms=response_ms).settle()

    def take_response(
        self, ticket: Ticket, status: int, answer: bytes | Sequence[SseEvent] | None, *, response_ms: int | None = None
    ) -> Settling:
        """``on_response`` up to the fsync: the answer decoded and its steps written; settle the result once."""
        try:
            streamed = not isinstance(answer, bytes)
            if status >= 400 or answer is None:
                log.info("blackbox: provider answered %s; passed to the agent, not recorded", status)
                return Settling(self, ticket, streamed)
            whole = self._aggregate(ticket, answer) if not isinstance(answer, bytes) else answer
            if whole is None:
                return Settling(self, ticket, streamed)
            outcome = self._record_answer(ticket, whole, response_ms)
            if isinstance(outcome, tuple):
                message, code = outcome
                return Settling(self, ticket, streamed, answer=_instead(ticket, streamed, message, code))
            return Settling(self, ticket, streamed, written=outcome)
        except BaseException:
            self.call_done()  # no Settling to settle: the call is over here
            raise

    def _aggregate(self, ticket: Ticket, events: Sequence[SseEvent]) -> Mapping[str, Any] | None:
        """The object a stream's events add up to; None for one that is not a completed call (passed on as sent)."""
        try:
            return ticket.codec.aggregate_stream(list(events))
        except BlackboxError as exc:  # StreamIncomplete: the provider's own error event, or a stream that never completed
            self._note_failed(ticket, str(exc), streamed=True)
            return None

    def _record_answer(self, ticket: Ticket, body: bytes | Mapping[str, Any], response_ms: int | None) -> Written | tuple[str, int] | None:
        """The one path by which an answer becomes steps: the journal line written (None: no journal), else why the
        agent gets an error (and its status)."""
        try:
            if isinstance(body, bytes):
                refuse_unrepresentable_numbers(body, what="response")
            with collecting() as media:  # an answer's media (a Gemini image) join the request's
                output = ticket.codec.decode_response(body, self.ids, ticket.request)
            ticket.request.media.update(media)
            if self.recorder is None:
                return None
            return self.recorder.write_call(
                ticket.request, output, request_ms=ticket.received_ms, response_ms=response_ms, secrets=ticket.secrets
            )
        except BlackboxUnsupportedError as exc:
            self._note_refusal(exc.client_message)
            return exc.client_message, 400
        except SecretLeak as exc:
            self._note_refusal(str(exc))
            return str(exc), 400
        except RecordFailed as exc:
            return self._note_write_failed(exc), 500
        except RecursionError:
            message = BlackboxUnsupportedError("body", "the response is nested too deeply to be recorded").client_message
            self._note_refusal(message)
            return message, 400
        except Exception as exc:  # never pass an answer on that the cassette does not hold
            log.exception("blackbox: an answer could not be recorded")
            return self._note_write_failed(exc), 500
