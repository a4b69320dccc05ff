"""Model calls over WebSockets: mitmproxy's websocket hooks, for whichever codec has a WebSocket companion.

Provider-agnostic: the codec's companion (``codecs/websocket_base.WebSocketCodec``)
says what each message is; this module only moves frames. The addon calls:

* ``upgrade`` from its request hook, for every request. A WebSocket upgrade to a
  path whose codec has a companion is taken here, by what the session may do:

  - recording (every call goes upstream): the socket goes upstream as a socket
    (a continued response may exist only on the socket that made it); each
    ``response.create``-like call is one model call, its frames from the server
    aggregated like an SSE stream, and its final frame held until the call is
    recorded, as the SSE tee holds the final event;
  - answering every call locally (a replay, a fork with a script): the upgrade
    goes to the loopback server ``ws_replay.SocketServer``, which answers each
    message from the session; no upstream;
  - neither (a fork that goes live after a replayed prefix): the upgrade is
    answered 426, as the API answers when it lacks the transport, and the
    client falls back to HTTPS, where every call is handled.

* ``message`` from ``websocket_message`` and ``end`` from ``websocket_end``.

A socket closed before a call's final frame records nothing for that call; the
session notes why.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mitmproxy import ctx, http

from blackbox_mitm.codecs.base import Codec, SseEvent
from blackbox_mitm.codecs.websocket_base import CALL, LOCAL, WebSocketCodec, websocket_of
from blackbox_mitm.proxy.flows import lower_headers
from blackbox_mitm.proxy.ws_replay import SocketServer, SocketTarget
from blackbox_mitm.session.engine import Answer, ModelRequest, Session, Ticket

__all__ = ["WebSocketTransport", "is_upgrade", "socket_mode"]

log = logging.getLogger(__name__)

_RECORD_KEY = "blackbox.ws.record"
_LOOPBACK_KEY = "blackbox.ws.loopback"

RECORD, SERVE, FALL_BACK = "record", "serve", "fall-back"


def is_upgrade(request: http.Request) -> bool:
    return request.method == "GET" and "websocket" in request.headers.get("upgrade", "").lower()


def socket_mode(session: Session) -> str:
    """How a model socket is handled: every call upstream, every call local, or neither (HTTPS only)."""
    if session.mode == "record":
        return RECORD
    if session.plan.answers_locally:
        return SERVE
    return FALL_BACK


@dataclass(slots=True)
class _Turn:
    ticket: Ticket | None  # None: a local message (a warm-up) whose answer goes unrecorded
    events: list[SseEvent] = field(default_factory=list)


@dataclass(slots=True)
class _RecordedSocket:
    codec: Codec
    ws: WebSocketCodec
    state: Any
    path: str
    headers: dict[str, str]
    turns: deque[_Turn] = field(default_factory=deque)  # awaiting their answers, in order


class WebSocketTransport:
    """The addon's WebSocket half (one per addon)."""

    def __init__(self, delay_ms: int = 0, *, inject: Callable[[http.HTTPFlow, str], None] | None = None) -> None:
        self.delay_ms = delay_ms
        self._inject = inject or _inject_to_client
        self._server: SocketServer | None = None

    # -- the upgrade ------------------------------------------------------------------

    @property
    def local_upstream(self) -> tuple[str, int] | None:
        """The loopback server replayed sockets are sent to (an offline replay lets the proxy reach it), once started."""
        return ("127.0.0.1", self._server.port) if self._server is not None and self._server.port else None

    def upgrade(self, flow: http.HTTPFlow, session: Session, codec: Codec | None, *, delay_ms: int | None = None) -> bool:
        """Take a model socket's upgrade (True), or leave the request to the HTTP path (False).

        ``codec``: the one the addon chose for the upgrade's path (its calls are POSTs to it). ``delay_ms`` paces a
        replayed socket's frames (``--stream-delay-ms``).
        """
        if delay_ms is not None:
            self.delay_ms = delay_ms
        if not is_upgrade(flow.request):
            return False
        path = flow.request.path
        ws = websocket_of(codec) if codec is not None else None
        if codec is None or ws is None or not ws.accepts(path.split("?", 1)[0]):
            return False
        mode = socket_mode(session)
        headers = lower_headers(flow.request.headers)
        if mode == RECORD:
            flow.metadata[_RECORD_KEY] = _RecordedSocket(codec, ws, ws.open_socket(), path, headers)
            log.info("blackbox: recording a model socket %s", path)
        elif mode == SERVE:
            if self._server is None:
                self._server = SocketServer(self.delay_ms)
            self._server.delay_ms = self.delay_ms
            flow.request.url = self._server.register(SocketTarget(session, codec, ws, path, headers))
            flow.metadata[_LOOPBACK_KEY] = True
            log.info("blackbox: answering a model socket %s from the recording", path)
        else:
            message = (
                "blackbox: this run cannot answer model calls over a WebSocket (its calls go partly to the recording, "
                "partly upstream); use HTTPS"
            )
            err = codec.encode_error(message, status=426)
            flow.response = http.Response.make(426, err.body, {**err.headers, "upgrade": "websocket"})
            session.note(f"answered 426 to a WebSocket upgrade {path}: the client falls back to HTTPS")
        return True

    # -- messages -----------------------------------------------------------------------

    async def message(self, flow: http.HTTPFlow, session: Session) -> None:
        sock = flow.metadata.get(_RECORD_KEY)
        if sock is None or flow.websocket is None or not flow.websocket.messages:
            return
        msg = flow.websocket.messages[-1]
        if msg.injected or not msg.is_text:
            return
        if msg.from_client:
            self._from_client(flow, sock, session, msg)
        else:
            await self._from_server(flow, sock, session, msg)

    def _from_client(self, flow: http.HTTPFlow, sock: _RecordedSocket, session: Session, msg: Any) -> None:
        turn = sock.ws.read_client(sock.state, msg.text)
        if turn.kind == LOCAL:
            sock.turns.append(_Turn(None))
            return
        if turn.kind != CALL or turn.body is None:
            session.note(f"passed through a WebSocket message that is not a model call (not recorded): {turn.reason}")
            return
        action = session.on_request(ModelRequest(path=sock.path, headers=sock.headers, body=turn.body, method="POST", codec=sock.codec))
        if isinstance(action, Answer):  # refused (or unreadable): the agent gets the API's error frame, upstream nothing
            msg.drop()
            self._send(flow, [sock.ws.error_frame(action.status, action.body)])
            return
        if action.body is not None:  # a fork's rewritten request: never on a recorded socket (forks fall back to HTTPS)
            session.on_call_failed(action.ticket, "a rewritten request cannot be sent on a recorded socket", streamed=False)
            msg.drop()
            err = sock.codec.encode_error("blackbox: a rewritten request cannot be sent on this socket; use HTTPS", status=500)
            self._send(flow, [sock.ws.error_frame(err.status, err.body)])
            return
        sock.turns.append(_Turn(action.ticket))

    async def _from_server(self, flow: http.HTTPFlow, sock: _RecordedSocket, session: Session, msg: Any) -> None:
        event = sock.ws.read_server(sock.state, msg.text)
        if event is None or not sock.turns:
            return
        turn = sock.turns[0]
        turn.events.append(event)
        if not sock.codec.is_stream_end(event):
            return
        sock.turns.popleft()
        if turn.ticket is None:
            return
        # The final frame waits in this hook until the call is durable (or refused): the session's one entry for an answer.
        instead = await session.take_response(turn.ticket, 200, turn.events).settle_async()
        if instead is not None:
            frames = sock.ws.frames(instead.body)
            if frames:
                msg.text = frames[0]
                self._send(flow, frames[1:])

    def _send(self, flow: http.HTTPFlow, frames: list[str]) -> None:
        for frame in frames:
            self._inject(flow, frame)

    def end(self, flow: http.HTTPFlow, session: Session) -> None:
        sock = flow.metadata.pop(_RECORD_KEY, None)
        if sock is None:
            return
        ws = flow.websocket
        how = "the socket closed"
        if ws is not None and ws.close_code is not None:
            who = "the client" if ws.closed_by_client else "the server"
            how = f"{who} closed the socket (code {ws.close_code}{': ' + ws.close_reason if ws.close_reason else ''})"
        for turn in sock.turns:
            if turn.ticket is not None:
                session.on_call_failed(turn.ticket, f"{how} before the answer's final frame")
        sock.turns.clear()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None


def _inject_to_client(flow: http.HTTPFlow, frame: str) -> None:
    ctx.master.commands.call("inject.websocket", flow, True, frame.encode(), True)
