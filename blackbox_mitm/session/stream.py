"""Recording a streamed answer while it passes to the agent: the tee the proxy puts on a response.

``StreamCapture.tee`` gets the response body's chunks as they arrive (still
content-encoded) and returns what the agent is sent. It decodes them, splits
server-sent events, and passes each complete event on at once — except the
event after which the codec says the stream is complete. That one is held until
the call is recorded (the step is durable before the agent sees the answer
end). When the answer must be refused, or cannot be written, the codec's
in-stream error event goes out in its place, so the agent's SDK raises instead
of carrying on with an answer the cassette does not hold.

The agent is sent decoded bytes (the final event may be replaced), so the proxy
drops the ``content-encoding`` header of a captured stream. Plain Python: the
proxy layer only wires ``flow.response.stream = capture.tee``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from blackbox_mitm.codecs import stream_parser
from blackbox_mitm.codecs.base import SseEvent
from blackbox_mitm.errors import BlackboxError
from blackbox_mitm.session.decoding import stream_decoder

if TYPE_CHECKING:
    from blackbox_mitm.session.engine import Session, Ticket

__all__ = ["StreamCapture"]

log = logging.getLogger(__name__)


class StreamCapture:
    """One streamed answer to a forwarded model call, recorded as it passes."""

    def __init__(self, session: Session, ticket: Ticket, content_encoding: str = "") -> None:
        self.session = session
        self.ticket = ticket
        self.events: list[SseEvent] = []
        self.done = False
        self._parser = stream_parser(ticket.codec)  # server-sent events, or the codec's own framing
        self._decode: Callable[[bytes], bytes] | None = None
        self._encoding_error: str | None = None
        try:
            self._decode = stream_decoder(content_encoding)
        except (ValueError, ImportError) as exc:
            self._encoding_error = f"could not decode the stream ({exc})"

    def tee(self, chunk: bytes) -> bytes:
        """What the agent gets for ``chunk`` (``b""`` marks the end of the body): decoded events."""
        if self._decode is None:  # an encoding we cannot read: passed on as it is, not recorded
            if not self.done:
                self._fail(self._encoding_error or "could not decode the stream")
            return chunk
        if chunk == b"":
            return b"" if self.done else self._ended()
        try:
            plain = self._decode(chunk)
        except Exception as exc:  # a corrupt encoding: the call is not recordable, and the agent cannot read it either
            if not self.done:
                self._fail(f"could not decode the stream ({exc})")
            return b""
        if self.done:
            return plain
        out: list[bytes] = []
        try:
            blocks = self._parser.feed_blocks(plain)
        except BlackboxError as exc:  # bytes that are not the codec's framing: passed on, not recorded
            self._fail(str(exc))
            return plain
        for raw, event in blocks:
            if event is not None and not self.done:
                self.events.append(event)
                if self.ticket.codec.is_stream_end(event):
                    self.done = True
                    raw = self._finish(raw)
            out.append(raw)
        if self.done:
            out.append(self._parser.rest())
        return b"".join(out)

    @property
    def decodes(self) -> bool:
        """Whether the agent is sent decoded bytes (so the response must lose its content-encoding)."""
        return self._decode is not None

    def _ended(self) -> bytes:
        self.done = True
        rest = self._parser.rest()
        self.session.on_call_failed(self.ticket, "the stream ended before its final event")
        return rest

    def _fail(self, reason: str) -> None:
        self.done = True
        self.session.on_call_failed(self.ticket, reason)

    def _finish(self, final: bytes) -> bytes:
        """Record the call (the session's one entry for a finished answer); the final event's bytes, or the error event instead."""
        instead = self.session.on_response(self.ticket, 200, self.events)
        return final if instead is None else instead.body
