"""A fake of the clouds' model endpoints: Amazon Bedrock (InvokeModel, Converse) and Vertex AI's Anthropic rawPredict.

A real HTTP/1.1 server on 127.0.0.1 for the end-to-end tests, written from the
wire formats (not from blackbox_mitm), as ``fake_provider.py`` is; it answers
with the same rule-based weather model (``fake_provider.weather_answer``).

* ``POST /model/{modelId}/invoke`` -> an Anthropic Message (``model`` as Bedrock
  names it); ``…/invoke-with-response-stream`` -> AWS's binary event stream, each
  Anthropic stream event base64 in a ``chunk`` message with Bedrock's ``p``
  padding, invocation metrics on ``message_stop``. A request without a SigV4
  ``Authorization`` (``AWS4-HMAC-SHA256 Credential=…``) or a Bedrock API key
  (``Bearer …``) gets a 403 ``{"message"}`` with ``x-amzn-ErrorType``.
* ``POST /model/{modelId}/converse`` and ``…/converse-stream``: the Converse API
  (``fake_converse``).
* ``POST …/publishers/anthropic/models/{m}:rawPredict`` / ``:streamRawPredict``:
  Anthropic JSON / SSE; a request without ``Authorization: Bearer`` gets a 401.

``FakeClouds(responder=...)`` answers Anthropic bodies with a responder (as
``fake_provider.FakeProvider`` does, e.g. ``examples/claude_code_model.respond``).

Every request is kept in ``FakeClouds.requests`` (method, path, headers, body).
"""

from __future__ import annotations

import base64
import json
import re
import struct
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from fake_provider import anthropic_events, anthropic_response, weather_answer

Json = dict[str, Any]

_INVOKE = re.compile(r"^/model/([^/]+)/(invoke|invoke-with-response-stream|converse|converse-stream)$")
_VERTEX = re.compile(r"/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/([^/:]+):(rawPredict|streamRawPredict)$")
_PAD = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def event_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message (string headers; CRC-32 of the prelude and of the whole message)."""
    head = b""
    for name, value in headers.items():
        raw = value.encode()
        head += bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw
    prelude = struct.pack(">II", 16 + len(head) + len(payload), len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + head + payload
    return message + struct.pack(">I", zlib.crc32(message))


def bedrock_event(event_type: str, payload: Json) -> bytes:
    return event_message(
        {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}, json.dumps(payload).encode()
    )


def _chunk(event: Json, n: int) -> bytes:
    return bedrock_event("chunk", {"bytes": base64.b64encode(json.dumps(event).encode()).decode(), "p": _PAD[: 4 + n % 30]})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        path = urlsplit(self.path).path
        self.server.fake.record({"method": self.command, "path": self.path, "headers": headers, "body": body})
        try:
            if m := _INVOKE.match(path):
                self._bedrock(unquote(m.group(1)), m.group(2), headers, body)
            elif m := _VERTEX.search(path):
                self._vertex(unquote(m.group(1)), m.group(2) == "streamRawPredict", headers, body)
            else:
                self._send(404, {"message": f"no route for {path}"}, {"x-amzn-ErrorType": "UnknownOperationException:"})
        except OSError:
            self.close_connection = True

    def _bedrock(self, model: str, op: str, headers: dict[str, str], body: Any) -> None:
        auth = headers.get("authorization", "")
        if not (auth.startswith("AWS4-HMAC-SHA256 Credential=") and "x-amz-date" in headers) and not auth.startswith("Bearer "):
            self._send(403, {"message": "Missing Authentication Token"}, {"x-amzn-ErrorType": "AccessDeniedException:"})
            return
        if not isinstance(body, dict):
            self._send(400, {"message": "Malformed input request"}, {"x-amzn-ErrorType": "ValidationException:"})
            return
        if op.startswith("converse"):
            from fake_converse import converse_events, converse_response

            if op == "converse":
                self._send(200, converse_response(body))
            else:
                self._stream("application/vnd.amazon.eventstream", [bedrock_event(k, p) for k, p in converse_events(body)])
            return
        if not isinstance(body.get("anthropic_version"), str) or "model" in body:  # bedrock-2023-05-31 (newer SDKs send a date)
            self._send(
                400,
                {"message": "Malformed input request: anthropic_version is required, model is not allowed"},
                {"x-amzn-ErrorType": "ValidationException:"},
            )
            return
        view = {**body, "model": model.rsplit("/", 1)[-1]}
        answer = self.server.fake.answer(view)
        if op == "invoke":
            self._send(200, anthropic_response(answer, view))
            return
        events = [json.loads(frame.split(b"data: ", 1)[1]) for frame in anthropic_events(answer, view)]
        events = [e for e in events if e["type"] != "ping"]  # Bedrock sends no pings
        events[-1]["amazon-bedrock-invocationMetrics"] = {
            "inputTokenCount": 10,
            "outputTokenCount": 20,
            "invocationLatency": 400,
            "firstByteLatency": 90,
        }
        self._stream("application/vnd.amazon.eventstream", [_chunk(e, i) for i, e in enumerate(events)])

    def _vertex(self, model: str, stream: bool, headers: dict[str, str], body: Any) -> None:
        if self.server.fake.vertex_auth and not headers.get("authorization", "").startswith("Bearer "):
            self._send(
                401,
                {"error": {"code": 401, "message": "Request is missing required authentication credential.", "status": "UNAUTHENTICATED"}},
            )
            return
        if not isinstance(body, dict) or not isinstance(body.get("anthropic_version"), str):  # vertex-2023-10-16
            self._send(400, {"type": "error", "error": {"type": "invalid_request_error", "message": "anthropic_version: Field required"}})
            return
        view = {**body, "model": model}
        answer = self.server.fake.answer(view)
        if stream:
            self._stream("text/event-stream; charset=utf-8", anthropic_events(answer, view))
        else:
            self._send(200, anthropic_response(answer, view))

    def _send(self, status: int, payload: Json, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-RequestId", "0f3c8a1e-2b7d-4c55-9e1a-6d2f0b8c4a71")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, ctype: str, frames: list[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-amzn-RequestId", "0f3c8a1e-2b7d-4c55-9e1a-6d2f0b8c4a72")
        self.end_headers()
        for frame in frames:
            self.wfile.write(b"%X\r\n%s\r\n" % (len(frame), frame))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeClouds) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)


class FakeClouds:
    """``with FakeClouds() as fake:`` -> ``fake.url`` (``http://127.0.0.1:PORT``), ``fake.requests``."""

    def __init__(self, responder: Any = None, *, vertex_auth: bool = True) -> None:
        self.vertex_auth = vertex_auth  # False: take Vertex calls without a token (Claude Code's CLAUDE_CODE_SKIP_VERTEX_AUTH=1)
        self.responder = responder  # (provider, body) -> answer, as fake_provider's (examples/claude_code_model.py)
        self.requests: list[Json] = []
        self._lock = threading.Lock()
        self._server = _Server(self)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def answer(self, body: Json) -> Json:
        """The answer to an Anthropic body: the responder's, else the weather model's."""
        return self.responder("anthropic", body) if self.responder is not None else weather_answer("anthropic", body)

    def record(self, request: Json) -> None:
        with self._lock:
            self.requests.append(request)

    def __enter__(self) -> FakeClouds:
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
