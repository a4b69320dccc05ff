"""Chat-completions streams: a model_output as ``chat.completion.chunk`` events, and a recorded stream added up."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from blackbox_mitm.codecs.base import CallIds, DecodedRequest, SseEvent, StreamIncomplete
from blackbox_mitm.codecs.common.jsonio import dumps, stream_object
from blackbox_mitm.codecs.openai_chat import FRAGMENT
from blackbox_mitm.codecs.openai_chat.audio import audio_deltas, finish_audio, merge_audio_delta, served_audio, text_parts
from blackbox_mitm.codecs.openai_chat.fields import filtered_at
from blackbox_mitm.codecs.openai_chat.response import completion_id, message_of, served_logprobs, usage_of
from blackbox_mitm.codecs.sse import format_sse

__all__ = ["aggregate_stream", "encode_stream", "encode_stream_error", "is_stream_end"]


def _pieces(text: str) -> list[str]:
    return [text[i : i + FRAGMENT] for i in range(0, len(text), FRAGMENT)]


def encode_stream(output: Mapping[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> bytes:
    """A neutral model_output -> a ``chat.completion.chunk`` SSE body ending in ``data: [DONE]``."""
    content, refusal, calls, finish = message_of(output, ids)
    head = {
        "id": completion_id(output, created_ms),
        "object": "chat.completion.chunk",
        "created": created_ms // 1000,
        "model": request.model or "",
    }
    usage: dict[str, Any] = {"usage": None} if request.include_usage else {}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None, logprobs: Any = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish_reason}], **usage}

    audio, spoken_text = text_parts(output)
    if audio is not None:  # the content is only what the model wrote beside the audio; the transcript comes in delta.audio
        content = spoken_text
    # "" in the first delta, not null, is what makes an accumulator's content a string.
    chunks = [chunk({"role": "assistant", "content": None if content is None else "", "refusal": None if refusal is None else ""})]
    served = served_logprobs(output, refusal is not None)
    key = "refusal" if refusal is not None else "content"
    for piece, logprobs in _deltas((refusal if refusal is not None else content) or "", served[key] if served else []):
        chunks.append(chunk({key: piece}, logprobs={"content": None, "refusal": None, key: logprobs} if logprobs else None))
    if audio is not None:
        chunks += [chunk(delta) for delta in audio_deltas(served_audio(audio, ids, created_ms), FRAGMENT)]
    for k, call in enumerate(calls):
        fn = call["function"]
        # id, type and name exactly once: accumulators concatenate every string they see again.
        chunks.append(
            chunk({"tool_calls": [{"index": k, "id": call["id"], "type": "function", "function": {"name": fn["name"], "arguments": ""}}]})
        )
        chunks += [chunk({"tool_calls": [{"index": k, "function": {"arguments": piece}}]}) for piece in _pieces(fn["arguments"])]
    chunks.append(chunk({}, finish))
    if request.include_usage:
        chunks.append({**head, "choices": [], "usage": usage_of(output)})
    return format_sse([*(SseEvent(None, dumps(c)) for c in chunks), SseEvent(None, "[DONE]")])


def _deltas(text: str, logprobs: list[Any]) -> list[tuple[str, list[Any]]]:
    """The text's deltas: one per token with its logprob when the recorded tokens spell the text, else pieces (logprobs on the first)."""
    tokens = [lp.get("token") if isinstance(lp, dict) else None for lp in logprobs]
    if logprobs and all(isinstance(t, str) for t in tokens) and "".join(str(t) for t in tokens) == text:
        return [(str(t), [lp]) for t, lp in zip(tokens, logprobs, strict=True)]
    pieces = _pieces(text) or ([""] if logprobs else [])
    return [(piece, logprobs if k == 0 else []) for k, piece in enumerate(pieces)]


def encode_stream_error(message: str) -> bytes:
    """The in-stream error the SDK raises as an ``APIError``: a ``data:`` line carrying ``{"error": …}``."""
    error = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": "blackbox"}}
    return format_sse([SseEvent(None, dumps(error))])


def _new_choice(index: int) -> dict[str, Any]:
    return {
        "index": index,
        "message": {"role": "assistant", "content": None, "refusal": None},
        "calls": {},
        "logprobs": None,
        "finish_reason": None,
    }


