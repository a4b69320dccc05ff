"""A scripted fake LLM provider: a real HTTP/1.1 server on 127.0.0.1 speaking both the OpenAI and Anthropic wire formats.

The demo and the end-to-end tests use it as the upstream that stands in for
api.openai.com and api.anthropic.com. It is written from the wire formats
(shared/providers.md sections 1 and 2), not from blackbox_mitm, so that it stays an
honest, independent stand-in for the provider.

Routing is by path (the query is ignored): ``POST .../chat/completions`` is
OpenAI, ``POST .../v1/messages`` is Anthropic. Everything else gets a 404 in the
provider's own error shape (Anthropic when the request carries
``anthropic-version``/``x-api-key`` or names the Anthropic host, OpenAI otherwise).
Every request is recorded in ``FakeProvider.requests``.

Script: a list of answers, one consumed per model call, whichever the provider::

    {"text": "Hello"}
    {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}], "text": "optional narration"}
    {"text": "...", "stop": "length"}        # "length" | "refusal" | any other string, passed through
    {"thinking": "...", "text": "..."}       # Anthropic: a signed thinking block before the answer ("signature": its own)
    {"text": "...", "usage": {"input": N, "output": M}}   # Anthropic: report these token counts
    {"tool_calls": [...], "content": ""}     # a streamed tool-call turn whose first chunk carries content ""
    {"status": 429, "times": 2}              # that error, in the provider's shape, `times` times (default 1)
                                             #   optional "message", "retry_after_ms" (default 10; null omits it)
    {"raw": {...}, "status": 200}            # this exact JSON body (status optional)
    {"raw_events": [{...}, "[DONE]"]}        # these exact SSE events, framed the provider's way
    {"stream_cut": true, "text": "..."}      # send part of the answer, then drop the connection
    any answer may add "delay_ms": N and "headers": {...} (extra response headers)

A ``responder`` (a function ``(provider, body) -> answer``) answers instead of
the script, reading each request: ``examples/claude_code_model.py`` scripts
Claude Code that way (``--responder claude-code``).

Past the end of the script every model call gets a 500 that says so (with
``x-should-retry: false`` so SDKs do not retry it). Without a script, a small
deterministic rule-based "weather model" answers (see ``weather_answer``).

Run it alone: ``python examples/fake_provider.py [--port N] [--script FILE.json] [--log FILE.jsonl]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import secrets
import signal
import socket
import socketserver
import string
import sys
import threading
import time
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

Answer = dict[str, Any]
Json = dict[str, Any]

KNOWN_CITIES = ("Paris", "Lyon", "London", "Tokyo", "Berlin", "Madrid", "Rome", "New York", "Sydney", "Oslo")
NARRATION = "Let me check the weather."
_ALNUM = string.ascii_letters + string.digits


def _rand(n: int) -> str:
    return "".join(secrets.choice(_ALNUM) for _ in range(n))


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _pieces(text: str, parts: int = 3) -> list[str]:
    """Split text into up to `parts` non-empty consecutive fragments (at least 2 when it has 2+ characters)."""
    if len(text) < 2:
        return [text] if text else []
    parts = max(2, min(parts, len(text)))
    cuts = [round(i * len(text) / parts) for i in range(parts + 1)]
    return [text[a:b] for a, b in itertools.pairwise(cuts) if a < b]


def _words(text: str) -> list[str]:
    """Split text into streaming deltas of about two words each, keeping every character."""
    tokens = re.findall(r"\S+\s*|\s+", text)
    chunks = ["".join(tokens[i : i + 2]) for i in range(0, len(tokens), 2)]
    return chunks if len(chunks) > 1 else _pieces(text)


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


# --------------------------------------------------------------------------- the rule-based weather model


def _text_of(content: Any) -> str:
    """Text of a message content: a string, or the text of its text parts/blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _summary(results: list[tuple[dict[str, Any], str]]) -> str:
    lines = []
    for args, content in results:
        try:
            data = json.loads(content)
        except ValueError:
            data = None
        city = args.get("city") or (data.get("city") if isinstance(data, dict) else None) or "?"
        if isinstance(data, dict) and "forecast" in data and "celsius" in data:
            lines.append(f"{city}: {data['forecast']}, {data['celsius']}°C.")
        elif isinstance(data, dict) and "error" in data:
            lines.append(f"{city}: {data['error']}.")
        else:
            lines.append(f"{city}: {content}.")
    return " ".join(lines)


