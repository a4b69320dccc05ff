"""The real ``openai`` SDK parses what the codec synthesizes, over real HTTP on 127.0.0.1.

A small server decodes each request with the codec, answers it from a queue of
neutral model outputs (``encode_response`` / ``encode_stream``), or with
``encode_error`` when the request is refused: a replay in miniature.
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
from openai.types.chat import ChatCompletionMessageFunctionToolCall, ChatCompletionMessageToolCallUnion

from blackbox_mitm.codecs import openai_chat
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.errors import BlackboxUnsupportedError

CREATED_MS = 1_750_000_000_999
TEXT = "Paris is the capital of France — « la Ville Lumière » 🗼. " * 6
CALLS = [
    {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Oslo", "days": [1, 2], "note": 'ß 日本 "q"'}},
    {"toolCallId": "call-1", "toolName": "get_time", "toolInput": {}},
]
TOOL_CALLS = {"type": "tool_calls", "calls": CALLS, "text": "Let me check both."}
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    },
    {"type": "function", "function": {"name": "get_time"}},
]
USER: list[Any] = [{"role": "user", "content": "Weather in Oslo, and the time?"}]


@dataclass
class Replay:
    """What the server answers with, and what it saw."""

    base_url: str
    answers: list[Any] = field(default_factory=list)  # neutral outputs, or ("error", status) tuples
    ids: CallIds = field(default_factory=CallIds)
    bodies: list[bytes] = field(default_factory=list)
    decoded: list[DecodedRequest] = field(default_factory=list)

    def respond(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        self.bodies.append(body)
        try:
            request = openai_chat.decode_request(body, self.ids)
        except BlackboxUnsupportedError as err:
            error = openai_chat.encode_error(err.client_message)
            return error.status, error.headers, error.body
        self.decoded.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, tuple):
            error = openai_chat.encode_error("BlackboxReplayError: scripted failure", status=answer[1])
            return error.status, error.headers, error.body
        if request.stream:
            sse = openai_chat.encode_stream(answer, request=request, ids=self.ids, created_ms=CREATED_MS)
            return 200, {"content-type": "text/event-stream"}, sse
        payload = openai_chat.encode_response(answer, request=request, ids=self.ids, created_ms=CREATED_MS)
        return 200, {"content-type": "application/json"}, json.dumps(payload, ensure_ascii=False).encode()


@pytest.fixture
def replay(monkeypatch: pytest.MonkeyPatch) -> Iterator[Replay]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    state: Replay

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            if not self.path.endswith("/chat/completions"):
                self.send_error(404)
                return
            status, headers, payload = state.respond(body)
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
    return openai.OpenAI(base_url=replay.base_url, api_key="test", max_retries=2, timeout=10)


# --- non-streaming -----------------------------------------------------------------------


def _function_call(call: ChatCompletionMessageToolCallUnion) -> ChatCompletionMessageFunctionToolCall:
    assert isinstance(call, ChatCompletionMessageFunctionToolCall), call
    return call


def test_final_answer(replay: Replay) -> None:
    replay.answers.append({"type": "final_answer", "text": TEXT})
    completion = client_for(replay).chat.completions.create(model="gpt-4.1", messages=USER)
    assert completion.id.startswith("chatcmpl-bb")
    assert completion.model == "gpt-4.1"
    assert completion.created == CREATED_MS // 1000
    assert completion.object == "chat.completion"
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.content == TEXT
    assert choice.message.refusal is None
    assert choice.message.tool_calls is None
    assert completion.usage is not None and completion.usage.total_tokens == 0


def test_tool_calls_then_the_next_request_maps_our_ids_back(replay: Replay) -> None:
    replay.answers += [TOOL_CALLS, {"type": "final_answer", "text": "Cold, and noon."}]
    client = client_for(replay)
    first = client.chat.completions.create(model="gpt-4.1", messages=USER, tools=TOOLS)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me check both."
    calls = [_function_call(c) for c in choice.message.tool_calls or []]
    assert [(c.id, c.type, c.function.name) for c in calls] == [
        ("call_bb0", "function", "get_weather"),
        ("call_bb1", "function", "get_time"),
    ]
    assert [json.loads(c.function.arguments) for c in calls] == [c["toolInput"] for c in CALLS]

    # The agent sends the assistant message back as the SDK dumps it, then its tool results.
    history = [*USER, choice.message.model_dump(exclude_none=True)]
    history += [
        {"role": "tool", "tool_call_id": "call_bb0", "content": "-3 °C"},
        {"role": "tool", "tool_call_id": "call_bb1", "content": "12:00"},
    ]
    second = client.chat.completions.create(model="gpt-4.1", messages=history, tools=TOOLS)
    assert second.choices[0].message.content == "Cold, and noon."
    assert replay.decoded[1].model_input["messages"][1:] == [
        {"role": "assistant", "content": [{"type": "text", "text": "Let me check both."}] + [{"type": "tool_use", **c} for c in CALLS]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather", "result": "-3 °C"},
                {"type": "tool_result", "toolCallId": "call-1", "toolName": "get_time", "result": "12:00"},
            ],
        },
    ]


def test_refusal_and_length(replay: Replay) -> None:
    replay.answers += [
        {"type": "final_answer", "text": "I can't help with that.", "stop": "refusal"},
        {"type": "final_answer", "text": "Once", "stop": "length"},
    ]
    client = client_for(replay)
    refused = client.chat.completions.create(model="gpt-4o", messages=USER).choices[0]
    assert (refused.message.content, refused.message.refusal, refused.finish_reason) == (None, "I can't help with that.", "stop")
    cut = client.chat.completions.create(model="gpt-4o", messages=USER, max_completion_tokens=1).choices[0]
    assert (cut.message.content, cut.finish_reason) == ("Once", "length")


# --- streaming ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [{"type": "final_answer", "text": TEXT}, {"type": "final_answer", "text": ""}, TOOL_CALLS],
    ids=["text", "empty_text", "tool_calls"],
)
def test_stream_helper_accumulates_exactly(replay: Replay, answer: dict[str, Any]) -> None:
    replay.answers.append(answer)
    deltas: list[str] = []
    done_calls: list[tuple[int, str, str]] = []
    with client_for(replay).chat.completions.stream(model="gpt-4.1", messages=USER, tools=TOOLS) as stream:
        for event in stream:
            if event.type == "content.delta":
                deltas.append(event.delta)
            elif event.type == "tool_calls.function.arguments.done":
                done_calls.append((event.index, event.name, event.arguments))
        final = stream.get_final_completion()
    message = final.choices[0].message
    assert "".join(deltas) == answer["text"] == message.content
    expected = [
        (n, c["toolName"], json.dumps(c["toolInput"], ensure_ascii=False, separators=(",", ":")))
        for n, c in enumerate(answer.get("calls", []))
    ]
    assert done_calls == expected
    assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []] == [
        (f"call_bb{n}", c["toolName"], c["toolInput"]) for n, c in enumerate(answer.get("calls", []))
    ]
    assert final.choices[0].finish_reason == ("tool_calls" if answer.get("calls") else "stop")
    assert replay.decoded[0].stream is True


def test_stream_helper_refusal(replay: Replay) -> None:
    replay.answers.append({"type": "final_answer", "text": "No, sorry.", "stop": "refusal"})
    with client_for(replay).chat.completions.stream(model="gpt-4.1", messages=USER) as stream:
        refusals = [event.delta for event in stream if event.type == "refusal.delta"]
        final = stream.get_final_completion()
    assert "".join(refusals) == "No, sorry." == final.choices[0].message.refusal
    assert final.choices[0].message.content is None


@pytest.mark.parametrize("include_usage", [False, True])
@pytest.mark.parametrize(
    "answer", [{"type": "final_answer", "text": TEXT}, TOOL_CALLS, {**TOOL_CALLS, "stop": "length"}], ids=["text", "tool_calls", "length"]
)
def test_create_stream_chunks(replay: Replay, answer: dict[str, Any], include_usage: bool) -> None:
    replay.answers.append(answer)
    extra: dict[str, Any] = {"stream_options": {"include_usage": True}} if include_usage else {}
    chunks = list(client_for(replay).chat.completions.create(model="gpt-4.1", messages=USER, tools=TOOLS, stream=True, **extra))
    assert replay.decoded[0].include_usage is include_usage
    assert len({(c.id, c.created, c.model) for c in chunks}) == 1
    text = ""
    calls: dict[int, dict[str, str]] = {}
    finish = []
    roles = []
    for chunk in chunks:
        for choice in chunk.choices:
            roles.append(choice.delta.role)
            text += choice.delta.content or ""
            for tc in choice.delta.tool_calls or []:
                # Accumulate naively, as many agents do: a repeated id or name would show.
                acc = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                acc["id"] += tc.id or ""
                acc["name"] += (tc.function.name if tc.function else None) or ""
                acc["arguments"] += (tc.function.arguments if tc.function else None) or ""
            if choice.finish_reason:
                finish.append(choice.finish_reason)
    assert roles[0] == "assistant" and set(roles[1:]) == {None}
    assert text == answer["text"]
    assert [calls[n]["id"] for n in sorted(calls)] == [f"call_bb{n}" for n in range(len(answer.get("calls", [])))]
    assert [(calls[n]["name"], json.loads(calls[n]["arguments"])) for n in sorted(calls)] == [
        (c["toolName"], c["toolInput"]) for c in answer.get("calls", [])
    ]
    assert finish == [{"final_answer": "stop", "tool_calls": "tool_calls"}[answer["type"]] if "stop" not in answer else "length"]
    if include_usage:
        assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 0
        assert all(c.usage is None for c in chunks[:-1])
    else:
        assert all(c.choices and c.usage is None for c in chunks)


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"n": 2}, "n"),
        ({"messages": [{"role": "user", "content": "hi", "name": "alice"}]}, "messages[0].name"),
        ({"stream": True, "web_search_options": {}}, "web_search_options"),
    ],
)
def test_refusal_surfaces_as_bad_request_without_retry(replay: Replay, kwargs: dict[str, Any], field: str) -> None:
    call: dict[str, Any] = {"model": "gpt-4.1", "messages": USER, **kwargs}
    with pytest.raises(openai.BadRequestError) as err:
        client_for(replay).chat.completions.create(**call)
    assert err.value.status_code == 400
    assert f"BlackboxUnsupportedError: {field}: " in err.value.message
    assert err.value.code == "blackbox"
    assert err.value.type == "invalid_request_error"
    assert err.value.request_id is not None and err.value.request_id.startswith("req_bb")
    assert len(replay.bodies) == 1


def test_server_error_is_not_retried(replay: Replay) -> None:
    replay.answers.append(("error", 500))
    with pytest.raises(openai.InternalServerError) as err:
        client_for(replay).chat.completions.create(model="gpt-4.1", messages=USER)
    assert "BlackboxReplayError: scripted failure" in err.value.message
    assert len(replay.bodies) == 1  # 500 is retried by default: x-should-retry: false stops it
