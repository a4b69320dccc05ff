"""Server-sent events: an incremental parser for recorded streams and a formatter for replayed ones.

Chunk boundaries are arbitrary (TCP, HTTP chunking), so the parser buffers and
splits on blank lines (``\\n\\n``, ``\\r\\n\\r\\n`` or ``\\r\\r``). The formatter always
writes an ``event:`` line when the event has a name (Anthropic's Python SDK drops
events without one) and ends every event, the last included, with a blank line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from blackbox_mitm.codecs.base import SseEvent

__all__ = ["SseParser", "format_sse", "parse_sse"]

_BLANK_LINE = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_LINE = re.compile(rb"\r\n|\n|\r")


class SseParser:
    """Feed bytes as they arrive; ``feed`` returns the events completed so far."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, chunk: bytes) -> list[SseEvent]:
        self._buf += chunk
        events: list[SseEvent] = []
        while True:
            m = _BLANK_LINE.search(self._buf)
            if not m:
                break
            block, self._buf = self._buf[: m.start()], self._buf[m.end() :]
            ev = _parse_block(block)
            if ev is not None:
                events.append(ev)
        return events

    @property
    def pending(self) -> bytes:
        """Bytes of an event not yet terminated by a blank line (a cut-off stream leaves some)."""
        return self._buf


def _parse_block(block: bytes) -> SseEvent | None:
    name: str | None = None
    data: list[str] = []
    for raw in _LINE.split(block):
        line = raw.decode("utf-8", "replace")
        if not line or line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    if name is None and not data:
        return None
    return SseEvent(name, "\n".join(data))


def parse_sse(body: bytes) -> list[SseEvent]:
    """Every complete event in a whole body (a trailing unterminated event is dropped, as SDKs do)."""
    return SseParser().feed(body)


def format_sse(events: Iterable[SseEvent]) -> bytes:
    out = []
    for ev in events:
        if ev.event is not None:
            out.append(f"event: {ev.event}\n")
        for line in ev.data.split("\n"):
            out.append(f"data: {line}\n")
        out.append("\n")
    return "".join(out).encode()
