"""A scripted fake OpenAI Responses API: a real HTTP/1.1 server on 127.0.0.1 answering ``POST …/responses``.

The upstream that stands in for api.openai.com in the Responses end-to-end tests.
Written from the wire format (shared/providers.md section 5), not from
blackbox_mitm, so that it stays an independent stand-in for the provider:

* a JSON Response object, or (``"stream": true``) the full SSE event sequence,
  every event with ``event:`` and ``sequence_number``, deltas with an
  ``obfuscation`` pad (unless ``stream_options.include_obfuscation`` is false);
* provider ids (``resp_…``, ``msg_…``, ``fc_…``, ``ctc_…``, ``call_…``, ``rs_…``),
  realistic usage, the request's settings echoed;
* a per-server store: ``previous_response_id`` continues a response this server
  gave (its whole input history and output), and an unknown one is the API's 400.
  With ``store: false`` a response is kept only in the ``connection_store`` the
  caller passes (a WebSocket's), as the API keeps it only on that socket.

The answers use examples/fake_provider.py's script format (imported, not
copied): ``{"text"}``, ``{"tool_calls": [{"name", "arguments"}], "text"?}`` (a
call with ``"input": "..."`` instead of ``arguments``, or to a tool the request
declares ``custom``, is a ``custom_tool_call``; ``"namespace"`` is passed on),
``{"stop": "length" | "refusal"}``, ``{"status": 429, "times": N}``, ``{"raw": {...}}``,
``{"raw_events": [...]}``, ``{"stream_cut": true}``, ``"delay_ms"``, ``"headers"``;
``{"reasoning": true}`` adds a reasoning item with ``encrypted_content``. Without a
script the same rule-based weather model as fake_provider answers.

``ResponsesModel.respond(body)`` is the whole logic (a ``Reply``: status,
headers, JSON body, events), for any transport; ``FakeResponses`` serves it over
HTTP. Run alone: ``python examples/fake_responses.py [--port N] [--script FILE.json] [--stream-delay-ms MS]``.
"""

from __future__ import annotations

import argparse
import json
import secrets
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fake_provider import NARRATION, _cities, _compact, _is_error, _pieces, _Script, _summary, _tokens, _words, openai_error

Json = dict[str, Any]


def _hex(n: int) -> str:
    return secrets.token_hex(n)


# --------------------------------------------------------------------------- reading a request


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _tools(body: Json, items: list[Json]) -> list[Json]:
    tools = list(body.get("tools") or [])
    for item in items:
        if item.get("type") == "additional_tools":
            tools += item.get("tools") or []
    flat: list[Json] = []
    for tool in tools:
        flat += tool.get("tools") or [] if tool.get("type") == "namespace" else [tool]
    return flat


def weather_answer(items: list[Json], tools: list[Json]) -> Json:
    """fake_provider's scriptless weather model, reading Responses items."""
    calls: dict[str, Json] = {}
    results: list[tuple[Json, str]] = []
    last_call = max((i for i, it in enumerate(items) if it.get("type") == "function_call"), default=-1)
    for it in items[: last_call + 1]:
        if it.get("type") == "function_call":
            try:
                calls[it.get("call_id", "")] = json.loads(it.get("arguments") or "{}")
            except ValueError:
                calls[it.get("call_id", "")] = {}
    for it in items[last_call + 1 :]:
        if it.get("type") == "function_call_output":
            results.append((calls.get(it.get("call_id", ""), {}), _text(it.get("output"))))
    if results:
        return {"text": _summary(results)}
    user = next((_text(it.get("content")) for it in reversed(items) if it.get("role") == "user"), "")
    cities = _cities(user)
    if "get_weather" in [t.get("name") for t in tools] and cities:
        answer: Json = {"tool_calls": [{"name": "get_weather", "arguments": {"city": c}} for c in cities]}
        if len(cities) > 1:
            answer["text"] = NARRATION
        return answer
    return {"text": f"Echo: {user}"}


# --------------------------------------------------------------------------- the answer


