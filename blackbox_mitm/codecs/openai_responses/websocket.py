"""The Responses API over a WebSocket: ``GET /v1/responses`` upgraded, ``response.create`` messages, events as frames.

The WebSocket side of ``openai_responses`` (its ``WEBSOCKET``), satisfying
``websocket_base.WebSocketCodec``. What the API does on a socket (seen with
Codex CLI 0.171, see docs/providers.md):

* the client sends text frames ``{"type": "response.create", ...}`` whose other
  keys are the body of a ``POST /v1/responses`` (without ``stream``: a socket
  always streams); the server answers with the same ``response.*`` event
  objects as over SSE, one per text frame, and one socket carries many turns,
  one at a time;
* ``"generate": false`` asks for no output (Codex's warm-up): the server
  answers ``response.created`` and ``response.completed`` with no output items.
  It is no model call. A later turn may continue it with
  ``previous_response_id``; the warm-up's input is then put in front of the
  turn's own, so the call holds its whole history as over HTTP;
* errors are ``{"type": "error", "status": N, "error": {type, code, message}}``
  frames (what Codex reads as an HTTP error with that status).

Each client turn becomes the equivalent HTTP request body, so the Responses
codec decodes it exactly as a POST: the transport is never compared. Plain
Python: no mitmproxy import.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from blackbox_mitm.codecs.base import SseEvent
from blackbox_mitm.codecs.sse import parse_sse
from blackbox_mitm.codecs.websocket_base import CALL, LOCAL, OTHER, ClientTurn

__all__ = [
    "Socket",
    "accepts",
    "answer_without_call",
    "error_frame",
    "frames",
    "open_socket",
    "read_client",
    "read_server",
]

CREATE = "response.create"
_TERMINAL = ("response.completed", "response.incomplete", "response.failed", "error")
_WARMUP_PREFIX = "resp_bbwarm"


@dataclass(slots=True)
class Socket:
    """One socket's state: the warm-ups it made, by response id, so later turns can continue them."""

    warmups: dict[str, tuple[list[Any], str | None]] = field(default_factory=dict)  # id -> (its input, its previous id)
    pending_warmup: tuple[list[Any], str | None] | None = None  # sent, its response id not yet known
    served: int = 0


def accepts(path: str) -> bool:
    return path.rstrip("/").endswith("/responses")


def open_socket() -> Socket:
    return Socket()


def read_client(socket: Socket, text: str) -> ClientTurn:
    try:
        message = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return ClientTurn(OTHER, reason=f"the message is not JSON ({exc})")
    if not isinstance(message, dict):
        return ClientTurn(OTHER, reason=f"the message is a JSON {type(message).__name__}, not an object")
    kind = message.get("type")
    if kind != CREATE:
        return ClientTurn(OTHER, message=message, reason=f"a {kind!r} message is not a model call (only {CREATE!r} is)")
    body = {k: v for k, v in message.items() if k not in ("type", "generate")}
    body = _continued(socket, body)
    if message.get("generate") is False:
        socket.pending_warmup = (_items(body.get("input")), body.get("previous_response_id"))
        return ClientTurn(LOCAL, message=message)
    body["stream"] = True  # a socket always answers with events
    return ClientTurn(CALL, body=orjson.dumps(body), message=message)


def _items(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    return list(value) if isinstance(value, list) else [value]


def _continued(socket: Socket, body: dict[str, Any]) -> dict[str, Any]:
    """A turn continuing a warm-up gets the warm-up's input in front (a warm-up has no output) and its predecessor."""
    previous = body.get("previous_response_id")
    if not isinstance(previous, str) or previous not in socket.warmups:
        return body
    warm_input, warm_previous = socket.warmups[previous]
    out = dict(body)
    out["input"] = [*warm_input, *_items(body.get("input"))]
    if warm_previous is None:
        out.pop("previous_response_id", None)
    else:
        out["previous_response_id"] = warm_previous
    return out


def read_server(socket: Socket, text: str) -> SseEvent | None:
    try:
        event = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        return None
    kind = event["type"]
    if socket.pending_warmup is not None:
        response = event.get("response")
        if isinstance(response, dict) and isinstance(response.get("id"), str):
            socket.warmups[response["id"]] = socket.pending_warmup
        if kind in _TERMINAL:
            socket.pending_warmup = None
    return SseEvent(kind, text)


def answer_without_call(socket: Socket, message: dict[str, Any]) -> list[str]:
    """A warm-up's answer: created, then completed with no output (the id is ours, and continuable)."""
    response_id = f"{_WARMUP_PREFIX}{socket.served}"
    socket.served += 1
    socket.warmups[response_id] = socket.pending_warmup or ([], None)
    socket.pending_warmup = None
    response: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "model": message.get("model"),
        "output": [],
        "previous_response_id": message.get("previous_response_id"),
        "store": message.get("store", True),
        "usage": None,
    }
    done = {**response, "status": "completed", "usage": _ZERO_USAGE}
    events = [
        {"type": "response.created", "sequence_number": 0, "response": response},
        {"type": "response.completed", "sequence_number": 1, "response": done},
    ]
    return [orjson.dumps(e).decode() for e in events]


_ZERO_USAGE = {
    "input_tokens": 0,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 0,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 0,
}


def frames(sse_body: bytes) -> list[str]:
    """Each SSE event's data (the event object) as one text frame; the ``event:`` name is its ``type`` already."""
    return [ev.data for ev in parse_sse(sse_body) if ev.data]


def error_frame(status: int, body: bytes) -> str:
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if not isinstance(error, dict):
        error = {"type": "invalid_request_error", "code": None, "message": body.decode("utf-8", "replace")}
    return orjson.dumps({"type": "error", "status": status, "error": error}).decode()
