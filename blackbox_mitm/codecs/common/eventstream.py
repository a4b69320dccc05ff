"""AWS's binary event-stream framing (``application/vnd.amazon.eventstream``), written from AWS's spec.

Amazon Bedrock streams (``invoke-with-response-stream``, ``converse-stream``) are
not server-sent events but a sequence of binary messages::

    total length (u32) | headers length (u32) | prelude CRC32 (u32)
    headers            | payload              | message CRC32 (u32)

all big-endian; each CRC is the standard CRC-32 (``zlib.crc32``) of the bytes
before it. A header is its name's length (u8), the name (UTF-8), a type byte
and its value; a Bedrock message carries string headers (type 7: a u16 length
and UTF-8) named ``:message-type`` (``event`` or ``exception``),
``:event-type`` / ``:exception-type`` and ``:content-type``.

The parser turns each message into the ``SseEvent`` the rest of the package
reads: its name is the ``:event-type`` (an exception's is ``exception:`` and its
``:exception-type``), its data the payload as text. A message whose CRC does
not check, or whose lengths do not fit, ends the stream with ``EventStreamError``
(the stream recorder then records nothing). ``tests/codecs/test_eventstream.py``
checks both directions against botocore's own decoder.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable

from blackbox_mitm.codecs.base import SseEvent
from blackbox_mitm.errors import StreamIncomplete

__all__ = [
    "CONTENT_TYPE",
    "EXCEPTION_PREFIX",
    "EventStreamError",
    "EventStreamParser",
    "encode_message",
    "frame_events",
    "parse_event_stream",
]

CONTENT_TYPE = "application/vnd.amazon.eventstream"
EXCEPTION_PREFIX = "exception:"
_PRELUDE = 12
_MAX_MESSAGE = 16 * 1024 * 1024  # AWS's limit on one message
_STRING = 7
# Value sizes of the fixed-width header types (0 true, 1 false, 2 byte, 3 short, 4 int, 5 long, 8 timestamp, 9 uuid).
_FIXED = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}


class EventStreamError(StreamIncomplete):
    """Bytes that are not an AWS event stream (a bad CRC, a length that does not fit)."""


def encode_message(headers: Iterable[tuple[str, str]], payload: bytes) -> bytes:
    """One event-stream message with string headers."""
    head = b"".join(_header(name, value) for name, value in headers)
    total = _PRELUDE + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + head + payload
    return body + struct.pack(">I", zlib.crc32(body))


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return struct.pack(">B", len(raw_name)) + raw_name + struct.pack(">BH", _STRING, len(raw_value)) + raw_value


def frame_events(events: Iterable[SseEvent], content_type: str = "application/json") -> bytes:
    """Events (as the parser gives them) back into messages: ``exception:X`` names become exceptions."""
    out = []
    for ev in events:
        name = ev.event or ""
        if name.startswith(EXCEPTION_PREFIX):
            headers = [(":exception-type", name[len(EXCEPTION_PREFIX) :]), (":content-type", content_type), (":message-type", "exception")]
        else:
            headers = [(":event-type", name), (":content-type", content_type), (":message-type", "event")]
        out.append(encode_message(headers, ev.data.encode()))
    return b"".join(out)


class EventStreamParser:
    """Feed bytes as they arrive; the same interface as ``sse.SseParser`` (``feed_blocks``, ``rest``)."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, chunk: bytes) -> list[SseEvent]:
        return [ev for _, ev in self.feed_blocks(chunk) if ev is not None]

    def feed_blocks(self, chunk: bytes) -> list[tuple[bytes, SseEvent | None]]:
        """Each message completed so far as (its bytes, its event); ``EventStreamError`` on bytes that are not one."""
        self._buf += chunk
        blocks: list[tuple[bytes, SseEvent | None]] = []
        start = 0
        while len(self._buf) - start >= _PRELUDE:
            total, head_len, prelude_crc = struct.unpack_from(">III", self._buf, start)
            if zlib.crc32(self._buf[start : start + 8]) != prelude_crc:
                raise EventStreamError("the event stream's prelude CRC does not match: not an AWS event stream")
            if total > _MAX_MESSAGE or total < _PRELUDE + head_len + 4:
                raise EventStreamError(f"an event-stream message claims {total} bytes with {head_len} of headers")
            if len(self._buf) - start < total:
                break
            raw = self._buf[start : start + total]
            (message_crc,) = struct.unpack_from(">I", raw, total - 4)
            if zlib.crc32(raw[:-4]) != message_crc:
                raise EventStreamError("an event-stream message's CRC does not match: the stream is corrupt")
            headers = _read_headers(raw[_PRELUDE : _PRELUDE + head_len])
            blocks.append((raw, _event(headers, raw[_PRELUDE + head_len : -4])))
            start += total
        self._buf = self._buf[start:]
        return blocks

    def rest(self) -> bytes:
        rest, self._buf = self._buf, b""
        return rest


def _read_headers(raw: bytes) -> dict[str, str]:
    headers: dict[str, str] = {}
    i = 0
    try:
        while i < len(raw):
            name_len = raw[i]
            name = raw[i + 1 : i + 1 + name_len].decode("utf-8", "replace")
            kind = raw[i + 1 + name_len]
            i += 2 + name_len
            if kind in _FIXED:
                i += _FIXED[kind]
                continue
            if kind not in (6, _STRING):
                raise EventStreamError(f"an event-stream header {name!r} has an unknown type {kind}")
            (size,) = struct.unpack_from(">H", raw, i)
            value = raw[i + 2 : i + 2 + size]
            i += 2 + size
            headers[name] = value.decode("utf-8", "replace")
    except (IndexError, struct.error) as exc:
        raise EventStreamError("an event-stream message's headers run past their length") from exc
    return headers


def _event(headers: dict[str, str], payload: bytes) -> SseEvent:
    data = payload.decode("utf-8", "replace")
    if headers.get(":message-type") == "exception":
        return SseEvent(EXCEPTION_PREFIX + headers.get(":exception-type", ""), data)
    if headers.get(":message-type") == "error":
        return SseEvent(EXCEPTION_PREFIX + headers.get(":error-code", "error"), data or headers.get(":error-message", ""))
    return SseEvent(headers.get(":event-type"), data)


def parse_event_stream(body: bytes) -> list[SseEvent]:
    """Every complete message in a whole body (a trailing partial message is dropped)."""
    return EventStreamParser().feed(body)
