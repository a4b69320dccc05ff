"""Responses streams: a model_output as the API's whole SSE event sequence, and recorded events added up.

* A stream is the full sequence the SDKs accumulate: ``response.created``,
  ``response.in_progress``, per output item ``output_item.added`` / content part /
  deltas of ``FRAGMENT`` code points / ``.done`` events / ``output_item.done``, then
  ``response.completed`` (``response.incomplete`` for a length stop), every event
  with an ``event:`` line and an increasing ``sequence_number``. Text recorded with
  ``logprobs`` whose tokens spell it streams one delta per token, each with its
  logprob, as the API streams it; otherwise the logprobs are on the ``.done`` event.
* ``aggregate_stream`` returns the final event's Response object; when that has
  no ``output`` (as the SDK allows) the items of the ``output_item.done`` events
  stand in. An ``error`` event, ``response.failed``, a missing final event or an
  event type the API does not define make ``StreamIncomplete``: not a step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from blackbox_mitm.codecs.base import CallIds, DecodedRequest, SseEvent, StreamIncomplete
from blackbox_mitm.codecs.common.jsonio import dumps, stream_object
from blackbox_mitm.codecs.openai_responses import FRAGMENT
from blackbox_mitm.codecs.openai_responses.hosted_tools import SERVED_ITEMS
from blackbox_mitm.codecs.openai_responses.response import encode_response, response_head
from blackbox_mitm.codecs.sse import format_sse

__all__ = ["aggregate_stream", "encode_stream", "encode_stream_error", "is_stream_end"]

FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed", "error"})
_PROGRESS = (
    "audio.delta audio.done audio.transcript.delta audio.transcript.done code_interpreter_call.completed "
    "code_interpreter_call.in_progress code_interpreter_call.interpreting code_interpreter_call_code.delta "
    "code_interpreter_call_code.done compaction.compacting content_part.added content_part.done created "
    "custom_tool_call_input.delta custom_tool_call_input.done file_search_call.completed file_search_call.in_progress "
    "file_search_call.searching function_call_arguments.delta function_call_arguments.done image_generation_call.completed "
    "image_generation_call.generating image_generation_call.in_progress image_generation_call.partial_image in_progress "
    "mcp_call.completed mcp_call.failed mcp_call.in_progress mcp_call_arguments.delta mcp_call_arguments.done "
    "mcp_list_tools.completed mcp_list_tools.failed mcp_list_tools.in_progress output_item.added output_item.done "
    "output_text.annotation.added output_text.delta output_text.done queued reasoning_summary_part.added "
    "reasoning_summary_part.done reasoning_summary_text.delta reasoning_summary_text.done reasoning_text.delta "
    "reasoning_text.done refusal.delta refusal.done shell_call_command.added shell_call_command.delta "
    "shell_call_command.done shell_call_output_content.delta shell_call_output_content.done steer.accepted "
    "steer.failed steer.pending web_search_call.completed web_search_call.in_progress web_search_call.searching"
)
KNOWN_EVENTS = frozenset({f"response.{name}" for name in _PROGRESS.split()} | FINAL_EVENTS | {"keepalive"})


class _Events:
    def __init__(self) -> None:
        self.events: list[SseEvent] = []

    def add(self, kind: str, **fields: Any) -> None:
        data = {"type": kind, "sequence_number": len(self.events), **fields}
        self.events.append(SseEvent(kind, dumps(data)))


def _pieces(text: str) -> list[str]:
    return [text[i : i + FRAGMENT] for i in range(0, len(text), FRAGMENT)]


def _text_deltas(text: str, logprobs: list[Any]) -> list[tuple[str, list[Any]]]:
    """The text's deltas: one per token with its logprob when the recorded tokens spell the text, else pieces without."""
    tokens = [lp.get("token") if isinstance(lp, dict) else None for lp in logprobs]
    if logprobs and all(isinstance(t, str) for t in tokens) and "".join(tokens) == text:  # type: ignore[arg-type]
        return [(str(t), [lp]) for t, lp in zip(tokens, logprobs, strict=True)]
    return [(piece, []) for piece in _pieces(text)]


