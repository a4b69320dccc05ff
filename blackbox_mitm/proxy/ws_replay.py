"""Replayed WebSockets: a loopback WebSocket server that answers a socket's messages from the session.

mitmproxy relays a WebSocket only between a client and an upstream server: an
addon cannot accept the upgrade itself. So when no message on a socket may go
upstream (a replay, a fork answered from a script), the proxy points the
upgrade at this server on 127.0.0.1 (as ``pacing.py`` does for paced streams)
and mitmproxy relays between the agent and it. Nothing leaves the machine.

Each upgrade is registered once, under a token in the path, with what answers
it: the session, the codec and its WebSocket companion, the original path and
headers. Every client message is turned by the companion into the equivalent
HTTP call (``answer_message``), answered by ``Session.on_request`` exactly as
that call over HTTP, and its events sent back as frames, one turn at a time;
``delay_ms`` paces them like a paced SSE replay. A turn answering a call that
overlapped others waits for its release (``session/release.py``), as an HTTP
answer does in the pacer.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from blackbox_mitm.codecs.base import Codec
from blackbox_mitm.codecs.websocket_base import CALL, LOCAL, WebSocketCodec
from blackbox_mitm.session.engine import Answer, Forward, ModelRequest, Session

if TYPE_CHECKING:  # websockets is imported when the first socket is served: a run without one never loads it
    from websockets.asyncio.server import Server, ServerConnection
    from websockets.http11 import Request, Response

__all__ = ["PATH_PREFIX", "SocketServer", "SocketTarget", "answer_message"]

log = logging.getLogger(__name__)

PATH_PREFIX = "/blackbox-ws/"
_MAX_MESSAGE = 256 * 1024 * 1024  # an agent's long history in one message; the loopback hop never limits it


@dataclass(slots=True)
class SocketTarget:
    """What answers one replayed socket."""

    session: Session
    codec: Codec
    ws: WebSocketCodec
    path: str  # the upgrade's original path, with its query
    headers: dict[str, str]  # the upgrade's headers, lower-case names


def answer_message(target: SocketTarget, socket: Any, text: str) -> list[str]:
    """The frames that answer one client text message (blocking: the session may record)."""
    ws = target.ws
    turn = ws.read_client(socket, text)
    if turn.kind == LOCAL and turn.message is not None:
        return ws.answer_without_call(socket, turn.message)
    if turn.kind != CALL or turn.body is None:
        message = f"blackbox replay: {turn.reason or 'the message is not a model call'}; nothing was sent upstream"
        target.session.note(f"refused a WebSocket message: {turn.reason}")
        return [_error(target, message, 400)]
    action = target.session.on_request(
        ModelRequest(path=target.path, headers=target.headers, body=turn.body, method="POST", codec=target.codec)
    )
    if isinstance(action, Forward):  # never: only sessions that answer every call locally are served here
        target.session.on_call_failed(action.ticket, "a replayed socket cannot forward a call upstream", streamed=False)
        return [_error(target, "blackbox: this replayed socket cannot forward a model call upstream", 500)]
    if action.hold is not None:
        action.hold.wait()  # a call that overlapped others: its turn's frames go in the recorded completion order
    return _frames_of(target, action)


def _frames_of(target: SocketTarget, answer: Answer) -> list[str]:
    if answer.status >= 400:
        return [target.ws.error_frame(answer.status, answer.body)]
    if not answer.stream:
        return [_error(target, "blackbox: the replayed answer is not a stream, so it cannot be sent as frames", 500)]
    return target.ws.frames(answer.body)


def _error(target: SocketTarget, message: str, status: int) -> str:
    err = target.codec.encode_error(message, status=status)
    return target.ws.error_frame(err.status, err.body)


class SocketServer:
    """The loopback WebSocket server, on a thread and an event loop of its own, started on first use."""

    def __init__(self, delay_ms: int = 0) -> None:
        self.delay_ms = delay_ms
        self._targets: dict[str, SocketTarget] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self._port = 0

    @property
    def port(self) -> int:
        return self._port

    def start(self) -> SocketServer:
        with self._lock:
            if self._thread is not None:
                return self
            ready = threading.Event()
            failure: list[BaseException] = []
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._run, args=(ready, failure), name="blackbox-ws-replay", daemon=True)
            self._thread.start()
        ready.wait(30)
        if failure:
            raise failure[0]
        return self

    def _run(self, ready: threading.Event, failure: list[BaseException]) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        try:
            self._server = loop.run_until_complete(self._listen())
            self._port = int(self._server.sockets[0].getsockname()[1])
        except BaseException as exc:  # surfaced to start()
            failure.append(exc)
            ready.set()
            return
        ready.set()
        loop.run_forever()
        loop.close()

    async def _listen(self) -> Server:
        from websockets.asyncio.server import serve

        return await serve(
            self._handle,
            "127.0.0.1",
            0,
            process_request=self._check,
            max_size=_MAX_MESSAGE,
            ping_interval=None,  # the agent's side of the hop is mitmproxy's; no keep-alive needed on loopback
            compression=None,  # no permessage-deflate: on loopback it only costs (mitmproxy would inflate and deflate again)
            server_header=None,
        )

    def register(self, target: SocketTarget) -> str:
        """Keep ``target`` for one upgrade; returns the URL the upgrade is to be sent to."""
        self.start()
        token = secrets.token_hex(12)
        with self._lock:
            self._targets[token] = target
        return f"http://127.0.0.1:{self.port}{PATH_PREFIX}{token}"

    def _token(self, path: str) -> str:
        return path.split("?", 1)[0].removeprefix(PATH_PREFIX)

    def _check(self, connection: ServerConnection, request: Request) -> Response | None:
        with self._lock:
            known = self._token(request.path) in self._targets
        if not known:
            return connection.respond(HTTPStatus.NOT_FOUND, "blackbox: no replayed socket is registered here\n")
        return None

    async def _handle(self, connection: ServerConnection) -> None:
        with self._lock:
            target = self._targets.pop(self._token(connection.request.path if connection.request else ""), None)
        if target is None:
            await connection.close(1008, "no replayed socket is registered here")
            return
        socket = target.ws.open_socket()
        async for data in connection:  # one turn at a time, as the API serves a socket
            if isinstance(data, bytes):
                frames = [_error(target, "blackbox replay: a binary message is not a model call", 400)]
            else:
                try:
                    frames = await asyncio.to_thread(answer_message, target, socket, data)
                except Exception as exc:  # a bug must reach the agent as the API's error, not as a dead socket
                    log.exception("blackbox: a replayed socket's message could not be answered")
                    frames = [_error(target, f"blackbox could not answer this message ({type(exc).__name__}: {exc})", 500)]
            for i, frame in enumerate(frames):
                if i and self.delay_ms > 0:
                    await asyncio.sleep(self.delay_ms / 1000)
                await connection.send(frame)

    def stop(self) -> None:
        loop, server, thread = self._loop, self._server, self._thread
        if loop is None or thread is None:
            return
        if server is not None:

            async def close() -> None:
                server.close()
                await server.wait_closed()

            try:
                asyncio.run_coroutine_threadsafe(close(), loop).result(timeout=10)
            except Exception as exc:  # a hung connection must not hang the proxy's shutdown
                log.warning("blackbox: the replayed-socket server did not close cleanly: %s", exc)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        self._loop = self._server = self._thread = None