def _output(answer: Json, tools: list[Json]) -> list[Json]:
    custom = {t.get("name") for t in tools if t.get("type") == "custom"}
    out: list[Json] = []
    if answer.get("reasoning"):
        out.append({"id": "rs_" + _hex(24), "type": "reasoning", "summary": [], "encrypted_content": "gAAAAAB" + _hex(40)})
    text, stop = answer.get("text"), answer.get("stop")
    if text is not None:
        part = (
            {"type": "refusal", "refusal": text}
            if stop == "refusal"
            else {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
        )
        status = "incomplete" if stop == "length" else "completed"
        out.append({"id": "msg_" + _hex(24), "type": "message", "status": status, "content": [part], "role": "assistant"})
    for tc in answer.get("tool_calls") or []:
        call_id = "call_" + secrets.token_urlsafe(18).replace("-", "x").replace("_", "y")
        if "input" in tc or tc["name"] in custom:
            item: Json = {
                "id": "ctc_" + _hex(24),
                "type": "custom_tool_call",
                "status": "completed",
                "call_id": call_id,
                "name": tc["name"],
            }
            item["input"] = tc.get("input", "")
        else:
            args = tc.get("arguments", {})
            arguments = args if isinstance(args, str) else _compact(args)
            item = {"id": "fc_" + _hex(24), "type": "function_call", "status": "completed", "arguments": arguments, "call_id": call_id}
            item["name"] = tc["name"]
        if tc.get("namespace"):
            item["namespace"] = tc["namespace"]
        out.append(item)
    return out


_ECHO = ("instructions", "max_output_tokens", "previous_response_id", "prompt_cache_key", "safety_identifier", "user")
_DEFAULTS: Json = {
    "parallel_tool_calls": True,
    "reasoning": {"effort": None, "summary": None},
    "store": True,
    "temperature": 1.0,
    "text": {"format": {"type": "text"}, "verbosity": "medium"},
    "tool_choice": "auto",
    "tools": [],
    "top_logprobs": 0,
    "top_p": 1.0,
    "truncation": "disabled",
    "metadata": {},
}


def response_object(body: Json, rid: str, output: list[Json], items: list[Json], stop: Any) -> Json:
    length = stop == "length"
    usage_in, usage_out = _tokens(_compact(items) + str(body.get("instructions") or "")), _tokens(_compact(output))
    resp: Json = {"id": rid, "object": "response", "created_at": int(time.time()), "status": "incomplete" if length else "completed"}
    resp |= {"background": False, "error": None, "incomplete_details": {"reason": "max_output_tokens"} if length else None}
    resp |= {k: body.get(k) for k in _ECHO}
    resp |= {"model": f"{body.get('model', 'gpt-4.1')}-2026-01-01", "output": output, "service_tier": "default"}
    resp |= {k: v if body.get(k) is None else body[k] for k, v in _DEFAULTS.items()}
    resp["usage"] = {
        "input_tokens": usage_in,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage_out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage_in + usage_out,
    }
    return resp


def events_of(response: Json, *, obfuscate: bool = True) -> list[Json]:
    """The SSE events the API streams for a finished Response object, in order, numbered."""
    out: list[Json] = []

    def add(kind: str, pad: bool = False, **fields: Any) -> None:
        event = {"type": kind, "sequence_number": len(out), **fields}
        if pad and obfuscate:
            event["obfuscation"] = _hex(secrets.randbelow(6) + 1)
        out.append(event)

    start = {**response, "status": "in_progress", "output": [], "usage": None, "incomplete_details": None}
    add("response.created", response=start)
    add("response.in_progress", response=start)
    for i, item in enumerate(response["output"]):
        at = {"item_id": item["id"], "output_index": i}
        kind = item["type"]
        if kind == "message":
            add("response.output_item.added", output_index=i, item={**item, "status": "in_progress", "content": []})
            part = item["content"][0]
            key, name = ("refusal", "refusal") if part["type"] == "refusal" else ("text", "output_text")
            add("response.content_part.added", **at, content_index=0, part={**part, key: ""})
            logprobs: dict[str, Any] = {"logprobs": []} if key == "text" else {}
            for piece in _words(part[key]):
                add(f"response.{name}.delta", True, **at, content_index=0, delta=piece, **logprobs)
            add(f"response.{name}.done", **at, content_index=0, **{key: part[key]}, **logprobs)
            add("response.content_part.done", **at, content_index=0, part=part)
        elif kind in ("function_call", "custom_tool_call"):
            key, name = ("arguments", "function_call_arguments") if kind == "function_call" else ("input", "custom_tool_call_input")
            add("response.output_item.added", output_index=i, item={**item, "status": "in_progress", key: ""})
            for piece in _pieces(item[key]):
                add(f"response.{name}.delta", True, **at, delta=piece)
            add(f"response.{name}.done", **at, **{key: item[key]})
        else:
            add("response.output_item.added", output_index=i, item={**item, "summary": []})
        add("response.output_item.done", output_index=i, item=item)
    add("response.incomplete" if response["status"] == "incomplete" else "response.completed", response=response)
    return out


@dataclass
class Reply:
    """One answer: an HTTP status and headers, the JSON body (a Response or an error), the events for a stream."""

    status: int
    body: Any
    events: list[Any] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    cut: bool = False
    delay_ms: float = 0.0


class ResponsesModel:
    """The fake's logic for any transport: a script (or the weather model) and the store of responses."""

    def __init__(self, script: list[Json] | None = None) -> None:
        self._script = _Script(script)
        self.store: dict[str, list[Json]] = {}
        self._lock = threading.Lock()

    def _history(self, body: Json, connection_store: dict[str, list[Json]] | None) -> list[Json] | Reply:
        prev = body.get("previous_response_id")
        if prev is None:
            return []
        with self._lock:
            found = (connection_store or {}).get(prev, self.store.get(prev))
        if found is None:
            return Reply(400, _error(400, f"Previous response with id '{prev}' not found.", param="previous_response_id"))
        return list(found)

    def respond(self, body: Any, *, connection_store: dict[str, list[Json]] | None = None) -> Reply:
        if not isinstance(body, dict):
            return Reply(400, openai_error(400, "We could not parse the JSON body of your request."))
        if not body.get("model"):
            return Reply(400, _error(400, "Missing required parameter: 'model'.", param="model"))
        history = self._history(body, connection_store)
        if isinstance(history, Reply):
            return history
        raw = body.get("input")
        own = [{"type": "message", "role": "user", "content": raw}] if isinstance(raw, str) else list(raw or [])
        items = history + own
        tools = _tools(body, items)
        try:
            answer = self._script.next()
        except LookupError:
            answer = weather_answer(items, tools)
        if answer is None:
            message = f"fake responses: the script is used up (it has {len(self._script.answers or [])} answers); add answers for this call"
            return Reply(500, openai_error(500, message), headers={"x-should-retry": "false"})
        extra = {str(k): str(v) for k, v in (answer.get("headers") or {}).items()}
        common: dict[str, Any] = {"cut": bool(answer.get("stream_cut")), "delay_ms": float(answer.get("delay_ms") or 0), "headers": extra}
        if "raw" in answer:
            return Reply(int(answer.get("status", 200)), answer["raw"], **common)
        if _is_error(answer):
            if answer.get("retry_after_ms", 10) is not None:
                extra.setdefault("retry-after-ms", str(answer.get("retry_after_ms", 10)))
            return Reply(int(answer["status"]), openai_error(int(answer["status"]), answer.get("message")), **common)
        if "raw_events" in answer:
            return Reply(200, None, events=list(answer["raw_events"]), **common)
        rid = "resp_" + _hex(24)
        output = _output(answer, tools)
        response = response_object(body, rid, output, items, answer.get("stop"))
        with self._lock:
            target = self.store if body.get("store") is not False else connection_store
            if target is not None:
                target[rid] = items + output
        obfuscate = (body.get("stream_options") or {}).get("include_obfuscation", True) is not False
        return Reply(200, response, events=events_of(response, obfuscate=obfuscate), **common)


def _error(status: int, message: str, *, param: str | None = None) -> Json:
    err = openai_error(status, message)
    err["error"]["param"] = param
    return err


# --------------------------------------------------------------------------- the HTTP server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-responses"
    sys_version = ""
    disable_nagle_algorithm = True  # headers and body are two sends: no 40 ms delayed-ACK stall a real provider lacks
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        fake = self.server.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        path = urlsplit(self.path).path
        fake._record({"method": self.command, "path": self.path, "headers": headers, "body": body})
        try:
            if not path.rstrip("/").endswith("/responses"):
                self._send(Reply(404, openai_error(404, f"Invalid URL ({self.command} {path})")))
                return
            reply = fake.model.respond(body)
            if reply.delay_ms:
                fake._stopping.wait(reply.delay_ms / 1000)
            stream = isinstance(body, dict) and body.get("stream") is True and reply.status == 200
            self._stream(reply) if stream else self._send(reply)
        except OSError:
            self.close_connection = True

    do_GET = do_DELETE = do_POST

    def _head(self, status: int, ctype: str, extra: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("x-request-id", "req_" + _hex(16))
        self.send_header("openai-processing-ms", str(secrets.randbelow(400) + 50))
        for name, value in extra.items():
            self.send_header(name, value)

    def _send(self, reply: Reply) -> None:
        data = _compact(reply.body).encode()
        self._head(reply.status, "application/json", reply.headers)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if reply.cut:
            self.wfile.write(data[: len(data) // 2])
            self.close_connection = True
            return
        self.wfile.write(data)

    def _stream(self, reply: Reply) -> None:
        self._head(200, "text/event-stream; charset=utf-8", reply.headers)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = reply.events[: max(1, len(reply.events) // 2)] if reply.cut else reply.events
        for i, event in enumerate(events):
            if i and self.server.fake.stream_delay_ms:
                self.server.fake._stopping.wait(self.server.fake.stream_delay_ms / 1000)
            name = event.get("type") if isinstance(event, dict) else None
            frame = (f"event: {name}\n" if name else "") + f"data: {event if isinstance(event, str) else _compact(event)}\n\n"
            data = frame.encode()
            self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        if reply.cut:
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], fake: FakeResponses) -> None:
        self.fake = fake
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        import socketserver

        socketserver.TCPServer.server_bind(self)  # no FQDN lookup (it can stall without DNS)
        self.server_name, self.server_port = self.server_address[:2]  # type: ignore[assignment]

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.fake._lock:
            self.fake._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.fake._lock:
            self.fake._open.discard(request)
        super().shutdown_request(request)


class FakeResponses:
    """``with FakeResponses(script) as fake:`` — ``fake.url`` is ``http://127.0.0.1:PORT``; ``fake.requests`` every request."""

    def __init__(self, script: list[Json] | None = None, *, port: int = 0, stream_delay_ms: float = 0.0) -> None:
        self.host, self.port = "127.0.0.1", port
        self.model = ResponsesModel(script)
        self.stream_delay_ms = stream_delay_ms
        self.requests: list[Json] = []
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def calls(self) -> list[Json]:
        """The bodies of the model calls received (``POST …/responses``), in order."""
        return [r["body"] for r in self.requests if r["method"] == "POST" and urlsplit(r["path"]).path.endswith("/responses")]

    def start(self) -> FakeResponses:
        self._stopping.clear()
        self._server = _Server((self.host, self.port), self)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="fake-responses", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and hang up every open connection."""
        self._stopping.set()
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            for sock in list(self._open):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> FakeResponses:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _record(self, request: Json) -> None:
        with self._lock:
            self.requests.append(request)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A scripted fake OpenAI Responses API on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("--script", type=Path, help="JSON file holding the list of answers (default: the rule-based weather model)")
    parser.add_argument("--stream-delay-ms", type=float, default=0.0, help="pause between SSE events")
    args = parser.parse_args(argv)
    script = json.loads(args.script.read_text(encoding="utf-8")) if args.script else None
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    with FakeResponses(script, port=args.port, stream_delay_ms=args.stream_delay_ms) as fake:
        print(f"fake responses listening on {fake.url}", flush=True)
        while not done.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
