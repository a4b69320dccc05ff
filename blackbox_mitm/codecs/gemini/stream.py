"""Gemini streams: ``streamGenerateContent?alt=sse`` chunks, recorded and synthesized.

A Gemini stream is ``data: {GenerateContentResponse}`` events with no ``event:``
lines and no ``[DONE]``: each chunk carries the new parts, the last one carries
``finishReason`` (and the final, cumulative ``usageMetadata``). So the stream is
complete at the first chunk holding a ``finishReason`` (or a blocked prompt, or
an ``error`` object), and a connection that closes before it is a call that did
not complete.

``aggregate_stream`` adds the chunks up to the whole response they stand for:
adjacent text pieces of one kind (thought or not) are joined, every other part
is kept in order, candidate fields (``finishReason``, ``safetyRatings``,
metadata) take their last non-null value, so ``response.decode_response`` refuses
exactly what it would refuse in the same answer sent whole.

``stream_body`` cuts a synthesized whole response into chunks the SDKs accept:
text in fragments of ``FRAGMENT`` code points, function calls whole (Gemini
never streams their arguments), ``finishReason`` and usage on the last chunk.
Plain Python, no mitmproxy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from blackbox_mitm.codecs.base import CallIds, DecodedRequest, SseEvent, StreamIncomplete
from blackbox_mitm.codecs.common.jsonio import dumps, stream_object
from blackbox_mitm.codecs.gemini import FRAGMENT
from blackbox_mitm.codecs.gemini.grounding import GROUNDING_KEYS
from blackbox_mitm.codecs.gemini.response import encode_response, error_body
from blackbox_mitm.codecs.sse import format_sse

__all__ = ["aggregate_stream", "encode_stream", "encode_stream_error", "is_stream_end"]


def encode_stream(output: Mapping[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> bytes:
    """A neutral ``model_output`` -> ``data:`` chunks as ``streamGenerateContent?alt=sse`` sends them."""
    return stream_body(encode_response(output, request=request, ids=ids, created_ms=created_ms))


def encode_stream_error(message: str) -> bytes:
    """The in-stream error chunk Gemini sends: ``data: {"error": {...}}``."""
    return format_sse([SseEvent(None, dumps(error_body(message, 400, None), spaced=True))])


def _ends(chunk: Any) -> bool:
    if not isinstance(chunk, dict):
        return False
    if chunk.get("error") is not None:
        return True
    feedback = chunk.get("promptFeedback")
    if isinstance(feedback, dict) and feedback.get("blockReason"):
        return True
    candidates = chunk.get("candidates")
    return isinstance(candidates, list) and any(isinstance(c, dict) and c.get("finishReason") for c in candidates)


def is_stream_end(event: SseEvent) -> bool:
    """The first chunk with a ``finishReason``, a ``promptFeedback.blockReason`` or an ``error``."""
    data = event.data
    if '"finishReason"' not in data and '"error"' not in data and '"blockReason"' not in data:
        return False
    try:
        return _ends(json.loads(data))
    except ValueError:
        return False


def aggregate_stream(events: list[SseEvent]) -> dict[str, Any]:
    """Recorded chunks -> the whole GenerateContentResponse (raises ``StreamIncomplete``)."""
    top: dict[str, Any] = {}
    candidates: dict[int, dict[str, Any]] = {}
    for n, event in enumerate(events):
        data = event.data.strip()
        if not data:
            continue
        chunk = stream_object(data, n)
        error = chunk.get("error")
        if error is not None:
            detail = error.get("message") if isinstance(error, dict) else error
            raise StreamIncomplete(
                f"the stream carried an error ({detail}): the call did not complete", error=error if isinstance(error, dict) else None
            )
        for key, value in chunk.items():
            if key != "candidates" and value is not None:
                top[key] = value
        try:
            for candidate in chunk.get("candidates") or []:
                _merge_candidate(candidates, candidate)
        except (AttributeError, TypeError) as exc:
            raise StreamIncomplete(f"stream event {n} is malformed ({exc}): the call did not complete") from exc
        if _ends(chunk):
            return {**top, "candidates": [candidates[i] for i in sorted(candidates)]}
    raise StreamIncomplete("the stream ended before a chunk with a finishReason: the call did not complete")


def _merge_candidate(candidates: dict[int, dict[str, Any]], candidate: dict[str, Any]) -> None:
    index = candidate.get("index", 0)
    if not isinstance(index, int):
        raise TypeError(f"a candidate's index is {index!r}, not a number")
    state = candidates.setdefault(index, {"content": {"role": "model", "parts": []}, "index": index})
    content = candidate.get("content") or {}
    parts: list[dict[str, Any]] = state["content"]["parts"]
    for part in content.get("parts") or []:
        last = parts[-1] if parts else None
        if (
            isinstance(part.get("text"), str)
            and last is not None
            and isinstance(last.get("text"), str)
            and bool(last.get("thought")) == bool(part.get("thought"))
        ):
            last["text"] += part["text"]
            if part.get("thoughtSignature"):  # often on a closing empty-text chunk: it belongs to the merged part
                last["thoughtSignature"] = part["thoughtSignature"]
        else:
            parts.append(dict(part))
    for key, value in candidate.items():
        if key not in ("content", "index") and value is not None:
            state[key] = value


def stream_body(response: dict[str, Any]) -> bytes:
    """A synthesized whole response (one candidate) -> its SSE chunks, ``finishReason`` on the last."""
    candidate = response["candidates"][0]
    head = {k: v for k, v in response.items() if k not in ("candidates", "usageMetadata")}
    pieces: list[list[dict[str, Any]]] = []
    calls: list[dict[str, Any]] = []
    for part in candidate["content"]["parts"]:
        if part.get("thought") is True:
            pieces.append([part])  # a thought whole, in its own chunk
        elif any(k in part for k in ("inlineData", "fileData", "executableCode", "codeExecutionResult")):
            pieces.append([part])  # an answer's image, or code Google ran and its result: whole, in its own chunk, in its place
        elif "text" in part:
            text = part["text"]
            texts = [[{"text": text[i : i + FRAGMENT]}] for i in range(0, len(text), FRAGMENT)] or [[{"text": ""}]]
            if "thoughtSignature" in part:
                texts[-1][0]["thoughtSignature"] = part["thoughtSignature"]
            pieces += texts
        else:
            calls.append(part)
    if calls:
        pieces.append(calls)
    chunks = []
    for k, parts in enumerate(pieces):
        last = k == len(pieces) - 1
        entry: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
        if last:
            entry["finishReason"] = candidate["finishReason"]
        entry["index"] = 0
        if last:  # grounding comes with the last chunk, as Gemini sends it
            entry.update({k: candidate[k] for k in GROUNDING_KEYS if k in candidate})
        chunk: dict[str, Any] = {"candidates": [entry]}
        if last:
            chunk["usageMetadata"] = response["usageMetadata"]
        chunks.append({**chunk, **head})
    return format_sse(SseEvent(None, dumps(c)) for c in chunks)
