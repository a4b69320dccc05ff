"""A scripted fake Google Gemini API: a real HTTP/1.1 server on 127.0.0.1 speaking ``generateContent``.

It stands in for generativelanguage.googleapis.com in the end-to-end tests and
the docs. It is written from the wire format (shared/providers.md section 6),
not from blackbox_mitm, so that it stays an independent stand-in.

Routes (``v1`` and ``v1beta`` alike; the key in ``x-goog-api-key`` or ``?key=``, or
on Vertex's project paths an OAuth bearer token, else a 403 as the API gives):

* ``POST /v1beta/models/{model}:generateContent`` — one GenerateContentResponse;
* ``POST …:streamGenerateContent?alt=sse`` — ``data:`` chunks, no ``[DONE]``,
  cumulative ``usageMetadata``, ``finishReason`` on the last chunk;
* ``POST …:countTokens`` and ``GET /v1beta/models`` — small answers, so a
  client's side calls work; anything else is a Google-shaped 404.

Script: a list of answers, one consumed per model call::

    {"text": "Hello"}
    {"function_calls": [{"name": "get_weather", "args": {"city": "Paris"}}], "text": "optional narration"}
    {"text": "...", "finish": "MAX_TOKENS"}       # any finishReason, passed through
    {"thought": "...", "signature": true}         # add a thought part / thoughtSignature (as thinking models do)
    {"block": "SAFETY"}                           # a blocked prompt (promptFeedback.blockReason)
    {"status": 429, "message": "..."}             # that error, Google-shaped
    {"text": "...", "image": {"mimeType", "data"}}  # an image model's answer: text, then an inlineData part
    {"audio": [{"mimeType", "data"}, ...]}        # a speech model's answer: inlineData parts (streamed one per chunk)
    {"code_execution": [{"language", "code", "outcome", "output"}], "text": "..."}  # code run at Google: an
                                                  # executableCode and a codeExecutionResult part each, then the text
    {"raw": {...}}                                # this exact JSON body

A ``responder(body) -> answer | None`` may answer first (None: the script answers).
Past the end of the script every model call gets a 500 saying so. Without a
script a small rule-based weather model answers: function calls to
``get_weather`` for the known cities it reads in the question (when the request
declares that function), then a summary of the function responses.

Run it alone: ``python examples/fake_gemini.py [--port N] [--script FILE.json]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import secrets
import signal
import socket
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

Json = dict[str, Any]

CITIES = ("Paris", "Lyon", "London", "Tokyo", "Berlin", "Madrid", "Rome", "Oslo", "Sydney")
WEATHER = {"Paris": ("sunny", 22), "Lyon": ("cloudy", 17), "Oslo": ("snow", -3)}
# Also Vertex AI's paths (the project, location and publisher before the model; express mode's v1beta1/publishers/google/).
_ROUTE = re.compile(
    r"^/(v1|v1beta|v1alpha|v1beta1)/(?:projects/[^/]+/locations/[^/]+/)?(?:publishers/google/)?models/([^/:]+):(generateContent|streamGenerateContent|countTokens)$"
)
_STATUS = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def _error(code: int, message: str) -> Json:
    return {"error": {"code": code, "message": message, "status": _STATUS.get(code, "UNKNOWN")}}


def _texts(content: Json) -> str:
    return "".join(p.get("text", "") for p in content.get("parts") or [] if isinstance(p, dict) and not p.get("thought"))


def weather_answer(body: Json) -> Json:
    """The rule-based model: call get_weather for each known city, then summarize the results."""
    contents = body.get("contents") or [{}]
    last = contents[-1]
    results = [p["functionResponse"] for p in last.get("parts") or [] if "functionResponse" in p]
    if results:
        lines = []
        for result in results:
            data = result.get("response") or {}
            data = data.get("result", data) if isinstance(data, dict) else data
            if isinstance(data, dict) and "forecast" in data:
                lines.append(f"{data.get('city', '?')}: {data['forecast']}, {data.get('celsius')}°C.")
            else:
                lines.append(f"{result.get('name')}: {json.dumps(data, ensure_ascii=False)}.")
        return {"text": " ".join(lines)}
    question = _texts(last)
    declared = {
        f.get("name") for t in body.get("tools") or [] for f in t.get("functionDeclarations") or t.get("function_declarations") or []
    }
    cities = [c for c in CITIES if c.lower() in question.lower()]
    if "get_weather" in declared and cities:
        return {"function_calls": [{"name": "get_weather", "args": {"city": c}} for c in cities]}
    return {"text": f"You said: {question}"}


def _parts(answer: Json) -> list[Json]:
    parts: list[Json] = []
    if answer.get("thought"):
        parts.append({"text": answer["thought"], "thought": True})
    for run in answer.get("code_execution") or []:  # the codeExecution tool: the code, then what it printed
        parts.append({"executableCode": {"language": run.get("language", "PYTHON"), "code": run["code"]}})
        parts.append({"codeExecutionResult": {"outcome": run.get("outcome", "OUTCOME_OK"), "output": run.get("output", "")}})
    if answer.get("text"):
        parts.append({"text": answer["text"]})
    if answer.get("image"):  # an image model's answer: {"mimeType", "data" (base64)}
        parts.append({"inlineData": dict(answer["image"])})
    for piece in answer.get("audio") or []:  # a speech model's answer: [{"mimeType", "data"}], one inlineData part (and chunk) each
        parts.append({"inlineData": dict(piece)})
    for call in answer.get("function_calls") or []:
        fc: Json = {"name": call["name"], "args": call.get("args", {})}
        if call.get("id"):
            fc["id"] = call["id"]
        parts.append({"functionCall": fc})
    if answer.get("signature") and parts:
        parts[-1 if answer.get("function_calls") else 0]["thoughtSignature"] = secrets.token_urlsafe(48)
    return parts or [{"text": ""}]


def _usage(prompt: int, out: int) -> Json:
    return {"promptTokenCount": prompt, "candidatesTokenCount": out, "totalTokenCount": prompt + out}


class FakeGemini:
    """``with FakeGemini(script) as fake:`` — ``url``, ``requests`` (method, path, query, headers, body), ``connections``."""

    def __init__(
        self,
        script: list[Json] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        stream_pieces: int = 3,
        responder: Callable[[Json], Json | None] | None = None,
    ) -> None:
        self.host, self.port = host, port
        self.script = list(script) if script is not None else None
        self.responder = responder
        self.stream_pieces = stream_pieces
        self.requests: list[Json] = []
        self.connections = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def model_requests(self) -> list[Json]:
        return [r for r in self.requests if r["path"].endswith(("generateContent", "GenerateContent"))]

    def next_answer(self, body: Json) -> Json | None:
        if self.responder is not None:
            answer = self.responder(body)  # None: fall through to the script (or the weather model)
            if answer is not None:
                return answer
        with self._lock:
            if self.script is None:
                return weather_answer(body)
            return self.script.pop(0) if self.script else None

    def handle(self, method: str, raw_path: str, headers: dict[str, str], body: Json | None) -> tuple[int, Json | list[Json], bool]:
        """(status, the JSON body or the list of stream chunks, whether it streams)."""
        url = urlsplit(raw_path)
        query = parse_qs(url.query)
        with self._lock:
            self.requests.append({"method": method, "path": url.path, "query": query, "headers": headers, "body": body})
        oauth = headers.get("authorization", "").startswith("Bearer ") and "/projects/" in url.path  # Vertex with a project
        if not (headers.get("x-goog-api-key") or query.get("key") or oauth):
            return 403, _error(403, "Method doesn't allow unregistered callers. Please use an API key."), False
        if method == "GET" and re.match(r"^/v1(beta)?/models/?$", url.path):
            return 200, {"models": [{"name": "models/gemini-2.5-flash", "displayName": "Gemini 2.5 Flash"}]}, False
        route = _ROUTE.match(url.path)
        if method != "POST" or route is None:
            return 404, _error(404, f"{method} {url.path} is not found"), False
        if not isinstance(body, dict):
            return 400, _error(400, "Invalid JSON payload received."), False
        model, action = route.group(2), route.group(3)
        prompt = max(1, len(json.dumps(body.get("contents") or [])) // 4)
        if action == "countTokens":
            return 200, {"totalTokens": prompt}, False
        answer = self.next_answer(body)
        if answer is None:
            return 500, _error(500, "fake gemini: the script of answers is exhausted"), False
        if "status" in answer:
            return int(answer["status"]), _error(int(answer["status"]), answer.get("message", "scripted error")), False
        if "raw" in answer:
            return 200, answer["raw"], False
        response_id = secrets.token_urlsafe(16)
        if answer.get("block"):
            blocked = {"promptFeedback": {"blockReason": answer["block"]}, "usageMetadata": _usage(prompt, 0), "responseId": response_id}
            return 200, [blocked] if action == "streamGenerateContent" else blocked, action == "streamGenerateContent"
        parts, finish = _parts(answer), answer.get("finish", "STOP")
        if action == "generateContent":
            candidate = {"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}
            return (
                200,
                {"candidates": [candidate], "usageMetadata": _usage(prompt, 7), "modelVersion": model, "responseId": response_id},
                False,
            )
        if query.get("alt") != ["sse"]:
            return 400, _error(400, "fake gemini streams server-sent events only: add ?alt=sse"), False
        return 200, self._chunks(parts, finish, model, prompt, response_id), True

    def _chunks(self, parts: list[Json], finish: str, model: str, prompt: int, response_id: str) -> list[Json]:
        pieces: list[list[Json]] = []
        for part in parts:
            if "text" in part and not part.get("thought") and len(part["text"]) > 1:
                text, n = part["text"], self.stream_pieces
                cuts = sorted({round(i * len(text) / n) for i in range(n + 1)})
                pieces += [[{"text": text[a:b]}] for a, b in itertools.pairwise(cuts) if a < b]
                if "thoughtSignature" in part:
                    pieces[-1][0]["thoughtSignature"] = part["thoughtSignature"]
            else:
                pieces.append([part])
        chunks = []
        for k, group in enumerate(pieces):
            candidate: Json = {"content": {"role": "model", "parts": group}, "index": 0}
            if k == len(pieces) - 1:
                candidate["finishReason"] = finish
            chunks.append(
                {"candidates": [candidate], "usageMetadata": _usage(prompt, k + 1), "modelVersion": model, "responseId": response_id}
            )
        return chunks

    def start(self) -> FakeGemini:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                with fake._lock:
                    fake.connections += 1
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # headers and body are two writes

            def _serve(self, method: str) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                status, payload, streams = fake.handle(method, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                chunks = payload if isinstance(payload, list) else [payload]
                data = (
                    b"".join(f"data: {json.dumps(c, ensure_ascii=False)}\r\n\r\n".encode() for c in chunks)
                    if streams
                    else json.dumps(payload, ensure_ascii=False).encode()
                )
                self.send_response(status)
                self.send_header("content-type", "text/event-stream" if streams else "application/json; charset=UTF-8")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                self._serve("POST")

            def do_GET(self) -> None:
                self._serve("GET")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((self.host, self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="fake-gemini", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeGemini:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A scripted fake Gemini API on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("--script", type=Path, help="JSON file holding the list of answers (default: the rule-based weather model)")
    args = parser.parse_args(argv)
    script = json.loads(args.script.read_text(encoding="utf-8")) if args.script else None
    if script is not None and not isinstance(script, list):
        parser.error("--script must hold a JSON list of answers")
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    with FakeGemini(script, port=args.port) as fake:
        print(f"fake gemini listening on {fake.url}", flush=True)
        while not done.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