def _cities(text: str) -> list[str]:
    found = []
    for city in KNOWN_CITIES:
        m = re.search(r"\b" + re.escape(city) + r"\b", text, re.IGNORECASE)
        if m:
            found.append((m.start(), city))
    return [city for _, city in sorted(found)]


def _openai_view(body: Json) -> tuple[list[tuple[dict[str, Any], str]], str, list[str]]:
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    last_assistant = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    calls: dict[str, dict[str, Any]] = {}
    if last_assistant >= 0:
        for tc in messages[last_assistant].get("tool_calls") or []:
            try:
                args = json.loads(tc.get("function", {}).get("arguments") or "{}")
            except ValueError:
                args = {}
            calls[tc.get("id", "")] = args if isinstance(args, dict) else {}
    results = [
        (calls.get(m.get("tool_call_id", ""), {}), _text_of(m.get("content")))
        for m in messages[last_assistant + 1 :]
        if m.get("role") == "tool"
    ]
    user_text = next((_text_of(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    tools = [t.get("function", {}).get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]
    return results, user_text, tools


def _anthropic_view(body: Json) -> tuple[list[tuple[dict[str, Any], str]], str, list[str]]:
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    uses: dict[str, dict[str, Any]] = {}
    for m in messages:
        if m.get("role") == "assistant" and isinstance(m.get("content"), list):
            for block in m["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    tool_input = block.get("input")
                    uses[block.get("id", "")] = tool_input if isinstance(tool_input, dict) else {}
    results: list[tuple[dict[str, Any], str]] = []
    if messages and messages[-1].get("role") == "user" and isinstance(messages[-1].get("content"), list):
        for block in messages[-1]["content"]:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                results.append((uses.get(block.get("tool_use_id", ""), {}), _text_of(block.get("content"))))
    user_text = ""
    for m in reversed(messages):
        if m.get("role") == "user" and _text_of(m.get("content")):
            user_text = _text_of(m.get("content"))
            break
    tools = [t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]
    return results, user_text, tools


def weather_answer(provider: str, body: Json) -> Answer:
    """The scriptless model: summarise tool results, else call get_weather per known city mentioned, else echo."""
    results, user_text, tools = (_openai_view if provider == "openai" else _anthropic_view)(body)
    if results:
        return {"text": _summary(results)}
    cities = _cities(user_text)
    if "get_weather" in tools and cities:
        answer: Answer = {"tool_calls": [{"name": "get_weather", "arguments": {"city": c}} for c in cities]}
        if len(cities) > 1:
            answer["text"] = NARRATION
        return answer
    return {"text": f"Echo: {user_text}"}


# --------------------------------------------------------------------------- OpenAI chat completions


def _openai_finish(answer: Answer, calls: list[Json]) -> str:
    stop = answer.get("stop")
    if stop in (None, "refusal"):
        return "tool_calls" if calls else "stop"
    return str(stop)


def _openai_calls(answer: Answer) -> list[Json]:
    return [
        {"id": "call_" + _rand(24), "type": "function", "function": {"name": tc["name"], "arguments": _compact(tc.get("arguments", {}))}}
        for tc in answer.get("tool_calls") or []
    ]


def _openai_usage(body: Json, out: str) -> Json:
    prompt, completion = _tokens(_compact(body.get("messages", []))), _tokens(out)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def openai_response(answer: Answer, body: Json) -> Json:
    calls = _openai_calls(answer)
    text = answer.get("text")
    refused = answer.get("stop") == "refusal"
    message: Json = {"role": "assistant", "content": None if refused else text, "refusal": text if refused else None, "annotations": []}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-" + _rand(29),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "gpt-4.1"),
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _openai_finish(answer, calls)}],
        "usage": _openai_usage(body, (text or "") + _compact(calls)),
        "service_tier": "default",
        "system_fingerprint": "fp_" + secrets.token_hex(5),
    }


def openai_events(answer: Answer, body: Json) -> list[bytes]:
    options = body.get("stream_options") or {}
    base = {
        "id": "chatcmpl-" + _rand(29),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", "gpt-4.1"),
    }
    base |= {"service_tier": "default", "system_fingerprint": "fp_" + secrets.token_hex(5)}

    def chunk(delta: Json, finish: str | None = None) -> bytes:
        event = base | {"choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        if options.get("include_usage"):
            event["usage"] = None
        if options.get("include_obfuscation", True):
            event["obfuscation"] = _rand(secrets.randbelow(12) + 1)
        return b"data: " + _compact(event).encode() + b"\n\n"

    text = answer.get("text")
    refused = answer.get("stop") == "refusal"
    calls = _openai_calls(answer)
    field = "refusal" if refused else "content"
    empty = "" if (text and not refused) or answer.get("content") == "" else None  # "content": "" as OpenAI-compatible servers send
    frames = [chunk({"role": "assistant", "content": empty, "refusal": "" if refused else None})]
    frames += [chunk({field: piece}) for piece in _words(text or "")]
    for i, call in enumerate(calls):
        fn = call["function"]
        frames.append(
            chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function", "function": {"name": fn["name"], "arguments": ""}}]})
        )
        frames += [chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}) for piece in _pieces(fn["arguments"])]
    frames.append(chunk({}, _openai_finish(answer, calls)))
    if options.get("include_usage"):
        usage_event = base | {"choices": [], "usage": _openai_usage(body, (text or "") + _compact(calls))}
        frames.append(b"data: " + _compact(usage_event).encode() + b"\n\n")
    frames.append(b"data: [DONE]\n\n")
    return frames


