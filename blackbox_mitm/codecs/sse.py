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
        return [ev for _, ev in self.feed_blocks(chunk) if ev is not None]

    def feed_blocks(self, chunk: bytes) -> list[tuple[bytes, SseEvent | None]]:
        """Each block completed so far as (its bytes with the blank line after it, its event or None)."""
        self._buf += chunk
        blocks: list[tuple[bytes, SseEvent | None]] = []
        start = 0
        while True:
            m = _BLANK_LINE.search(self._buf, start)
            if not m:
                break
            blocks.append((self._buf[start : m.end()], _parse_block(self._buf[start : m.start()])))
            start = m.end()
        self._buf = self._buf[start:]
        return blocks

    def rest(self) -> bytes:
        """The bytes of an event not (yet) ended by a blank line; taken out of the parser."""
        rest, self._buf = self._buf, b""
        return rest


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