def _stream_item(ev: _Events, index: int, item: dict[str, Any]) -> None:
    at: dict[str, Any] = {"item_id": item["id"], "output_index": index}
    kind = item["type"]
    if kind == "message":
        ev.add("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "content": []})
        part = item["content"][0]
        at["content_index"] = 0
        if part["type"] == "refusal":
            ev.add("response.content_part.added", **at, part={"type": "refusal", "refusal": ""})
            for piece in _pieces(part["refusal"]):
                ev.add("response.refusal.delta", **at, delta=piece)
            ev.add("response.refusal.done", **at, refusal=part["refusal"])
        else:
            ev.add("response.content_part.added", **at, part={**part, "text": "", "annotations": [], "logprobs": []})
            for n, annotation in enumerate(part.get("annotations") or []):
                ev.add("response.output_text.annotation.added", **at, annotation_index=n, annotation=annotation)
            for piece, logprobs in _text_deltas(part["text"], part.get("logprobs") or []):
                ev.add("response.output_text.delta", **at, delta=piece, logprobs=logprobs)
            ev.add("response.output_text.done", **at, text=part["text"], logprobs=part.get("logprobs") or [])
        ev.add("response.content_part.done", **at, part=part)
    elif kind == "reasoning":
        ev.add("response.output_item.added", output_index=index, item={**item, "summary": []})
        for n, part in enumerate(item["summary"]):
            at["summary_index"] = n
            ev.add("response.reasoning_summary_part.added", **at, part={**part, "text": ""})
            ev.add("response.reasoning_summary_text.delta", **at, delta=part["text"])
            ev.add("response.reasoning_summary_text.done", **at, text=part["text"])
            ev.add("response.reasoning_summary_part.done", **at, part=part)
    elif kind == "compaction":
        ev.add("response.output_item.added", output_index=index, item=item)
    elif kind == "function_call":
        ev.add("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "arguments": ""})
        for piece in _pieces(item["arguments"]):
            ev.add("response.function_call_arguments.delta", **at, delta=piece)
        ev.add("response.function_call_arguments.done", **at, arguments=item["arguments"], name=item["name"])
    elif kind in SERVED_ITEMS or kind in (
        "computer_call",
        "mcp_approval_request",
    ):  # a hosted tool's or computer call: whole in its added and done events
        ev.add("response.output_item.added", output_index=index, item={**item, "status": "in_progress"})
    else:
        ev.add("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "input": ""})
        for piece in _pieces(item["input"]):
            ev.add("response.custom_tool_call_input.delta", **at, delta=piece)
        ev.add("response.custom_tool_call_input.done", **at, input=item["input"])
    ev.add("response.output_item.done", output_index=index, item=item)


def encode_stream(output: Mapping[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> bytes:
    """A neutral model_output -> the Response's whole SSE event sequence (see the module docstring)."""
    final = encode_response(output, request=request, ids=ids, created_ms=created_ms)
    start = response_head(request, final["id"], created_ms, "in_progress")
    ev = _Events()
    ev.add("response.created", response=start)
    ev.add("response.in_progress", response=start)
    for index, item in enumerate(final["output"]):
        _stream_item(ev, index, item)
    ev.add("response.incomplete" if final["status"] == "incomplete" else "response.completed", response=final)
    return format_sse(ev.events)


def encode_stream_error(message: str) -> bytes:
    """The API's in-stream ``error`` event; its nested ``error`` makes the Python SDK raise ``APIError``."""
    error = {"type": "invalid_request_error", "code": "blackbox", "message": message, "param": None}
    data = {"type": "error", "sequence_number": 0, "code": "blackbox", "message": message, "param": None, "error": error}
    return format_sse([SseEvent("error", dumps(data))])


# --- recorded streams ----------------------------------------------------------------


def _event_type(event: SseEvent) -> str | None:
    if event.event:
        return event.event
    try:
        data = orjson.loads(event.data)
    except orjson.JSONDecodeError:
        return None
    kind = data.get("type") if isinstance(data, dict) else None
    return kind if isinstance(kind, str) else None


def is_stream_end(event: SseEvent) -> bool:
    """``response.completed`` / ``.incomplete`` / ``.failed`` or ``error``: no later event counts."""
    return _event_type(event) in FINAL_EVENTS


def aggregate_stream(events: list[SseEvent]) -> dict[str, Any]:
    """Recorded Responses events -> the Response object they stand for (for ``decode_response``)."""
    done_items: dict[int, Any] = {}
    for n, event in enumerate(events):
        if not event.data.strip():
            continue
        data = stream_object(event.data, n)
        kind = data.get("type") if isinstance(data.get("type"), str) else event.event
        if kind not in KNOWN_EVENTS:
            raise StreamIncomplete(f"stream event {n} has type {kind!r}, which the Responses API does not define: not recorded")
        if kind == "error":
            nested = data.get("error")
            error: dict[str, Any] = nested if isinstance(nested, dict) else data
            raise StreamIncomplete(f"the stream carried an error ({error.get('message')}): the call did not complete", error=error)
        if kind == "response.output_item.done" and isinstance(data.get("output_index"), int):
            done_items[data["output_index"]] = data.get("item")
        if kind in FINAL_EVENTS:
            response = data.get("response")
            if not isinstance(response, dict):
                raise StreamIncomplete(f"stream event {n} ({kind}) has no response object: the call did not complete")
            if kind == "response.failed":
                failure = response.get("error") if isinstance(response.get("error"), dict) else None
                detail = failure.get("message") if failure else "no error given"
                raise StreamIncomplete(f"the response failed ({detail}): the call did not complete", error=failure)
            if response.get("output") is None:
                response = {**response, "output": [done_items[k] for k in sorted(done_items)]}
            return response
    raise StreamIncomplete("the stream ended before response.completed: the call did not complete")
