"""The Responses API's answer side: neutral model_output -> a Response object or its SSE events, and streams back.

Used by ``openai_responses`` (the registered codec, which re-exports these
functions). Plain Python, no mitmproxy.

* Synthesized ids are our own and derived from the answer, so the same answer
  is the same bytes: ``resp_bb…``, ``msg_bb…``, ``fc_bb<N>`` / ``ctc_bb<N>`` item
  ids and ``call_bb<N>`` call ids (``ids.served_id``, so the agent's echo maps
  back to ``call-N``). Every served response is put in the run's store, so a
  later ``previous_response_id`` naming it is resolved as in the recording.
* The request's own settings (tools, tool_choice, instructions, text, ...) are
  echoed the way the API echoes them; usage is zero.
* A stream is the full sequence the SDKs accumulate: ``response.created``,
  ``response.in_progress``, per output item ``output_item.added`` / content part /
  deltas of ``FRAGMENT`` code points / ``.done`` events / ``output_item.done``, then
  ``response.completed`` (``response.incomplete`` for a length stop), every event
  with an ``event:`` line and an increasing ``sequence_number``.
* ``aggregate_stream`` returns the final event's Response object; when that has
  no ``output`` (as the SDK allows) the items of the ``output_item.done`` events
  stand in. An ``error`` event, ``response.failed``, a missing final event or an
  event type the API does not define make ``StreamIncomplete``: not a step.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson

from blackbox_mitm.cassette.payloads import tool_calls_of
from blackbox_mitm.codecs.base import STOP_LENGTH, STOP_REFUSAL, CallIds, DecodedRequest, SseEvent, StreamIncomplete
from blackbox_mitm.codecs.openai_responses_items import ResponsesRequest, dumps, is_custom, remember
from blackbox_mitm.codecs.sse import format_sse

__all__ = ["aggregate_stream", "encode_response", "encode_stream", "encode_stream_error", "is_stream_end"]

FRAGMENT = 64
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

# Request fields the API echoes in its Response object, and what it says when they were not sent.
_ECHOED: tuple[tuple[str, Any], ...] = (
    ("instructions", None),
    ("max_output_tokens", None),
    ("max_tool_calls", None),
    ("parallel_tool_calls", True),
    ("previous_response_id", None),
    ("prompt_cache_key", None),
    ("reasoning", {"effort": None, "summary": None}),
    ("safety_identifier", None),
    ("store", True),
    ("temperature", 1.0),
    ("text", {"format": {"type": "text"}, "verbosity": "medium"}),
    ("tool_choice", "auto"),
    ("tools", []),
    ("top_logprobs", 0),
    ("top_p", 1.0),
    ("truncation", "disabled"),
    ("user", None),
    ("metadata", {}),
)


def _zero_usage() -> dict[str, Any]:
    return {
        "input_tokens": 0,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": 0,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 0,
    }


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:24]


def _call_item(call: dict[str, Any], kinds: dict[str, bool], ids: CallIds) -> dict[str, Any]:
    """A function_call or custom_tool_call item: custom when the request's tool of that name is, else by the input's kind."""
    call_id, name, tool_input = call.get("toolCallId"), call.get("toolName"), call.get("toolInput")
    if not isinstance(call_id, str) or not isinstance(name, str):
        raise ValueError("a tool call in the model_output has no toolCallId or toolName")
    served = ids.served_id(call_id, "call_")
    suffix = served.removeprefix("call_bb")
    namespace = None
    if "." in name:
        namespace, name = name.rsplit(".", 1)
    item: dict[str, Any]
    if kinds.get(call["toolName"], isinstance(tool_input, str)):
        item = {"id": f"ctc_bb{suffix}", "type": "custom_tool_call", "status": "completed", "call_id": served, "name": name}
        item["input"] = tool_input if isinstance(tool_input, str) else dumps(tool_input)
    else:
        item = {"id": f"fc_bb{suffix}", "type": "function_call", "status": "completed", "arguments": dumps(tool_input)}
        item |= {"call_id": served, "name": name}
    if namespace is not None:
        item["namespace"] = namespace
    return item


def output_items(output: Any, request: DecodedRequest, ids: CallIds, response_id: str) -> tuple[list[dict[str, Any]], bool]:
    """(the Response's output items, whether it stopped at the length limit) for a neutral model_output."""
    if not isinstance(output, dict):
        raise ValueError(f"a model_output must be an object, not {type(output).__name__}")
    kind, stop = output.get("type"), output.get("stop")
    text = output.get("text")
    length = stop == STOP_LENGTH
    status = "incomplete" if length else "completed"
    msg_id = f"msg_bb{_digest(response_id, 'message')}"
    if kind == "final_answer":
        if not isinstance(text, str):
            raise ValueError("a final_answer model_output has no text")
        part: dict[str, Any] = (
            {"type": "refusal", "refusal": text}
            if stop == STOP_REFUSAL
            else {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
        )
        return [{"id": msg_id, "type": "message", "status": status, "content": [part], "role": "assistant"}], length
    if kind not in ("tool_calls", "tool_call"):
        raise ValueError(f"not a model_output: type {kind!r}")
    kinds = {str(t.get("name")): is_custom(t) for t in request.model_input.get("tools") or [] if isinstance(t, dict)}
    items: list[dict[str, Any]] = []
    if isinstance(text, str) and text:
        items.append(
            {
                "id": msg_id,
                "type": "message",
                "status": "completed",
                "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}],
                "role": "assistant",
            }
        )
    calls = tool_calls_of(output)
    if not calls:
        raise ValueError("a tool_calls model_output without calls")
    items += [_call_item(call, kinds, ids) for call in calls]
    return items, length


def _head(request: DecodedRequest, response_id: str, created_ms: int, status: str) -> dict[str, Any]:
    echo = request.echo if isinstance(request, ResponsesRequest) else {}
    head: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": created_ms // 1000,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "model": request.model or "",
        "output": [],
    }
    for key, default in _ECHOED:
        value = echo.get(key)
        head[key] = default if value is None else value
    head["usage"] = None
    return head


def _response_id(output: Any, request: DecodedRequest, created_ms: int) -> str:
    return f"resp_bb{_digest(created_ms, output, len(request.model_input.get('messages') or []), getattr(request, 'previous', None))}"


def encode_response(output: dict[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> dict[str, Any]:
    """A neutral model_output -> a Response object with our ids, the request's settings echoed and zero usage."""
    response_id = _response_id(output, request, created_ms)
    items, length = output_items(output, request, ids, response_id)
    body = _head(request, response_id, created_ms, "incomplete" if length else "completed")
    body["completed_at"] = None if length else created_ms // 1000
    if length:
        body["incomplete_details"] = {"reason": "max_output_tokens"}
    body["output"] = items
    body["usage"] = _zero_usage()
    remember(ids, response_id, request, items, served=True)
    return body


class _Events:
    def __init__(self) -> None:
        self.events: list[SseEvent] = []

    def add(self, kind: str, **fields: Any) -> None:
        data = {"type": kind, "sequence_number": len(self.events), **fields}
        self.events.append(SseEvent(kind, dumps(data)))


def _pieces(text: str) -> list[str]:
    return [text[i : i + FRAGMENT] for i in range(0, len(text), FRAGMENT)]


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
            ev.add("response.content_part.added", **at, part={**part, "text": ""})
            for piece in _pieces(part["text"]):
                ev.add("response.output_text.delta", **at, delta=piece, logprobs=[])
            ev.add("response.output_text.done", **at, text=part["text"], logprobs=[])
        ev.add("response.content_part.done", **at, part=part)
    elif kind == "function_call":
        ev.add("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "arguments": ""})
        for piece in _pieces(item["arguments"]):
            ev.add("response.function_call_arguments.delta", **at, delta=piece)
        ev.add("response.function_call_arguments.done", **at, arguments=item["arguments"], name=item["name"])
    else:
        ev.add("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "input": ""})
        for piece in _pieces(item["input"]):
            ev.add("response.custom_tool_call_input.delta", **at, delta=piece)
        ev.add("response.custom_tool_call_input.done", **at, input=item["input"])
    ev.add("response.output_item.done", output_index=index, item=item)


def encode_stream(output: dict[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> bytes:
    """A neutral model_output -> the Response's whole SSE event sequence (see the module docstring)."""
    final = encode_response(output, request=request, ids=ids, created_ms=created_ms)
    start = _head(request, final["id"], created_ms, "in_progress")
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


def _parse(event: SseEvent, n: int) -> dict[str, Any]:
    try:
        data = json.loads(event.data)
    except ValueError as exc:
        raise StreamIncomplete(f"stream event {n} is not JSON: the call did not complete") from exc
    if not isinstance(data, dict):
        raise StreamIncomplete(f"stream event {n} is not a JSON object: the call did not complete")
    return data


def aggregate_stream(events: list[SseEvent]) -> dict[str, Any]:
    """Recorded Responses events -> the Response object they stand for (for ``decode_response``)."""
    done_items: dict[int, Any] = {}
    for n, event in enumerate(events):
        if not event.data.strip():
            continue
        data = _parse(event, n)
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
