"""A scripted fake OpenAI Responses API speaking WebSocket (and HTTP + SSE) on 127.0.0.1.

The stand-in for ``wss://api.openai.com/v1/responses`` in the WebSocket
end-to-end tests (Codex CLI). Written from the wire format as Codex uses it
(shared/providers.md §5, /work/notes/codex_wire.md), not from blackbox_mitm:

* ``GET /v1/responses`` with ``Upgrade: websocket`` opens a socket (refused with
  426, as a server without the transport answers, when ``websocket=False``);
  each ``{"type": "response.create", ...}`` text frame is one turn, answered
  with ``response.*`` events, one per text frame; turns are served in order;
* ``"generate": false`` (a warm-up) is answered ``response.created`` +
  ``response.completed`` with no output and consumes no answer of the script;
* ``previous_response_id`` must name a response of this socket (or, with
  ``store`` not false, of this server): else the API's error frame;
* ``POST /v1/responses`` answers the same events as SSE (or the whole response
  when ``stream`` is not true), so a client that falls back to HTTPS works.

Script: a list of answers, one per model call: ``{"text": "..."}``,
``{"custom_tool": "exec", "input": "..."}``, ``{"function": "name", "arguments":
"{...}"}``, ``{"web_search": "query", "text": "...", "url": "...", "title": "..."}`` (a
``web_search_call`` item the API ran, then the text citing that page; with
``custom_tool`` and ``input`` instead of the text, a call of that tool),
``{"compaction": "opaque text"}`` (a compaction item, the answer to
Codex's ``compaction_trigger``), ``{"error": "message"}`` (an error frame / a
400); any answer may add ``"usage": {"input": N, "output": M}`` (the token counts
it reports), ``"reasoning": "opaque text"`` (a reasoning item with that
``encrypted_content`` first) and ``"cut": true`` (the connection drops after the
first events). ``demand_reasoning``: refuse a call item sent back without its
reasoning item (OpenAI's 400 for a reasoning model with ``store: false``). Past the
end of the script a call gets an error. Every request and message is kept in
``requests``.

Run it alone: ``python examples/fake_responses_ws.py [--port N] [--script FILE.json] [--log FILE.jsonl] [--no-websocket]``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.server import ServerProtocol

Json = dict[str, Any]


def _dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def answer_events(answer: Json, request: Json, response_id: str, n: int) -> list[Json]:
    """The ``response.*`` events of one answer (the ``respond`` of this fake)."""
    seq = itertools.count()
    base: Json = {"id": response_id, "object": "response", "created_at": int(time.time()), "model": request.get("model"), "output": []}
    base["previous_response_id"] = request.get("previous_response_id")
    events: list[Json] = [
        {"type": "response.created", "sequence_number": next(seq), "response": {**base, "status": "in_progress"}},
        {"type": "response.in_progress", "sequence_number": next(seq), "response": {**base, "status": "in_progress"}},
    ]
    if "web_search" in answer:
        items, more = _web_search_events(seq, answer, n)
        events += more
        usage = {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5}
        usage |= {"output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 17}
        done = {**base, "status": "completed", "output": items, "usage": usage}
        events.append({"type": "response.completed", "sequence_number": next(seq), "response": done})
        return events
    if "custom_tool" in answer:
        item = {
            "type": "custom_tool_call",
            "id": f"ctc_{n}",
            "call_id": f"call_{n}",
            "name": answer["custom_tool"],
            "input": answer["input"],
        }
        events += _call_events(seq, item, "input", "response.custom_tool_call_input")
    elif "function" in answer:
        item = {
            "type": "function_call",
            "id": f"fc_{n}",
            "call_id": f"call_{n}",
            "name": answer["function"],
            "arguments": answer["arguments"],
        }
        events += _call_events(seq, item, "arguments", "response.function_call_arguments")
    elif "compaction" in answer:  # remote compaction v2: one opaque item that stands for the history so far
        item = {"type": "compaction", "id": f"cmp_{n}", "encrypted_content": answer["compaction"]}
        events.append({"type": "response.output_item.added", "sequence_number": next(seq), "output_index": 0, "item": item})
        events.append({"type": "response.output_item.done", "sequence_number": next(seq), "output_index": 0, "item": item})
    else:
        item = {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed", "content": []}
        part = {"type": "output_text", "text": answer.get("text", ""), "annotations": []}
        ref = {"output_index": 0, "item_id": item["id"], "content_index": 0}
        events.append({"type": "response.output_item.added", "sequence_number": next(seq), "output_index": 0, "item": item})
        events.append({"type": "response.content_part.added", "sequence_number": next(seq), **ref, "part": {**part, "text": ""}})
        for word in part["text"].split(" ") if part["text"] else []:
            delta = word if events[-1]["type"] != "response.output_text.delta" else " " + word
            events.append({"type": "response.output_text.delta", "sequence_number": next(seq), **ref, "delta": delta, "obfuscation": "x"})
        events.append({"type": "response.output_text.done", "sequence_number": next(seq), **ref, "text": part["text"]})
        events.append({"type": "response.content_part.done", "sequence_number": next(seq), **ref, "part": part})
        item = {**item, "content": [part]}
        events.append({"type": "response.output_item.done", "sequence_number": next(seq), "output_index": 0, "item": item})
    usage = {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5}
    usage |= {"output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 17}
    if "usage" in answer:  # {"input": N, "output": M}: drives a client's usage-based decisions (auto-compaction)
        n_in, n_out = answer["usage"]["input"], answer["usage"]["output"]
        usage |= {"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out}
    done = {**base, "status": "completed", "output": [item], "usage": usage}
    events.append({"type": "response.completed", "sequence_number": next(seq), "response": done})
    if "reasoning" in answer:
        events = _with_reasoning(events, {"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": answer["reasoning"]})
    return events


def _web_search_events(seq: Any, answer: Json, n: int) -> tuple[list[Json], list[Json]]:
    """A hosted web search the API ran (a ``web_search_call`` item), then the answer's text citing a page."""
    search = {
        "type": "web_search_call",
        "id": f"ws_{n}",
        "status": "completed",
        "action": {"type": "search", "query": answer["web_search"]},
    }
    at = {"output_index": 0, "item_id": search["id"]}
    events: list[Json] = [
        {
            "type": "response.output_item.added",
            "sequence_number": next(seq),
            "output_index": 0,
            "item": {**search, "status": "in_progress"},
        },
        {"type": "response.web_search_call.in_progress", "sequence_number": next(seq), **at},
        {"type": "response.web_search_call.searching", "sequence_number": next(seq), **at},
        {"type": "response.web_search_call.completed", "sequence_number": next(seq), **at},
        {"type": "response.output_item.done", "sequence_number": next(seq), "output_index": 0, "item": search},
    ]
    if "custom_tool" in answer:  # the search, then a call of the agent's own tool
        call = {
            "type": "custom_tool_call",
            "id": f"ctc_{n}",
            "call_id": f"call_{n}",
            "name": answer["custom_tool"],
            "input": answer["input"],
        }
        ref = {"output_index": 1, "item_id": call["id"]}
        events += [
            {
                "type": "response.output_item.added",
                "sequence_number": next(seq),
                "output_index": 1,
                "item": {**call, "input": "", "status": "in_progress"},
            },
            {"type": "response.custom_tool_call_input.delta", "sequence_number": next(seq), **ref, "delta": call["input"]},
            {"type": "response.custom_tool_call_input.done", "sequence_number": next(seq), **ref, "input": call["input"]},
            {"type": "response.output_item.done", "sequence_number": next(seq), "output_index": 1, "item": {**call, "status": "completed"}},
        ]
        return [search, {**call, "status": "completed"}], events
    cite = {"type": "url_citation", "start_index": 0, "end_index": len(answer["text"]), "url": answer["url"], "title": answer["title"]}
    part = {"type": "output_text", "text": answer["text"], "annotations": [cite]}
    message = {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed", "content": [part]}
    ref = {"output_index": 1, "item_id": message["id"], "content_index": 0}
    events += [
        {"type": "response.output_item.added", "sequence_number": next(seq), "output_index": 1, "item": {**message, "content": []}},
        {"type": "response.content_part.added", "sequence_number": next(seq), **ref, "part": {**part, "text": "", "annotations": []}},
        {"type": "response.output_text.delta", "sequence_number": next(seq), **ref, "delta": answer["text"], "obfuscation": "x"},
        {"type": "response.output_text.annotation.added", "sequence_number": next(seq), **ref, "annotation_index": 0, "annotation": cite},
        {"type": "response.output_text.done", "sequence_number": next(seq), **ref, "text": answer["text"]},
        {"type": "response.content_part.done", "sequence_number": next(seq), **ref, "part": part},
        {"type": "response.output_item.done", "sequence_number": next(seq), "output_index": 1, "item": message},
    ]
    return [search, message], events


def _with_reasoning(events: list[Json], reasoning: Json) -> list[Json]:
    """The events with a reasoning item first (output_index 0), the answer's item after it."""
    out = events[:2]
    out.append({"type": "response.output_item.added", "output_index": 0, "item": reasoning})
    out.append({"type": "response.output_item.done", "output_index": 0, "item": reasoning})
    for event in events[2:]:
        event = dict(event)
        if "output_index" in event:
            event["output_index"] += 1
        if event["type"] == "response.completed":
            event["response"] = {**event["response"], "output": [reasoning, *event["response"]["output"]]}
        out.append(event)
    return [{**event, "sequence_number": k} for k, event in enumerate(out)]


def missing_reasoning(request: Json, issued: set[str]) -> str | None:
    """What OpenAI says of a call item sent back without the reasoning item that came with it (store: false); None when none is missing."""
    sent = request.get("input")
    items: list[Any] = sent if isinstance(sent, list) else []
    for k, item in enumerate(items):
        if not isinstance(item, dict) or item.get("type") not in ("function_call", "custom_tool_call"):
            continue
        before = items[k - 1] if k else {}
        if not (isinstance(before, dict) and before.get("type") == "reasoning" and before.get("encrypted_content") in issued):
            return f"Item '{item.get('id')}' of type '{item['type']}' was provided without its required 'reasoning' item."
    return None


def _call_events(seq: Any, item: Json, field: str, prefix: str) -> list[Json]:
    ref = {"output_index": 0, "item_id": item["id"]}
    text = item[field]
    half = len(text) // 2
    return [
        {
            "type": "response.output_item.added",
            "sequence_number": next(seq),
            "output_index": 0,
            "item": {**item, field: "", "status": "in_progress"},
        },
        {"type": f"{prefix}.delta", "sequence_number": next(seq), **ref, "delta": text[:half]},
        {"type": f"{prefix}.delta", "sequence_number": next(seq), **ref, "delta": text[half:]},
        {"type": f"{prefix}.done", "sequence_number": next(seq), **ref, field: text},
        {"type": "response.output_item.done", "sequence_number": next(seq), "output_index": 0, "item": {**item, "status": "completed"}},
    ]


def error_event(status: int, message: str, code: str | None = None) -> Json:
    return {"type": "error", "status": status, "error": {"type": "invalid_request_error", "code": code, "message": message}}


class FakeResponsesWs:
    """``with FakeResponsesWs(script) as fake: fake.url ...`` — HTTP and WebSocket on one port."""

    def __init__(
        self,
        script: list[Json] | None = None,
        *,
        port: int = 0,
        websocket: bool = True,
        log: Path | None = None,
        demand_reasoning: set[str] | None = None,
    ) -> None:
        self.script = list(script or [])
        # demand_reasoning: the encrypted_content of reasoning items this model made (on any instance); a call item sent
        # back without one of them just before it is refused, as OpenAI refuses it for a reasoning model with store false.
        self.demand_reasoning = demand_reasoning
        self.log_file = log
        self.websocket = websocket
        self.requests: list[Json] = []
        self.calls = 0  # responses made (warm-ups included): their ids
        self.answered = 0  # script answers used
        self.stored: set[str] = set()  # response ids any socket or POST may continue (store not false)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self._server.daemon_threads = True
        self._server.fake = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeResponsesWs:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def messages(self, transport: str | None = None) -> list[Json]:
        """The model requests (and socket messages) received, optionally of one transport ("ws" or "http")."""
        return [r for r in self.requests if transport is None or r["transport"] == transport]

    def log(self, entry: Json) -> None:
        with self._lock:
            self.requests.append(entry)
            if self.log_file is not None:
                with self.log_file.open("a") as f:
                    f.write(_dump(entry) + "\n")

    def turn(self, request: Json, known: set[str]) -> tuple[list[Json], bool]:
        """The events answering one model call (``known``: response ids this connection may continue), and whether to cut."""
        previous = request.get("previous_response_id")
        if previous is not None and previous not in known and previous not in self.stored:
            return [error_event(400, f"Previous response with id '{previous}' not found.", "previous_response_not_found")], False
        with self._lock:
            n = self.calls
            self.calls += 1
        response_id = f"resp_fake{n}"
        missing = missing_reasoning(request, self.demand_reasoning) if self.demand_reasoning is not None else None
        if missing is not None:
            return [error_event(400, missing)], False
        if request.get("generate") is False:
            created: Json = {"id": response_id, "object": "response", "status": "in_progress", "output": [], "model": request.get("model")}
            events = [
                {"type": "response.created", "sequence_number": 0, "response": created},
                {"type": "response.completed", "sequence_number": 1, "response": {**created, "status": "completed"}},
            ]
            self._keep(request, response_id, known)
            return events, False
        with self._lock:
            index = self.answered
            self.answered += 1
        if index >= len(self.script):
            return [error_event(500, f"fake_responses_ws: the script has {len(self.script)} answers; this is call {index + 1}")], False
        answer = self.script[index]
        if "error" in answer:
            return [error_event(400, answer["error"])], False
        self._keep(request, response_id, known)
        return answer_events(answer, request, response_id, n), bool(answer.get("cut"))

    def _keep(self, request: Json, response_id: str, known: set[str]) -> None:
        known.add(response_id)
        if request.get("store", True) is not False:
            with self._lock:
                self.stored.add(response_id)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def fake(self) -> FakeResponsesWs:
        return self.server.fake  # type: ignore[attr-defined, no-any-return]

    def _plain(self, status: int, body: Json) -> None:
        data = _dump(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        path = self.path.split("?", 1)[0]
        is_call = path.endswith("/responses")
        try:
            body = json.loads(raw or b"{}") if is_call else None  # other endpoints' bodies (metrics: protobuf) are not read
        except ValueError:
            self._plain(400, {"error": {"type": "invalid_request_error", "code": None, "message": "the body is not JSON"}})
            return
        self.fake.log({"transport": "http", "path": self.path, "headers": dict(self.headers), "body": body, "call": is_call})
        if not is_call or not isinstance(body, dict):
            self._plain(404, {"error": {"type": "invalid_request_error", "code": "unknown_url", "message": f"Unknown path {path}"}})
            return
        events, cut = self.fake.turn(body, set())
        if events[0]["type"] == "error":
            self._plain(events[0]["status"], {"error": events[0]["error"]})
            return
        if body.get("stream") is not True:
            self._plain(200, events[-1]["response"])
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        for event in events[:3] if cut else events:
            self.wfile.write(f"event: {event['type']}\ndata: {_dump(event)}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True

    def do_GET(self) -> None:
        self.fake.log({"transport": "http", "path": self.path, "headers": dict(self.headers), "body": None, "call": False})
        if self.headers.get("upgrade", "").lower() != "websocket" or not self.path.split("?", 1)[0].endswith("/responses"):
            self._plain(404, {"error": {"type": "invalid_request_error", "code": "unknown_url", "message": f"Unknown path {self.path}"}})
            return
        if not self.fake.websocket:
            self._plain(426, {"error": {"type": "invalid_request_error", "code": None, "message": "WebSockets are not supported here"}})
            return
        _Socket(self).run()


class _Socket:
    """One accepted socket: a sans-I/O websockets protocol on the handler's connection."""

    def __init__(self, handler: _Handler) -> None:
        self.handler = handler
        self.fake = handler.fake
        self.proto = ServerProtocol(extensions=[ServerPerMessageDeflateFactory()], max_size=None)
        self.known: set[str] = set()

    def _flush(self) -> bool:
        """Send what the protocol has queued; False once it says the connection must end (after a close)."""
        open_ = True
        for data in self.proto.data_to_send():
            if data:
                self.handler.wfile.write(data)
            else:
                open_ = False
        self.handler.wfile.flush()
        return open_

    def run(self) -> None:
        self.handler.close_connection = True  # after the socket, the TCP connection ends (the server closes first)
        try:
            if self._handshake():
                self._serve()
        except OSError:  # the client went away
            return
        with contextlib.suppress(OSError):
            self.handler.connection.shutdown(socket.SHUT_RDWR)

    def _handshake(self) -> bool:
        # The handler has read the request already: hand it to the protocol as it came.
        lines = [self.handler.requestline, *(f"{k}: {v}" for k, v in self.handler.headers.items()), "", ""]
        self.proto.receive_data("\r\n".join(lines).encode("latin-1"))
        request = next(e for e in self.proto.events_received() if isinstance(e, Request))
        response = self.proto.accept(request)
        self.proto.send_response(response)
        self._flush()
        return response.status_code == 101

    def _serve(self) -> None:
        parts: list[bytes] = []
        while True:
            data = self.handler.rfile.read1(65536)
            if data:
                self.proto.receive_data(data)
            else:
                self.proto.receive_eof()
            for frame in self.proto.events_received():
                assert isinstance(frame, Frame), frame  # past the handshake, only frames
                if frame.opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
                    parts.append(bytes(frame.data))
                    if frame.fin:
                        if not self._message(b"".join(parts).decode("utf-8", "replace")):
                            return
                        parts = []
            if not self._flush() or not data:
                return

    def _message(self, text: str) -> bool:
        """Answer one client message; False when the connection was cut."""
        try:
            message = json.loads(text)
        except ValueError:
            message = None
        is_call = isinstance(message, dict) and message.get("type") == "response.create" and message.get("generate") is not False
        self.fake.log(
            {"transport": "ws", "path": self.handler.path, "headers": dict(self.handler.headers), "body": message, "call": is_call}
        )
        if not isinstance(message, dict) or message.get("type") != "response.create":
            self._send([error_event(400, "Unsupported message: expected a response.create object")])
            return True
        events, cut = self.fake.turn(message, self.known)
        if cut:
            self._send(events[:3])
            return False  # no close frame: run() drops the connection mid-answer
        self._send(events)
        return True

    def _send(self, events: list[Json]) -> None:
        for event in events:
            self.proto.send_text(_dump(event).encode())
            self._flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", type=Path)
    parser.add_argument("--log", type=Path, help="append every request and message to this file (JSON lines)")
    parser.add_argument("--no-websocket", action="store_true", help="answer the upgrade 426, as a server without the transport")
    args = parser.parse_args()
    script = json.loads(args.script.read_text()) if args.script else []
    with FakeResponsesWs(script, port=args.port, websocket=not args.no_websocket, log=args.log) as fake:
        print(f"fake Responses API (HTTP + WebSocket) on {fake.url}", flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