_OPENAI_ERRORS = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Country, region, or territory not supported."),
    404: ("invalid_request_error", "unknown_url", "Not found."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again shortly."),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}


def openai_error(status: int, message: str | None = None) -> Json:
    kind, code, default = _OPENAI_ERRORS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None, f"Error {status}.")
    )
    return {"error": {"message": message or default, "type": kind, "param": None, "code": code}}


# --------------------------------------------------------------------------- Anthropic messages


def _anthropic_stop(answer: Answer) -> str:
    stop = answer.get("stop")
    if stop is None:
        return "tool_use" if answer.get("tool_calls") else "end_turn"
    return {"length": "max_tokens"}.get(str(stop), str(stop))


def _anthropic_blocks(answer: Answer) -> list[Json]:
    # {"thinking": "..."}: a thinking block first, signed as the API signs it (an opaque token).
    blocks: list[Json] = (
        [{"type": "thinking", "thinking": answer["thinking"], "signature": answer.get("signature") or "Eq" + _rand(40)}]
        if answer.get("thinking")
        else []
    )
    blocks += [{"type": "text", "text": answer["text"]}] if answer.get("text") is not None else []
    blocks += [
        {"type": "tool_use", "id": "toolu_01" + _rand(22), "name": tc["name"], "input": tc.get("arguments", {})}
        for tc in answer.get("tool_calls") or []
    ]
    return blocks