def _merge_choice(state: dict[str, Any], choice: dict[str, Any]) -> None:
    delta = choice.get("delta") or {}
    message = state["message"]
    for key in ("content", "refusal"):
        if isinstance(delta.get(key), str):
            message[key] = (message[key] or "") + delta[key]
    if delta.get("audio") is not None:
        merge_audio_delta(message, delta["audio"])
    if delta.get("function_call") is not None:  # kept only so that decode_response refuses it
        message.setdefault("function_call", delta["function_call"])
    if delta.get("annotations"):
        message.setdefault("annotations", []).extend(delta["annotations"])
    if filtered_at(choice.get("content_filter_results"), ""):  # Azure: the first flagging one is kept (decode_response refuses it)
        state.setdefault("content_filter_results", choice["content_filter_results"])
    for fragment in delta.get("tool_calls") or []:
        entry = state["calls"].setdefault(fragment.get("index", 0), {"id": None, "type": None, "function": {"name": None, "arguments": ""}})
        for key in ("id", "type"):
            if entry[key] is None and fragment.get(key):
                entry[key] = fragment[key]
        fn = fragment.get("function") or {}
        if entry["function"]["name"] is None and fn.get("name"):
            entry["function"]["name"] = fn["name"]
        if isinstance(fn.get("arguments"), str):
            entry["function"]["arguments"] += fn["arguments"]
    logprobs = choice.get("logprobs")
    if logprobs is not None:
        merged = state["logprobs"] = state["logprobs"] or {}
        for key, value in logprobs.items() if isinstance(logprobs, dict) else [("content", logprobs)]:
            if isinstance(value, list):
                merged[key] = (merged.get(key) or []) + value
            else:
                merged.setdefault(key, value)
    if choice.get("finish_reason"):
        state["finish_reason"] = choice["finish_reason"]


def is_stream_end(event: SseEvent) -> bool:
    """``data: [DONE]``, or an error chunk: no later event counts (``aggregate_stream`` names the error)."""
    data = event.data.strip()
    if event.event == "error" or data == "[DONE]":
        return True
    if not (data.startswith("{") and '"error"' in data):
        return False
    try:
        return isinstance(orjson.loads(data).get("error"), dict)
    except (orjson.JSONDecodeError, AttributeError):
        return False


def aggregate_stream(events: list[SseEvent]) -> dict[str, Any]:
    """A recorded chunk stream -> the equivalent non-streaming chat.completion object."""
    head: dict[str, Any] = {}
    states: dict[int, dict[str, Any]] = {}
    usage: Any = None
    done = False
    for n, event in enumerate(events):
        data = event.data.strip()
        if data.startswith("[DONE]"):
            done = True
            break
        if not data:
            continue
        chunk = _chunk(n, event, data)
        if not head:
            head = {key: chunk.get(key) for key in ("id", "created", "model")}
        if chunk.get("usage") is not None:
            usage = chunk["usage"]
        if chunk.get("prompt_filter_results"):  # Azure: kept so that decode_response refuses what flags something
            head["prompt_filter_results"] = [*head.get("prompt_filter_results", []), *chunk["prompt_filter_results"]]
        try:
            for choice in chunk.get("choices") or []:
                index = choice.get("index", 0)
                _merge_choice(states.setdefault(index, _new_choice(index)), choice)
        except (AttributeError, TypeError, ValueError) as exc:  # ValueError: a delta.audio.data piece that is not base64
            raise StreamIncomplete(f"stream event {n} is malformed ({exc}): the call did not complete") from exc
    if not done:
        raise StreamIncomplete("the stream ended without data: [DONE]: the call did not complete")
    if not states or any(s["finish_reason"] is None for s in states.values()):
        raise StreamIncomplete("the stream has no finish_reason: the call did not complete")
    return {**head, "object": "chat.completion", "choices": [_finished_choice(states[i]) for i in sorted(states)], "usage": usage}


def _chunk(n: int, event: SseEvent, data: str) -> dict[str, Any]:
    """Stream event ``n`` as a JSON object; ``StreamIncomplete`` when it is not one or carries an error."""
    chunk = stream_object(data, n)
    if event.event == "error" or chunk.get("error"):
        error = chunk.get("error") if isinstance(chunk.get("error"), dict) else None
        detail = error.get("message") if error else data
        raise StreamIncomplete(f"the stream carried an error ({detail}): the call did not complete", error=error)
    return chunk


def _finished_choice(state: dict[str, Any]) -> dict[str, Any]:
    """One choice's merged deltas as a non-streaming choice."""
    message = state["message"]
    finish_audio(message)
    if state["calls"]:
        message["tool_calls"] = [{**c, "type": c["type"] or "function"} for _, c in sorted(state["calls"].items())]
    choice = {"index": state["index"], "message": message, "logprobs": state["logprobs"], "finish_reason": state["finish_reason"]}
    if "content_filter_results" in state:
        choice["content_filter_results"] = state["content_filter_results"]
    return choice
