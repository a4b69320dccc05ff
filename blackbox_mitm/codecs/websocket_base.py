"""What a codec's WebSocket companion provides: how a socket's messages map to model calls.

Some provider APIs also speak over a WebSocket: one socket, many turns, the
answers' events as frames. The transport (``proxy/websocket.py`` and the
loopback server ``proxy/ws_replay.py``) is provider-agnostic; it asks the
codec's companion module, the ``WEBSOCKET`` of a codec that is a
``WebSocketCapable``, what each message is:

* a model call, given as the HTTP-equivalent request body, so that the session
  decodes, records, matches and answers it exactly as the same call over HTTP
  (HTTP vs WebSocket is transport, never compared);
* a local message the API answers without a model call (a warm-up), answered
  by the companion itself in a replay;
* anything else (not a call, unreadable): passed on when recording, refused
  with the API's error frame in a replay.

Frames are text; the companion converts the codec's SSE bodies to frames and
the server's frames to ``SseEvent``s for ``aggregate_stream``. A companion may
keep per-socket state (``open_socket``); the transport holds it and hands it
back, never looks inside. Plain Python: no mitmproxy import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from blackbox_mitm.codecs.base import Codec, SseEvent

__all__ = ["CALL", "LOCAL", "OTHER", "ClientTurn", "WebSocketCapable", "WebSocketCodec", "websocket_of"]

CALL: Literal["call"] = "call"
LOCAL: Literal["local"] = "local"
OTHER: Literal["other"] = "other"


@dataclass(slots=True)
class ClientTurn:
    """What one client message is.

    ``kind`` is ``CALL`` (``body`` holds the HTTP-equivalent request), ``LOCAL``
    (``message`` is answered by ``answer_without_call`` in a replay) or ``OTHER``
    (``reason`` says what it is: passed through when recording, refused in a replay).
    """

    kind: Literal["call", "local", "other"]
    body: bytes | None = None
    message: dict[str, Any] | None = None
    reason: str = ""


class WebSocketCodec(Protocol):
    """A codec's WebSocket companion module (its codec points at it with ``WEBSOCKET = module``)."""

    def accepts(self, path: str) -> bool:
        """A WebSocket upgrade to ``path`` (without its query) opens a socket of model calls."""
        ...

    def open_socket(self) -> Any:
        """Fresh per-socket state, handed back to every other function for this socket."""
        ...

    def read_client(self, socket: Any, text: str) -> ClientTurn:
        """A text message from the client: a call, a local message, or something else."""
        ...

    def read_server(self, socket: Any, text: str) -> SseEvent | None:
        """A text frame from the server as the SSE event it stands for (None: not an event)."""
        ...

    def answer_without_call(self, socket: Any, message: dict[str, Any]) -> list[str]:
        """The frames the API answers a ``LOCAL`` message with (a replay has no upstream)."""
        ...

    def frames(self, sse_body: bytes) -> list[str]:
        """An SSE body (the codec's ``encode_stream`` or ``encode_stream_error``) as text frames."""
        ...

    def error_frame(self, status: int, body: bytes) -> str:
        """An HTTP error answer (the codec's ``encode_error`` body) as the API's error frame."""
        ...


@runtime_checkable
class WebSocketCapable(Codec, Protocol):
    """A codec whose API also speaks over a WebSocket: ``WEBSOCKET`` is its companion."""

    @property
    def WEBSOCKET(self) -> WebSocketCodec: ...


def websocket_of(codec: Codec) -> WebSocketCodec | None:
    """The codec's WebSocket companion, None when its API has no socket transport (``WebSocketCapable``)."""
    return codec.WEBSOCKET if isinstance(codec, WebSocketCapable) else None
