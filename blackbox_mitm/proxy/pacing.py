"""Replay pacing: a replayed answer delivered over time — event by event with a pause, or as long as the call took.

mitmproxy cannot stream a response that an addon made itself: a response set in
the ``request`` hook is sent whole (``flow.response.stream`` is only consulted
for bodies arriving from an upstream). So a paced answer takes one local hop: the
addon hands the synthesized SSE body to this small HTTP server on 127.0.0.1 and
points the flow at it; mitmproxy then streams the server's chunks through to the
agent as they come, like any upstream stream. Nothing leaves the machine.

The server answers each registered body once, at ``/blackbox-stream/<token>``,
writing one event per HTTP chunk. Between events it sleeps ``delay_ms`` (the
stream delay), or, for a body registered with ``total_ms`` (``--pace``: how
long the call took when recorded, scaled), it spreads the events over that
time — the first at once, the last ``total_ms`` after the request — and a
body that is not a stream is sent whole after ``total_ms``. The schedule is
kept against a monotonic clock, so slow writes do not add up. A body registered
with a ``hold`` (``session/release.py``: an answer to a call that overlapped
others) sends its last event — or, whole, the body — only once the hold is
released, after whatever ``total_ms`` asks. A proxy shutting down cuts every
wait short.
"""

from __future__ import annotations

import logging
import re
import secrets
import socketserver
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from blackbox_mitm.session.release import Hold

from blackbox_mitm.codecs.common.eventstream import CONTENT_TYPE as EVENTSTREAM_TYPE
from blackbox_mitm.codecs.common.eventstream import EventStreamParser

__all__ = ["PATH_PREFIX", "StreamPacer", "event_offsets", "split_events"]

PATH_PREFIX = "/blackbox-stream/"
_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")
log = logging.getLogger(__name__)
_HOP_BY_HOP = {"content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding"}


def split_events(body: bytes, content_type: str = "") -> list[bytes]:
    """An SSE body -> its events, each with its terminating blank line (a trailing remainder stays whole).

    An AWS event stream (Bedrock) is split into its binary messages instead.
    """
    if content_type.lower().startswith(EVENTSTREAM_TYPE):
        parser = EventStreamParser()
        return [raw for raw, _ in parser.feed_blocks(body)] + [rest for rest in [parser.rest()] if rest]
    events, start = [], 0
    for m in _EVENT_END.finditer(body):
        events.append(body[start : m.end()])
        start = m.end()
    if start < len(body):
        events.append(body[start:])
    return events


def event_offsets(n: int, total_ms: float) -> list[float]:
    """When each of ``n`` events is sent, in ms after the request: spread evenly, the last at ``total_ms``."""
    if n <= 0:
        return []
    if n == 1:
        return [max(0.0, total_ms)]
    return [max(0.0, total_ms) * i / (n - 1) for i in range(n)]


_Entry = tuple[int, dict[str, str], list[bytes], float | None, "Hold | None"]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, pacer: StreamPacer) -> None:
        self.pacer = pacer
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)  # no reverse DNS lookup of 127.0.0.1
        self.server_name, self.server_port = "127.0.0.1", int(self.server_address[1])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        entry = self.server.pacer._take(self.path)
        if entry is None:
            body = b"blackbox: no paced stream registered here\n"
            self.send_response(404)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        status, headers, events, total_ms, hold = entry
        started = time.monotonic()
        stopping = self.server.pacer._stopping
        if total_ms is not None and len(events) == 1:
            stopping.wait(total_ms / 1000)  # a whole body: sent once the call has taken as long as it did
        if hold is not None and len(events) == 1:
            hold.wait(stopping)  # and once every overlapping answer recorded before it has been delivered
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in _HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        pause = self.server.pacer.delay_ms / 1000
        offsets = event_offsets(len(events), total_ms) if total_ms is not None and len(events) > 1 else None
        asked: list[float] = []  # the wait asked before each event, in seconds: what the schedule was, whatever the machine did
        try:
            for i, event in enumerate(events):
                wait = 0.0
                if offsets is not None and not stopping.is_set():
                    wait = max(0.0, started + offsets[i] / 1000 - time.monotonic())
                    stopping.wait(wait)
                elif i and pause and not stopping.is_set():
                    wait = pause
                    stopping.wait(pause)  # cut short when the proxy shuts down: the rest goes at once
                asked.append(wait)
                if hold is not None and i == len(events) - 1 and i:
                    hold.wait(stopping)  # the final event: in the recorded completion order
                self.wfile.write(b"%X\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:  # the agent hung up mid-stream
            self.close_connection = True
        log.info(
            "blackbox: paced %d events, each its own chunk, after waits of (ms): %s", len(asked), " ".join(f"{w * 1000:.0f}" for w in asked)
        )

    do_GET = do_POST


class StreamPacer:
    """A loopback server that plays registered SSE bodies back one event at a time."""

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self._bodies: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    def start(self) -> StreamPacer:
        if self._server is None:
            self._server = _Server(self)
            self._thread = threading.Thread(target=self._server.serve_forever, args=(0.1,), name="blackbox-pacer", daemon=True)
            self._thread.start()
        return self

    def register(
        self,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
        *,
        total_ms: float | None = None,
        stream: bool = True,
        hold: Hold | None = None,
    ) -> str:
        """Keep a body for one request; returns the URL that plays it back.

        ``total_ms``: deliver it over that long (see the module docstring); ``stream`` False: the body is one piece;
        ``hold``: its end waits for the hold's release.
        """
        self.start()
        token = secrets.token_hex(12)
        events = split_events(body, headers.get("content-type", "")) if stream else [body]
        with self._lock:
            self._bodies[PATH_PREFIX + token] = (status, dict(headers), events, total_ms, hold)
        return f"http://127.0.0.1:{self.port}{PATH_PREFIX}{token}"

    def _take(self, path: str) -> _Entry | None:
        with self._lock:
            return self._bodies.pop(path.split("?", 1)[0], None)

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
