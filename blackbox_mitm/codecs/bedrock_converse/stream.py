"""ConverseStream: a model_output as event-stream messages, and a recorded stream added up into its ConverseResponse."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from blackbox_mitm.codecs.base import CallIds, DecodedRequest, SseEvent, StreamIncomplete, StreamParser
from blackbox_mitm.codecs.bedrock import stream as bedrock_stream
from blackbox_mitm.codecs.bedrock_converse.response import content_of, stop_reason_of, usage_of
from blackbox_mitm.codecs.common.eventstream import EXCEPTION_PREFIX, EventStreamParser, frame_events
from blackbox_mitm.codecs.common.jsonio import dumps

__all__ = ["aggregate_stream", "encode_stream", "encode_stream_error", "is_stream_end", "stream_parser"]

TEXT_FRAGMENT = 256
JSON_FRAGMENT = 64


def encode_stream(output: Mapping[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> bytes:
    """A neutral ``model_output`` -> messageStart, the content blocks, messageStop and metadata."""
    events = [_event("messageStart", role="assistant")]
    for index, block in enumerate(content_of(output, ids)):
        if "text" in block:
            for piece in _pieces(block["text"], TEXT_FRAGMENT):
                events.append(_event("contentBlockDelta", contentBlockIndex=index, delta={"text": piece}))
        else:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            events.append(_event("contentBlockStart", contentBlockIndex=index, start=start))
            for piece in _pieces(dumps(use["input"], allow_nan=False), JSON_FRAGMENT):
                events.append(_event("contentBlockDelta", contentBlockIndex=index, delta={"toolUse": {"input": piece}}))
        events.append(_event("contentBlockStop", contentBlockIndex=index))
    events.append(_event("messageStop", stopReason=stop_reason_of(output)))
    events.append(_event("metadata", usage=usage_of(output), metrics={"latencyMs": 0}))
    return frame_events(events)


def _event(kind: str, **fields: Any) -> SseEvent:
    return SseEvent(kind, dumps(fields, allow_nan=False))


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def encode_stream_error(message: str) -> bytes:
    """A ``validationException`` message: boto3 raises it from the stream (the same frame InvokeModel's stream ends with)."""
    return bedrock_stream.encode_stream_error(message)


def is_stream_end(event: SseEvent) -> bool:
    """``metadata`` (the last event Bedrock sends), or an exception."""
    return event.event == "metadata" or (event.event or "").startswith(EXCEPTION_PREFIX)


def aggregate_stream(events: list[SseEvent]) -> dict[str, Any]:
    """Recorded stream events -> the ConverseResponse they add up to; ``StreamIncomplete`` if it never completed."""
    blocks: dict[int, dict[str, Any]] = {}
    stop: Any = None
    for n, ev in enumerate(events):
        kind = ev.event or ""
        if kind.startswith(EXCEPTION_PREFIX):
            raise StreamIncomplete(f"the stream ended with {kind[len(EXCEPTION_PREFIX) :]} ({ev.data[:200]})", error={"message": ev.data})
        try:
            data = json.loads(ev.data) if ev.data else {}
        except ValueError as exc:
            raise StreamIncomplete(f"stream event {n} ({kind}) is not JSON") from exc
        if not isinstance(data, dict):
            raise StreamIncomplete(f"stream event {n} ({kind}) is not a JSON object")
        index = data.get("contentBlockIndex", 0)
        if kind == "contentBlockStart":
            use = (data.get("start") or {}).get("toolUse")
            if isinstance(use, dict):
                blocks[index] = {"toolUse": {**use, "input": ""}}
        elif kind == "contentBlockDelta":
            _add_delta(blocks, index, data.get("delta") or {})
        elif kind == "messageStop":
            stop = data.get("stopReason")
        elif kind == "metadata":
            if stop is None:
                break
            done = {"output": {"message": {"role": "assistant", "content": _finished(blocks)}}, "stopReason": stop}
            return {**done, "usage": data["usage"]} if isinstance(data.get("usage"), dict) else done
    raise StreamIncomplete("the stream ended before its messageStop and metadata events: the call did not complete")


def _add_delta(blocks: dict[int, dict[str, Any]], index: int, delta: dict[str, Any]) -> None:
    if isinstance(delta.get("text"), str):
        block = blocks.setdefault(index, {"text": ""})
        block["text"] = block.get("text", "") + delta["text"]
    elif isinstance(delta.get("toolUse"), dict):
        block = blocks.setdefault(index, {"toolUse": {"input": ""}})
        use = block.setdefault("toolUse", {"input": ""})
        use["input"] = use.get("input", "") + str(delta["toolUse"].get("input", ""))
    elif "reasoningContent" in delta:
        blocks.setdefault(index, {"reasoningContent": {}})
    else:
        blocks.setdefault(index, {str(next(iter(delta), "unknown")): delta})  # refused by decode_response


def _finished(blocks: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for index in sorted(blocks):
        block = blocks[index]
        if "toolUse" in block:
            raw = block["toolUse"].get("input") or "{}"
            try:
                parsed = json.loads(raw)
            except ValueError as exc:
                raise StreamIncomplete(f"content block {index}'s toolUse input is not JSON") from exc
            block = {"toolUse": {**block["toolUse"], "input": parsed}}
        out.append(block)
    return out


def stream_parser() -> StreamParser:
    """An incremental parser of a ``converse-stream`` body: each message is an event named by its ``:event-type``."""
    return EventStreamParser()
