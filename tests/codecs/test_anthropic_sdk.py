"""The real ``anthropic`` SDK parses what the codec synthesizes, over real HTTP on 127.0.0.1.

The server is a tiny replayer: it decodes each request with the codec (so what the
SDK sends must decode) and answers with ``encode_response`` / ``encode_stream`` /
``encode_error``. Nothing here touches the internet.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

anthropic = pytest.importorskip("anthropic")

from blackbox_mitm.codecs import anthropic_messages as codec  # noqa: E402
from blackbox_mitm.codecs.base import CallIds, DecodedRequest  # noqa: E402
from blackbox_mitm.errors import BlackboxUnsupportedError  # noqa: E402

MODEL = "claude-sonnet-4-6"
CREATED_MS = 1_767_225_600_000


@dataclass
class Replayer:
    """What the server answers next, and everything it was asked."""

    answer: Callable[[DecodedRequest], dict[str, Any]] | None = None
    ids: CallIds = field(default_factory=CallIds)
    requests: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    decoded: list[DecodedRequest] = field(default_factory=list)
    status: int = 0

    def reply(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        try:
            request = codec.decode_request(body, self.ids)
        except BlackboxUnsupportedError as err:
            error = codec.encode_error(err.client_message, status=400)
            return error.status, error.headers, error.body
        self.decoded.append(request)
        if self.status:
            error = codec.encode_error("upstream is busy", status=self.status)
            return error.status, error.headers, error.body
        assert self.answer is not None
        output = self.answer(request)
        if request.stream:
            stream = codec.encode_stream(output, request=request, ids=self.ids, created_ms=CREATED_MS)
            return 200, {"content-type": "text/event-stream"}, stream
        message = codec.encode_response(output, request=request, ids=self.ids, created_ms=CREATED_MS)
        return 200, {"content-type": "application/json"}, json.dumps(message).encode()


@pytest.fixture
def server() -> Iterator[tuple[Replayer, str]]:
    replayer = Replayer()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            replayer.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            status, headers, payload = replayer.reply(body)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield replayer, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _client(url: str) -> Any:
    # Strict validation: our bodies must match the SDK's types, not merely parse.
    return anthropic.Anthropic(
        base_url=url, api_key="test", http_client=anthropic.DefaultHttpxClient(trust_env=False), _strict_response_validation=True
    )


WEATHER_TOOL: dict[str, Any] = {
    "name": "get_weather",
    "description": "Current weather",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
NARRATED_CALLS: dict[str, Any] = {
    "type": "tool_calls",
    "calls": [
        {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris", "note": "東京 👩‍💻 " + "x" * 150}},
        {"toolCallId": "call-1", "toolName": "get_weather", "toolInput": {"city": "Zürich", "nested": {"a": [1, 2.5, None, True]}}},
    ],
    "text": "Checking both cities — « un instant » ✨",
}


def _calls_of(content: list[Any]) -> list[tuple[str, str, Any]]:
    return [(b.id, b.name, b.input) for b in content if b.type == "tool_use"]


def test_create_parses_a_final_answer(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    replayer.answer = lambda _request: {"type": "final_answer", "text": "Canberra."}
    message = _client(url).messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "Capital of Australia?"}])
    assert [(b.type, b.text) for b in message.content] == [("text", "Canberra.")]
    assert message.stop_reason == "end_turn"
    assert message.model == MODEL
    assert message.id.startswith("msg_bb")
    assert (message.usage.input_tokens, message.usage.output_tokens) == (0, 0)
    assert replayer.decoded[0].model_input["messages"] == [{"role": "user", "content": "Capital of Australia?"}]


def test_create_parses_tool_calls_and_the_next_request_maps_our_ids_back(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    replayer.answer = lambda _request: NARRATED_CALLS
    client = _client(url)
    question = {"role": "user", "content": "Weather in Paris and Zürich?"}
    message = client.messages.create(model=MODEL, max_tokens=256, tools=[WEATHER_TOOL], messages=[question])
    assert message.content[0].type == "text"
    assert message.content[0].text == NARRATED_CALLS["text"]
    assert _calls_of(message.content) == [
        ("toolu_bb0", "get_weather", NARRATED_CALLS["calls"][0]["toolInput"]),
        ("toolu_bb1", "get_weather", NARRATED_CALLS["calls"][1]["toolInput"]),
    ]
    assert message.stop_reason == "tool_use"

    # The agent sends the SDK's own echo of our message back with its results.
    replayer.answer = lambda _request: {"type": "final_answer", "text": "Both mild."}
    results = [
        {"type": "tool_result", "tool_use_id": "toolu_bb0", "content": "18°C"},
        {"type": "tool_result", "tool_use_id": "toolu_bb1", "content": "12°C", "is_error": False},
    ]
    client.messages.create(
        model=MODEL, max_tokens=256, tools=[WEATHER_TOOL], messages=[question, message.to_param(), {"role": "user", "content": results}]
    )
    history = replayer.decoded[1].model_input["messages"]
    assert history[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": NARRATED_CALLS["text"]},
            *({"type": "tool_use", **c} for c in NARRATED_CALLS["calls"]),
        ],
    }
    assert history[2]["content"] == [
        {"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather", "result": "18°C"},
        {"type": "tool_result", "toolCallId": "call-1", "toolName": "get_weather", "result": "12°C"},
    ]


def test_create_reports_a_length_stop(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    replayer.answer = lambda _request: {"type": "final_answer", "text": "Mercury\nVen", "stop": "length"}
    message = _client(url).messages.create(model=MODEL, max_tokens=4, messages=[{"role": "user", "content": "Planets?"}])
    assert message.stop_reason == "max_tokens"
    assert message.content[0].text == "Mercury\nVen"


def test_the_stream_helper_gives_exactly_the_recorded_text_and_calls(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    replayer.answer = lambda _request: NARRATED_CALLS
    with _client(url).messages.stream(
        model=MODEL, max_tokens=256, tools=[WEATHER_TOOL], messages=[{"role": "user", "content": "Weather?"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert replayer.decoded[0].stream is True
    assert text == NARRATED_CALLS["text"]
    assert [b.type for b in final.content] == ["text", "tool_use", "tool_use"]
    assert final.content[0].text == NARRATED_CALLS["text"]
    assert [(name, tool_input) for _id, name, tool_input in _calls_of(final.content)] == [
        (c["toolName"], c["toolInput"]) for c in NARRATED_CALLS["calls"]
    ]
    assert [i for i, _name, _input in _calls_of(final.content)] == ["toolu_bb0", "toolu_bb1"]
    assert final.stop_reason == "tool_use"
    assert final.model == MODEL


def test_the_stream_helper_gives_a_long_final_answer(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    answer = "Ligne ✓ 東京 — 👩‍💻\n" * 500
    replayer.answer = lambda _request: {"type": "final_answer", "text": answer}
    with _client(url).messages.stream(model=MODEL, max_tokens=4096, messages=[{"role": "user", "content": "Write a lot."}]) as stream:
        final = stream.get_final_message()
    assert [(b.type, b.text) for b in final.content] == [("text", answer)]
    assert final.stop_reason == "end_turn"


def test_create_stream_true_yields_the_raw_events(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    replayer.answer = lambda _request: NARRATED_CALLS
    events = list(
        _client(url).messages.create(model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Weather?"}], stream=True)
    )
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert [e.content_block.type for e in events if e.type == "content_block_start"] == ["text", "tool_use", "tool_use"]
    text = "".join(e.delta.text for e in events if e.type == "content_block_delta" and e.delta.type == "text_delta")
    assert text == NARRATED_CALLS["text"]
    for index, call in ((1, NARRATED_CALLS["calls"][0]), (2, NARRATED_CALLS["calls"][1])):
        fragments = [e.delta.partial_json for e in events if e.type == "content_block_delta" and e.index == index]
        assert len(fragments) > 1 or index == 2
        assert json.loads("".join(fragments)) == call["toolInput"]
    assert next(e for e in events if e.type == "message_delta").delta.stop_reason == "tool_use"


def test_a_refusal_surfaces_as_bad_request_naming_the_field_without_a_retry(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    upload: Any = [{"type": "bogus_block", "text": "x"}]
    with pytest.raises(anthropic.BadRequestError) as err:
        _client(url).messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": upload}])
    assert "BlackboxUnsupportedError:" in str(err.value)
    assert "messages[0].content[0]" in str(err.value)
    assert err.value.status_code == 400
    assert err.value.request_id and err.value.request_id.startswith("req_bb")
    assert len(replayer.requests) == 1


def test_x_should_retry_false_stops_retries_even_on_a_retryable_status(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    replayer.status = 529
    with pytest.raises(anthropic.APIStatusError) as err:
        _client(url).messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "Hi"}])
    assert err.value.status_code == 529
    assert "upstream is busy" in str(err.value)
    assert len(replayer.requests) == 1
