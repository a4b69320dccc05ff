"""The real ``openai`` SDK parses what the Responses codec synthesizes, over real HTTP on 127.0.0.1.

A small server decodes each ``POST /v1/responses`` with the codec and answers it
from a queue of neutral model outputs (``encode_response`` / ``encode_stream``),
or with ``encode_error`` when the request is refused: a replay in miniature.
Every shape goes through ``responses.create``, ``responses.create(stream=True)``
and the ``responses.stream(...)`` helper, which accumulates the events itself.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai
import pytest
from neutral_parts import listed, tool_result
from openai.types.responses import CustomTool, FunctionTool, ResponseIncompleteEvent, ResponseInputItemParam, Tool

from blackbox_mitm.codecs import openai_responses
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.errors import BlackboxUnsupportedError

CREATED_MS = 1_764_580_000_999
TEXT = "Paris is the capital of France — « la Ville Lumière » 🗼. " * 6
CALLS = [
    {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Oslo", "days": [1, 2], "note": 'ß 日本 "q"'}},
    {"toolCallId": "call-1", "toolName": "get_time", "toolInput": {}},
]
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
    {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}, "strict": True},
    {"type": "custom", "name": "exec", "description": "Run a command"},
]
SHAPES: dict[str, dict[str, Any]] = {
    "text": {"type": "final_answer", "text": TEXT},
    "empty": {"type": "final_answer", "text": ""},
    "length": {"type": "final_answer", "text": "cut", "stop": "length"},
    "refusal": {"type": "final_answer", "text": "I can't help with that.", "stop": "refusal"},
    "parallel_calls_with_text": {"type": "tool_calls", "calls": CALLS, "text": "Let me check both."},
    "custom_call": {"type": "tool_calls", "calls": [{"toolCallId": "call-0", "toolName": "exec", "toolInput": "ls -la | head\n"}]},
}


@dataclass
class Replay:
    base_url: str
    answers: list[dict[str, Any]] = field(default_factory=list)
    ids: CallIds = field(default_factory=CallIds)
    decoded: list[DecodedRequest] = field(default_factory=list)

    def respond(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        try:
            request = openai_responses.decode_request(body, self.ids, path="/v1/responses")
        except BlackboxUnsupportedError as err:
            error = openai_responses.encode_error(err.client_message)
            return error.status, error.headers, error.body
        self.decoded.append(request)
        answer = self.answers.pop(0)
        if request.stream:
            return (
                200,
                {"content-type": "text/event-stream"},
                openai_responses.encode_stream(answer, request=request, ids=self.ids, created_ms=CREATED_MS),
            )
        payload = openai_responses.encode_response(answer, request=request, ids=self.ids, created_ms=CREATED_MS)
        return 200, {"content-type": "application/json"}, json.dumps(payload, ensure_ascii=False).encode()


@pytest.fixture
def replay(monkeypatch: pytest.MonkeyPatch) -> Iterator[Replay]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    state: Replay

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            status, headers, payload = state.respond(body) if self.path == "/v1/responses" else (404, {}, b"{}")
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state = Replay(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def client_for(replay: Replay) -> openai.OpenAI:
    return openai.OpenAI(base_url=replay.base_url, api_key="test", max_retries=0, timeout=10)


def summary(response: Any) -> dict[str, Any]:
    """What an agent reads from a Response: its text, refusal, calls and stop."""
    refusals = [p.refusal for item in response.output if item.type == "message" for p in item.content if p.type == "refusal"]
    calls = [
        (i.type, i.name, i.arguments if i.type == "function_call" else i.input, i.call_id) for i in response.output if i.type != "message"
    ]
    details = response.incomplete_details.reason if response.incomplete_details else None
    return {"text": response.output_text, "refusal": refusals, "calls": calls, "status": response.status, "incomplete": details}


def expected(shape: str) -> dict[str, Any]:
    output = SHAPES[shape]
    refused = output.get("stop") == "refusal"
    calls = [
        ("custom_tool_call", c["toolName"], c["toolInput"], f"call_bb{i}")
        if isinstance(c["toolInput"], str)
        else ("function_call", c["toolName"], json.dumps(c["toolInput"], ensure_ascii=False, separators=(",", ":")), f"call_bb{i}")
        for i, c in enumerate(output.get("calls", []))
    ]
    length = output.get("stop") == "length"
    return {
        "text": "" if refused else output.get("text", ""),
        "refusal": [output["text"]] if refused else [],
        "calls": calls,
        "status": "incomplete" if length else "completed",
        "incomplete": "max_output_tokens" if length else None,
    }


def _named(tool: Tool) -> FunctionTool | CustomTool:
    assert isinstance(tool, FunctionTool | CustomTool), tool
    return tool


def _incomplete(event: object) -> ResponseIncompleteEvent:
    assert isinstance(event, ResponseIncompleteEvent), event
    return event


@pytest.mark.parametrize("shape", list(SHAPES))
def test_create(replay: Replay, shape: str) -> None:
    replay.answers.append(SHAPES[shape])
    response = client_for(replay).responses.create(model="gpt-4.1", input="Weather in Oslo?", tools=TOOLS)
    assert summary(response) == expected(shape)
    assert response.id.startswith("resp_bb") and response.model == "gpt-4.1"
    assert response.usage is not None and response.usage.total_tokens == 0
    assert [_named(t).name for t in response.tools] == ["get_weather", "get_time", "exec"]  # the request's tools, echoed


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_stream_helper_accumulates_the_same_response(replay: Replay, shape: str) -> None:
    replay.answers.append(SHAPES[shape])
    length = SHAPES[shape].get("stop") == "length"
    with client_for(replay).responses.stream(model="gpt-4.1", input="Weather in Oslo?", tools=TOOLS) as stream:
        events = list(stream)
        # A length stop ends in response.incomplete, as the API's does; the helper keeps get_final_response for completed ones.
        final = _incomplete(events[-1]).response if length else stream.get_final_response()
    assert summary(final) == expected(shape)
    assert [e.type for e in events[:2]] == ["response.created", "response.in_progress"]
    assert events[-1].type == ("response.incomplete" if length else "response.completed")


@pytest.mark.parametrize("shape", ["text", "parallel_calls_with_text", "custom_call", "refusal"])
def test_raw_events_rebuild_the_answer(replay: Replay, shape: str) -> None:
    """``create(stream=True)``: an agent adding up deltas itself gets the same text and arguments."""
    replay.answers.append(SHAPES[shape])
    text, refusal = "", ""
    args: dict[int, str] = {}
    numbers: list[int] = []
    final = None
    for event in client_for(replay).responses.create(model="gpt-4.1", input="Weather?", tools=TOOLS, stream=True):
        numbers.append(event.sequence_number)
        if event.type == "response.output_text.delta":
            text += event.delta
        elif event.type == "response.refusal.delta":
            refusal += event.delta
        elif event.type in ("response.function_call_arguments.delta", "response.custom_tool_call_input.delta"):
            args[event.output_index] = args.get(event.output_index, "") + event.delta
        elif event.type == "response.completed":
            final = event.response
    assert numbers == sorted(set(numbers)) and numbers[0] == 0
    assert final is not None and summary(final) == expected(shape)
    assert text == final.output_text
    assert refusal == "".join(expected(shape)["refusal"])
    assert list(args.values()) == [c[2] for c in expected(shape)["calls"]]


def test_a_tool_round_continued_with_previous_response_id(replay: Replay) -> None:
    replay.answers += [SHAPES["parallel_calls_with_text"], {"type": "final_answer", "text": "Cold, and noon."}]
    client = client_for(replay)
    first = client.responses.create(model="gpt-4.1", input="Weather in Oslo, and the time?", tools=TOOLS)
    outputs: list[ResponseInputItemParam] = [
        {"type": "function_call_output", "call_id": i.call_id, "output": "ok"} for i in first.output if i.type == "function_call"
    ]
    second = client.responses.create(model="gpt-4.1", previous_response_id=first.id, input=outputs, tools=TOOLS)
    assert second.output_text == "Cold, and noon." and second.previous_response_id == first.id
    messages = replay.decoded[1].model_input["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [(p["toolCallId"], p["toolName"]) for p in map(tool_result, listed(messages[2]["content"]))] == [
        ("call-0", "get_weather"),
        ("call-1", "get_time"),
    ]


def test_a_refused_request_is_an_api_error_naming_the_field(replay: Replay) -> None:
    with pytest.raises(openai.BadRequestError, match="previous_response_id") as err:
        client_for(replay).responses.create(model="gpt-4.1", previous_response_id="resp_elsewhere", input="hi")
    assert err.value.response.headers["x-should-retry"] == "false"


def test_the_in_stream_error_raises_in_the_sdk(replay: Replay) -> None:
    """What a recording proxy sends in place of a final event it must refuse: the SDK raises APIError."""
    body = openai_responses.encode_stream(SHAPES["text"], request=_request(), ids=CallIds(), created_ms=CREATED_MS)
    cut = body[: body.rindex(b"event: response.completed")] + openai_responses.encode_stream_error("BlackboxUnsupportedError: x: refused")
    replay.respond = lambda body: (200, {"content-type": "text/event-stream"}, cut)  # type: ignore[method-assign]
    with pytest.raises(openai.APIError, match="refused"):
        for _ in client_for(replay).responses.create(model="gpt-4.1", input="hi", stream=True):
            pass


def _request() -> DecodedRequest:
    return openai_responses.decode_request(b'{"model": "gpt-4.1", "input": "hi", "stream": true}', CallIds())


LOGPROBS = [
    {"token": "See", "logprob": -0.01, "bytes": [83, 101, 101], "top_logprobs": []},
    {
        "token": " spec.md",
        "logprob": -0.3,
        "bytes": list(b" spec.md"),
        "top_logprobs": [{"token": " a", "logprob": -2.0, "bytes": [32, 97]}],
    },
]
CITED: dict[str, Any] = {
    "type": "final_answer",
    "text": "See spec.md",
    "parts": [
        {
            "type": "text",
            "text": "See spec.md",
            "annotations": [
                {"type": "file_citation", "file_id": "file-1", "filename": "spec.md", "index": 11},
                {
                    "type": "container_file_citation",
                    "container_id": "cntr_1",
                    "file_id": "cfile_1",
                    "filename": "spec.md",
                    "start_index": 4,
                    "end_index": 11,
                },
            ],
            "tokenLogprobs": LOGPROBS,
        }
    ],
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_the_sdk_parses_served_file_citations_and_logprobs(replay: Replay, stream: bool) -> None:
    replay.answers.append(CITED)
    client = client_for(replay)
    response: Any
    if stream:
        with client.responses.stream(model="gpt-4.1", input="Where?") as helper:
            deltas = [(e.delta, [lp.token for lp in e.logprobs]) for e in helper if e.type == "response.output_text.delta"]
            response = helper.get_final_response()
        assert deltas == [("See", ["See"]), (" spec.md", [" spec.md"])]
    else:
        response = client.responses.create(model="gpt-4.1", input="Where?")
    part: Any = response.output[0].content[0]
    assert part.type == "output_text" and part.text == "See spec.md"
    assert [a.type for a in part.annotations] == ["file_citation", "container_file_citation"]
    assert part.logprobs is not None and [(lp.token, lp.logprob) for lp in part.logprobs] == [("See", -0.01), (" spec.md", -0.3)]
    assert part.logprobs[1].top_logprobs[0].token == " a"


def test_a_developer_message_with_an_image_sent_with_the_sdks_types_is_a_system_message_of_parts(replay: Replay) -> None:
    replay.answers.append(SHAPES["text"])
    url = "data:image/png;base64,iVBORw0KGgo="
    items: list[ResponseInputItemParam] = [
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": "Style:"}, {"type": "input_image", "image_url": url, "detail": "low"}],
        },
        {"role": "user", "content": "Go."},
    ]
    client_for(replay).responses.create(model="gpt-4.1", input=items)
    [request] = replay.decoded
    system = request.model_input["messages"][0]
    assert system["role"] == "system" and listed(system["content"])[1]["type"] == "image"
