"""InvokeModel streams: Anthropic stream events, each carried base64 in an event-stream ``chunk`` message."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from blackbox_mitm.codecs import anthropic_messages
from blackbox_mitm.codecs.base import CallIds, DecodedRequest, SseEvent, StreamParser
from blackbox_mitm.codecs.common.eventstream import EXCEPTION_PREFIX, EventStreamParser, frame_events
from blackbox_mitm.codecs.common.jsonio import dumps
from blackbox_mitm.codecs.sse import parse_sse

__all__ = ["aggregate_stream", "encode_stream", "encode_stream_error", "is_stream_end", "stream_parser"]


def encode_stream(output: Mapping[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> bytes:
    """A neutral ``model_output`` -> the Anthropic stream events, framed as Bedrock ``chunk`` messages."""
    events = parse_sse(anthropic_messages.encode_stream(output, request=request, ids=ids, created_ms=created_ms))
    return frame_events(SseEvent("chunk", _chunk(ev.data)) for ev in events)


def _chunk(data: str) -> str:
    return dumps({"bytes": base64.b64encode(data.encode()).decode("ascii")}, allow_nan=False)


def encode_stream_error(message: str) -> bytes:
    """A ``validationException`` message: botocore and the Anthropic SDKs raise it."""
    return frame_events([SseEvent(EXCEPTION_PREFIX + "validationException", dumps({"message": message}, allow_nan=False))])


def is_stream_end(event: SseEvent) -> bool:
    """``message_stop`` or an error (the events are the Anthropic ones, as ``stream_parser`` gives them)."""
    return anthropic_messages.is_stream_end(event)


def aggregate_stream(events: list[SseEvent]) -> dict[str, Any]:
    """The Anthropic events (as ``stream_parser`` gives them) -> the Message they add up to."""
    return anthropic_messages.aggregate_stream(events)


class _ChunkParser:
    """Event-stream messages -> the Anthropic events inside them; the bytes passed on are the messages as sent."""

    def __init__(self) -> None:
        self._frames = EventStreamParser()

    def feed_blocks(self, chunk: bytes) -> list[tuple[bytes, SseEvent | None]]:
        return [(raw, None if ev is None else inner_event(ev)) for raw, ev in self._frames.feed_blocks(chunk)]

    def rest(self) -> bytes:
        return self._frames.rest()


def stream_parser() -> StreamParser:
    """An incremental parser of an ``invoke-with-response-stream`` body."""
    return _ChunkParser()


def inner_event(ev: SseEvent) -> SseEvent | None:
    """A ``chunk`` message -> its Anthropic event; an exception -> an Anthropic ``error`` event; else None."""
    if ev.event is not None and ev.event.startswith(EXCEPTION_PREFIX):
        try:
            detail = json.loads(ev.data).get("message", ev.data)
        except (ValueError, AttributeError):
            detail = ev.data
        error = {"type": ev.event[len(EXCEPTION_PREFIX) :], "message": str(detail)}
        return SseEvent("error", dumps({"type": "error", "error": error}, allow_nan=False))
    if ev.event != "chunk":
        return None
    try:
        raw = base64.b64decode(json.loads(ev.data)["bytes"], validate=True).decode("utf-8")
        kind = json.loads(raw).get("type")
    except (ValueError, KeyError, TypeError, AttributeError, binascii.Error):
        return SseEvent("error", dumps({"type": "error", "error": {"type": "malformed_chunk", "message": ev.data[:200]}}))
    return SseEvent(kind if isinstance(kind, str) else None, raw)
