"""A recorded long-lived SSE stream played back as a stream: each event when the agent has asked for it.

A stream that was still open when the recording ended (the agent left it open:
MCP's ``GET /sse``, a streamable-HTTP client's standalone ``GET`` stream, a
``subscriptions/listen`` POST) must not end at replay either: the client would
open it again, and again. And MCP's older HTTP+SSE transport answers ``POST /messages`` with ``202`` and sends
the JSON-RPC response as an event on a ``GET /sse`` stream that stays open for
the whole run. Served whole at once, the answers would arrive before the
requests they answer. Here the stream is held open on a loopback server (the
offline guard lets the flow in, as the pacer's): an event that carries a
JSON-RPC response with id N is sent once a request with id N has been answered
from the recording (``release``); every other event (the ``endpoint`` event, a
notification) as soon as the events before it were sent. The connection stays
open until the client closes it or the proxy stops.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["SseHold", "jsonrpc_ids", "sse_events"]


def sse_events(body: bytes) -> list[bytes]:
    """The events of an SSE body, each with its blank line."""
    text = body.replace(b"\r\n", b"\n")
    return [block + b"\n\n" for block in text.split(b"\n\n") if block.strip()]


def _response_id(event: bytes) -> Any:
    data = b"\n".join(line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:"))
    try:
        message = json.loads(data)
    except ValueError:
        return None
    if isinstance(message, dict) and "id" in message and ("result" in message or "error" in message):
        return message["id"]
    return None


def jsonrpc_ids(body: bytes) -> set[str]:
    """The ids of the JSON-RPC requests in a POST body (one message or a batch)."""
    try:
        message = json.loads(body)
    except ValueError:
        return set()
    messages = message if isinstance(message, list) else [message]
    return {json.dumps(m["id"]) for m in messages if isinstance(m, dict) and "id" in m and "method" in m}


class _Stream:
    def __init__(self, status: int, headers: dict[str, str], events: list[bytes]) -> None:
        self.status = status
        self.headers = headers
        self.events = events
        self.gates = [None if (i := _response_id(e)) is None else json.dumps(i) for e in events]
        self.sent = 0


class SseHold:
    """The loopback server holding replayed SSE streams open; thread-safe."""

    def __init__(self) -> None:
        self._streams: dict[int, _Stream] = {}
        self._asked: set[str] = set()
        self._cond = threading.Condition()
        self._stopping = False
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        threading.Thread(target=self._server.serve_forever, name="blackbox-sse-hold", daemon=True).start()

    def register(self, status: int, headers: dict[str, str], body: bytes) -> str:
        """The URL the flow is sent to, for a recorded stream."""
        with self._cond:
            key = len(self._streams)
            self._streams[key] = _Stream(status, {k: v for k, v in headers.items() if k != "content-length"}, sse_events(body))
        return f"http://127.0.0.1:{self.port}/stream/{key}"

    def release(self, request_body: bytes) -> None:
        """A request was answered from the recording: the events answering its ids may go."""
        ids = jsonrpc_ids(request_body)
        if ids:
            with self._cond:
                self._asked |= ids
                self._cond.notify_all()

    def next_event(self, key: int) -> bytes | None:
        """Block until the stream's next event may go (None: the proxy is stopping, or the stream is over)."""
        with self._cond:
            stream = self._streams[key]
            while not self._stopping:
                if stream.sent < len(stream.events):
                    gate = stream.gates[stream.sent]
                    if gate is None or gate in self._asked:
                        stream.sent += 1
                        return stream.events[stream.sent - 1]
                self._cond.wait(timeout=1.0)
            return None

    def stream(self, key: int) -> _Stream | None:
        return self._streams.get(key)

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._server.shutdown()
        self._server.server_close()


def _handler(hold: SseHold) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # a POST answered with a stream (MCP's subscriptions/listen): its body was matched already
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.do_GET()

        def do_GET(self) -> None:
            _, _, key = self.path.rpartition("/")
            stream = hold.stream(int(key)) if key.isdigit() else None
            if stream is None:
                self.send_error(404)
                return
            self.send_response(stream.status)
            for name, value in stream.headers.items():
                self.send_header(name, value)
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            try:
                while (event := hold.next_event(int(key))) is not None:
                    self.wfile.write(event)
                    self.wfile.flush()
            except OSError:  # the client went away
                return

    return Handler
