"""Messages streams: a model_output as SSE events, and a recorded stream added up into its Message."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from blackbox_mitm.codecs.anthropic_messages import JSON_FRAGMENT, TEXT_FRAGMENT
from blackbox_mitm.codecs.anthropic_messages.response import blocks_of, message_head, stop_reason_of
from blackbox_mitm.codecs.base import CallIds, DecodedRequest, SseEvent, StreamIncomplete
from blackbox_mitm.codecs.common.jsonio import dumps
from blackbox_mitm.codecs.sse import format_sse

__all__ = ["aggregate_stream", "encode_stream", "encode_stream_error", "is_stream_end"]


def encode_stream(output: Mapping[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> bytes:
    """A neutral ``model_output`` -> a complete SSE stream, an ``event:`` line on every event."""
    head = message_head(output, request, created_ms)
    # Input (and cache) counts open the stream and the output count closes it, as the API sends them.
    events = [_event("message_start", message={**head, "content": [], "stop_reason": None, "usage": {**head["usage"], "output_tokens": 0}})]
    for index, block in enumerate(blocks_of(output, ids)):
        if block["type"] == "thinking":
            events.append(_event("content_block_start", index=index, content_block={"type": "thinking", "thinking": "", "signature": ""}))
            for piece in _pieces(block["thinking"], TEXT_FRAGMENT):
                events.append(_event("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": piece}))
            if block["signature"]:
                events.append(
                    _event("content_block_delta", index=index, delta={"type": "signature_delta", "signature": block["signature"]})
                )
        elif block["type"] == "redacted_thinking":
            events.append(_event("content_block_start", index=index, content_block=block))
        elif block["type"] == "text":
            events.extend(_text_events(index, block))
        elif "input" not in block:  # a server tool's result: whole in its start event, as the API sends it
            events.append(_event("content_block_start", index=index, content_block=block))
        else:
            events.append(_event("content_block_start", index=index, content_block={**block, "input": {}}))
            for piece in _pieces(dumps(block["input"], allow_nan=False), JSON_FRAGMENT):
                events.append(_event("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": piece}))
        events.append(_event("content_block_stop", index=index))
    events.append(
        _event(
            "message_delta",
            delta={"stop_reason": stop_reason_of(output), "stop_sequence": None},
            usage={"output_tokens": head["usage"]["output_tokens"]},
        )
    )
    events.append(_event("message_stop"))
    return format_sse(events)


def _text_events(index: int, block: dict[str, Any]) -> list[SseEvent]:
    """A text block: its citations first (``citations_delta``, as the API streams them), then its text."""
    start: dict[str, Any] = {"type": "text", "text": ""}
    if "citations" in block:
        start["citations"] = []
    events = [_event("content_block_start", index=index, content_block=start)]
    for citation in block.get("citations") or []:
        events.append(_event("content_block_delta", index=index, delta={"type": "citations_delta", "citation": citation}))
    for piece in _pieces(block["text"], TEXT_FRAGMENT):
        events.append(_event("content_block_delta", index=index, delta={"type": "text_delta", "text": piece}))
    return events


def encode_stream_error(message: str) -> bytes:
    """The ``event: error`` the SDKs raise as an ``APIStatusError``."""
    return format_sse([_event("error", error={"type": "invalid_request_error", "message": message})])


def _event(kind: str, **fields: Any) -> SseEvent:
    return SseEvent(kind, dumps({"type": kind, **fields}, allow_nan=False))


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def is_stream_end(event: SseEvent) -> bool:
    """``message_stop``, or an ``error`` event: no later event counts (``aggregate_stream`` names the error)."""
    return event.event in ("message_stop", "error")


def aggregate_stream(events: list[SseEvent]) -> dict[str, Any]:
    """A recorded stream -> the equivalent non-streaming Message object (for ``decode_response``).

    Raises ``StreamIncomplete`` on an ``error`` event, on a malformed event, or when
    ``message_stop`` never came.
    """
    message: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    json_bufs: dict[int, str] = {}
    for n, ev in enumerate(events):
        try:
            data = json.loads(ev.data) if ev.data else {}
        except ValueError as exc:
            raise StreamIncomplete(f"stream event {n} ({ev.event}) is not JSON") from exc
        kind = ev.event or (data.get("type") if isinstance(data, dict) else None)
        if kind == "ping":
            continue
        if not isinstance(data, dict):
            raise StreamIncomplete(f"stream event {n} ({kind}) is not a JSON object")
        if kind == "error":
            error = data.get("error") if isinstance(data.get("error"), dict) else None
            detail = f"{error.get('type')}: {error.get('message')}" if error else ev.data
            raise StreamIncomplete(f"the stream ended with an error event ({detail})", error=error)
        if kind == "message_stop":
            if message is None:
                break
            for index, buf in json_bufs.items():
                try:
                    blocks[index]["input"] = json.loads(buf)
                except ValueError as exc:
                    raise StreamIncomplete(f"the tool input of content block {index} is not valid JSON") from exc
            message["content"] = [blocks[i] for i in sorted(blocks)]
            return message
        if kind == "message_start":
            start = data.get("message") or {}
            if not isinstance(start, dict):
                raise StreamIncomplete(f"stream event {n} (message_start) carries no message object")
            message = {**start, "content": []}
        elif message is None:
            raise StreamIncomplete(f"stream event {n} ({kind}) came before message_start")
        else:
            try:
                _apply_event(kind, data, message, blocks, json_bufs)
            except (KeyError, TypeError, AttributeError, ValueError) as exc:
                raise StreamIncomplete(f"stream event {n} ({kind}) is malformed: {exc!r}") from exc
    missing = "message_stop" if message is not None else "message_start"
    raise StreamIncomplete(f"the stream ended before {missing}: the call did not complete")


def _apply_event(
    kind: str | None, data: dict[str, Any], message: dict[str, Any], blocks: dict[int, dict[str, Any]], json_bufs: dict[int, str]
) -> None:
    if kind == "content_block_start":
        blocks[data["index"]] = dict(data["content_block"])
    elif kind == "content_block_delta":
        index = data["index"]
        block, delta = blocks[index], data["delta"]
        match delta.get("type"):
            case "text_delta":
                block["text"] = block.get("text", "") + delta["text"]
            case "input_json_delta":
                json_bufs[index] = json_bufs.get(index, "") + delta["partial_json"]
            case "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta["thinking"]
            case "signature_delta":
                block["signature"] = delta["signature"]
            case "citations_delta":
                block["citations"] = [*(block.get("citations") or []), delta["citation"]]
    elif kind == "message_delta":
        delta = data.get("delta") or {}
        for key in ("stop_reason", "stop_sequence", "stop_details"):
            message[key] = delta.get(key)
        if delta.get("container") is not None:
            message["container"] = delta["container"]
        usage = data.get("usage")
        if isinstance(usage, dict) and isinstance(message.get("usage"), dict):
            message["usage"] = {**message["usage"], **{k: v for k, v in usage.items() if v is not None}}