def _anthropic_usage(body: Json, output_tokens: int) -> Json:
    prompt = _tokens(_compact(body.get("messages", [])) + _compact(body.get("system", "")))
    return {
        "input_tokens": prompt,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def anthropic_response(answer: Answer, body: Json) -> Json:
    blocks = _anthropic_blocks(answer)
    usage = _anthropic_usage(body, _tokens(_compact(blocks)))
    if "usage" in answer:  # {"input": N, "output": M}: the counts reported instead (drives a client's auto-compaction)
        usage |= {"input_tokens": answer["usage"]["input"], "output_tokens": answer["usage"]["output"]}
    return {
        "id": "msg_01" + _rand(22),
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-sonnet-4-5"),
        "content": blocks,
        "stop_reason": _anthropic_stop(answer),
        "stop_sequence": None,
        "usage": usage,
    }


def _sse(event: Json) -> bytes:
    return f"event: {event['type']}\ndata: {_compact(event)}\n\n".encode()


def anthropic_events(answer: Answer, body: Json) -> list[bytes]:
    message = anthropic_response(answer, body)
    blocks = message.pop("content")
    start = message | {"content": [], "stop_reason": None, "stop_sequence": None, "usage": {**message["usage"], "output_tokens": 1}}
    frames = [_sse({"type": "message_start", "message": start}), _sse({"type": "ping"})]
    for i, block in enumerate(blocks):
        if block["type"] == "thinking":
            frames.append(
                _sse({"type": "content_block_start", "index": i, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            )
            deltas = [{"type": "thinking_delta", "thinking": piece} for piece in _words(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif block["type"] == "text":
            frames.append(_sse({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}))
            deltas = [{"type": "text_delta", "text": piece} for piece in _words(block["text"])]
        else:
            frames.append(_sse({"type": "content_block_start", "index": i, "content_block": block | {"input": {}}}))
            pieces = ["", *_pieces(json.dumps(block["input"], ensure_ascii=False))]
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
        frames += [_sse({"type": "content_block_delta", "index": i, "delta": d}) for d in deltas]
        frames.append(_sse({"type": "content_block_stop", "index": i}))
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    frames.append(_sse({"type": "message_delta", "delta": delta, "usage": {"output_tokens": message["usage"]["output_tokens"]}}))
    frames.append(_sse({"type": "message_stop"}))
    return frames


_ANTHROPIC_ERRORS = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    402: ("billing_error", "Your credit balance is too low."),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "Not Found"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    500: ("api_error", "Internal server error"),
    504: ("timeout_error", "Request timed out"),
    529: ("overloaded_error", "Overloaded"),
}


def anthropic_error(status: int, message: str | None = None) -> Json:
    kind, default = _ANTHROPIC_ERRORS.get(status, ("api_error" if status >= 500 else "invalid_request_error", f"Error {status}."))
    return {"type": "error", "error": {"type": kind, "message": message or default}, "request_id": "req_011C" + _rand(20)}


# --------------------------------------------------------------------------- the server


class _Script:
    """The answers, consumed in order; an error answer is served `times` times before moving on."""

    def __init__(self, answers: list[Answer] | None) -> None:
        self.answers = list(answers) if answers is not None else None
        self.index = 0
        self.served_current = 0
        self.lock = threading.Lock()

    def next(self) -> Answer | None:
        """The next answer (None past the end); raises LookupError without a script."""
        with self.lock:
            if self.answers is None:
                raise LookupError
            if self.index >= len(self.answers):
                return None
            answer = self.answers[self.index]
            self.served_current += 1
            if not _is_error(answer) or self.served_current >= int(answer.get("times", 1)):
                self.index, self.served_current = self.index + 1, 0
            return answer


def _is_error(answer: Answer) -> bool:
    return "raw" not in answer and int(answer.get("status", 200)) >= 400


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], provider: FakeProvider) -> None:
        self.provider = provider
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the FQDN, which can stall on hosts without DNS.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]  # type: ignore[assignment]

    def process_request(self, request: Any, client_address: Any) -> None:
        self.provider._opened(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self.provider._closed(request)
        super().shutdown_request(request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-provider"
    sys_version = ""
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request log is FakeProvider.requests and --log

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_GET

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                data += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline().strip():
                pass
            return data
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _serve(self) -> None:
        provider = self.server.provider
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        path = urlsplit(self.path).path
        if self.command == "POST" and path.endswith("/chat/completions"):
            kind = "openai"
        elif self.command == "POST" and path.endswith("/v1/messages"):
            kind = "anthropic"
        else:
            kind = None
        provider._record({"method": self.command, "path": self.path, "headers": headers, "body": body, "provider": kind})
        try:
            if kind is None:
                looks_anthropic = "anthropic-version" in headers or "x-api-key" in headers or "anthropic" in headers.get("host", "")
                flavour = "anthropic" if looks_anthropic else "openai"
                message = f"Invalid URL ({self.command} {urlsplit(self.path).path})" if flavour == "openai" else None
                self._error(flavour, 404, message)
            elif not isinstance(body, dict):
                self._error(kind, 400, "We could not parse the JSON body of your request.")
            elif missing := [f for f in ("model", "messages", *(("max_tokens",) if kind == "anthropic" else ())) if f not in body]:
                self._error(kind, 400, f"{missing[0]}: Field required")
            else:
                self._answer(kind, body)
        except OSError:  # the client hung up, or stop() did
            self.close_connection = True

    def _answer(self, kind: str, body: Json) -> None:
        provider = self.server.provider
        try:
            answer = provider.responder(kind, body) if provider.responder is not None else provider._script.next()
        except LookupError:
            answer = weather_answer(kind, body)
        if answer is None:
            n = len(provider._script.answers or [])
            message = f"fake provider: the script is used up (it has {n} answers); add answers for this call"
            self._error(kind, 500, message, extra={"x-should-retry": "false"})
            return
        if answer.get("delay_ms"):
            provider._stopping.wait(float(answer["delay_ms"]) / 1000)  # stop() cuts a long delay short
        extra = {str(k): str(v) for k, v in (answer.get("headers") or {}).items()}
        if "raw" in answer:
            self._json(kind, int(answer.get("status", 200)), answer["raw"], extra)
        elif _is_error(answer):
            retry_ms = answer.get("retry_after_ms", 10)
            if retry_ms is not None:
                extra.setdefault("retry-after-ms", str(retry_ms))
            self._error(kind, int(answer["status"]), answer.get("message"), extra)
        elif "raw_events" in answer:
            frames = [
                (b"data: " + (e.encode() if isinstance(e, str) else _compact(e).encode()) + b"\n\n") if kind == "openai" else _sse(e)
                for e in answer["raw_events"]
            ]
            self._stream(kind, frames, extra, cut=bool(answer.get("stream_cut")))
        elif body.get("stream"):
            frames = (openai_events if kind == "openai" else anthropic_events)(answer, body)
            self._stream(kind, frames, extra, cut=bool(answer.get("stream_cut")))
        else:
            payload = (openai_response if kind == "openai" else anthropic_response)(answer, body)
            self._json(kind, 200, payload, extra, cut=bool(answer.get("stream_cut")))

    def _common_headers(self, kind: str, extra: dict[str, str]) -> None:
        rid = "req_" + secrets.token_hex(16)
        if kind == "openai":
            self.send_header("x-request-id", rid)
            self.send_header("openai-version", "2020-10-01")
            self.send_header("openai-processing-ms", str(secrets.randbelow(400) + 50))
        else:
            self.send_header("request-id", "req_011C" + _rand(20))
            self.send_header("anthropic-organization-id", "00000000-0000-4000-8000-000000000000")
        for name, value in extra.items():
            self.send_header(name, value)

    def _json(self, kind: str, status: int, payload: Any, extra: dict[str, str], *, cut: bool = False) -> None:
        data = _compact(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self._common_headers(kind, extra)
        self.end_headers()
        if cut:  # promise the whole body, deliver half, hang up
            self.wfile.write(data[: len(data) // 2])
            self.close_connection = True
            return
        self.wfile.write(data)

    def _error(self, kind: str, status: int, message: str | None, extra: dict[str, str] | None = None) -> None:
        payload = openai_error(status, message) if kind == "openai" else anthropic_error(status, message)
        self._json(kind, status, payload, extra or {})

    def _stream(self, kind: str, frames: list[bytes], extra: dict[str, str], *, cut: bool) -> None:
        provider = self.server.provider
        gzipped = provider.gzip_streams and "gzip" in self.headers.get("Accept-Encoding", "")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        if gzipped:
            self.send_header("Content-Encoding", "gzip")
        self._common_headers(kind, extra)
        self.end_headers()
        compressor = zlib.compressobj(wbits=31) if gzipped else None
        if cut:
            frames = frames[: max(1, len(frames) // 2)]
        for i, frame in enumerate(frames):
            if i and provider.stream_delay_ms:
                provider._stopping.wait(provider.stream_delay_ms / 1000)
            if i and provider.before_event is not None:
                provider.before_event(i)  # a test's gate: e.g. hold event 1 until the client has seen event 0
            data = compressor.compress(frame) + compressor.flush(zlib.Z_SYNC_FLUSH) if compressor else frame
            self._chunk(data)
        if cut:  # no end of the gzip member, no last chunk: the client sees the connection die mid-stream
            self.close_connection = True
            return
        if compressor:
            self._chunk(compressor.flush())
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()


class FakeProvider:
    """The fake provider server. ``FakeProvider(script).start()`` or ``with FakeProvider(script) as fp:``.

    ``url`` is ``http://127.0.0.1:PORT``; ``requests`` lists every request received
    (dicts with ``method``, ``path``, ``headers`` (lowercase names), ``body`` (parsed
    JSON or None) and ``provider`` ("openai", "anthropic" or None));
    ``connections`` counts the TCP connections accepted.
    """

    def __init__(
        self,
        script: list[Answer] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        gzip_streams: bool = False,
        stream_delay_ms: float = 0.0,
        log_path: str | Path | None = None,
        responder: Callable[[str, Json], Answer] | None = None,
        before_event: Callable[[int], None] | None = None,
    ) -> None:
        self.host, self.port = host, port
        self.before_event = before_event  # called before each streamed event after the first, with its index
        self.responder = responder
        self.gzip_streams = gzip_streams
        self.stream_delay_ms = stream_delay_ms
        self.requests: list[Json] = []
        self._connections = 0
        self._script = _Script(script)
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._stopping = threading.Event()
        self.log_path = Path(log_path) if log_path else None
        self._log: TextIO | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def connections(self) -> int:
        return self._connections

    def start(self) -> FakeProvider:
        self._stopping.clear()
        if self.log_path is not None:
            self._log = self.log_path.open("a", encoding="utf-8")
        self._server = _Server((self.host, self.port), self)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="fake-provider", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and hang up every open connection (pooled keep-alive ones included)."""
        self._stopping.set()
        if self._server is not None:
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
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _opened(self, sock: socket.socket) -> None:
        with self._lock:
            self._connections += 1
            self._open.add(sock)

    def _closed(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)

    def _record(self, request: Json) -> None:
        with self._lock:
            self.requests.append(request)
            if self._log is not None:
                self._log.write(json.dumps(request, ensure_ascii=False) + "\n")
                self._log.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A scripted fake OpenAI/Anthropic provider on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("--script", type=Path, help="JSON file holding the list of answers (default: the rule-based weather model)")
    parser.add_argument("--log", type=Path, help="append every received request to this JSONL file")
    parser.add_argument("--responder", choices=["claude-code"], help="answer by reading each request (examples/claude_code_model.py)")
    parser.add_argument("--gzip-streams", action="store_true", help="gzip SSE streams for clients that accept gzip")
    parser.add_argument("--stream-delay-ms", type=float, default=0.0, help="pause between SSE events")
    args = parser.parse_args(argv)
    script = json.loads(args.script.read_text(encoding="utf-8")) if args.script else None
    if script is not None and not isinstance(script, list):
        parser.error("--script must hold a JSON list of answers")
    responder: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
    if args.responder == "claude-code":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from claude_code_model import respond as responder
    provider = FakeProvider(
        script, port=args.port, gzip_streams=args.gzip_streams, stream_delay_ms=args.stream_delay_ms, log_path=args.log, responder=responder
    )
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    with provider:
        print(f"fake provider listening on {provider.url}", flush=True)
        while not done.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
