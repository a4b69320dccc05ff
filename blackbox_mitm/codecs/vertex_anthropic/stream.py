"""streamRawPredict streams: Anthropic's SSE, as the Anthropic codec writes and reads it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from blackbox_mitm.codecs import anthropic_messages
from blackbox_mitm.codecs.base import CallIds, DecodedRequest, SseEvent

__all__ = ["aggregate_stream", "encode_stream", "encode_stream_error", "is_stream_end"]


def encode_stream(output: Mapping[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> bytes:
    return anthropic_messages.encode_stream(output, request=request, ids=ids, created_ms=created_ms)


def encode_stream_error(message: str) -> bytes:
    return anthropic_messages.encode_stream_error(message)


def is_stream_end(event: SseEvent) -> bool:
    return anthropic_messages.is_stream_end(event)


def aggregate_stream(events: list[SseEvent]) -> dict[str, Any]:
    return anthropic_messages.aggregate_stream(events)
