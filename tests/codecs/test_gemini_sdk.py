"""The real ``google-genai`` SDK parses what the Gemini codec synthesizes, over real HTTP on 127.0.0.1.

The server is a tiny replayer: it decodes each request with the codec (so what the
SDK sends must decode, path and query included) and answers with
``encode_response`` / ``encode_stream`` / ``encode_error`` / ``encode_stream_error``.
Nothing here touches the internet.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

genai = pytest.importorskip("google.genai")

from google.genai import errors, types  # noqa: E402

from blackbox_mitm.cassette.media import resolving  # noqa: E402
from blackbox_mitm.codecs import gemini as codec  # noqa: E402
from blackbox_mitm.codecs.base import CallIds, DecodedRequest  # noqa: E402
from blackbox_mitm.errors import BlackboxUnsupportedError  # noqa: E402

MODEL = "gemini-2.5-flash"
CREATED_MS = 1_767_225_600_000


@dataclass
class Replayer:
    """What the server answers next, and everything it was asked."""

    answer: Callable[[DecodedRequest], dict[str, Any]] | None = None
    ids: CallIds = field(default_factory=CallIds)
    requests: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    decoded: list[DecodedRequest] = field(default_factory=list)
    stream_error: str | None = None
    media: dict[str, bytes] = field(default_factory=dict)  # the run's media bytes the encoders are lent (cassette/media.py)

    def reply(self, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        with resolving(self.media):
            return self._reply(path, body)

    def _reply(self, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        url = urlsplit(path)
        try:
            request = codec.decode_request(body, self.ids, path=url.path, query=url.query)
        except BlackboxUnsupportedError as err:
            error = codec.encode_error(err.client_message, status=400)
            return error.status, error.headers, error.body
        self.decoded.append(request)
        if self.stream_error is not None:
            return 200, {"content-type": "text/event-stream"}, codec.encode_stream_error(self.stream_error)
        assert self.answer is not None
        output = self.answer(request)
        if request.stream:
            return (
                200,
                {"content-type": "text/event-stream"},
                codec.encode_stream(output, request=request, ids=self.ids, created_ms=CREATED_MS),
            )
        body_obj = codec.encode_response(output, request=request, ids=self.ids, created_ms=CREATED_MS)
        return 200, {"content-type": "application/json"}, json.dumps(body_obj).encode()


@pytest.fixture
def server() -> Iterator[tuple[Replayer, str]]:
    replayer = Replayer()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            replayer.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            status, headers, payload = replayer.reply(self.path, body)
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
    return genai.Client(api_key="test-key-0000", http_options=types.HttpOptions(base_url=url, client_args={"trust_env": False}))


def get_weather(city: str) -> dict[str, Any]:
    """Current weather in a city.

    Args:
        city: the city's name
    """
    return {"city": city, "forecast": "sun", "celsius": 21}


WEATHER = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_weather",
            description="Current weather",
            parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        )
    ]
)
NARRATED_CALLS: dict[str, Any] = {
    "type": "tool_calls",
    "calls": [
        {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris", "note": "東京 👩‍💻 " + "x" * 150}},
        {"toolCallId": "call-1", "toolName": "get_weather", "toolInput": {"city": "Zürich", "nested": {"a": [1, 2.5, None, True]}}},
    ],
    "text": "Checking both cities — « un instant » ✨",
}


def _calls(response: Any) -> list[tuple[str | None, str | None, Any]]:
    return [(c.id, c.name, c.args) for c in response.function_calls or []]


def test_generate_content_parses_a_final_answer(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    client = _client(url)
    replayer.answer = lambda _request: {"type": "final_answer", "text": "Canberra."}
    response = client.models.generate_content(model=MODEL, contents="Capital of Australia?")
    assert response.text == "Canberra."
    assert response.candidates[0].finish_reason == types.FinishReason.STOP
    assert response.model_version == MODEL
    assert response.usage_metadata.total_token_count == 0
    assert response.response_id.startswith("bb")
    path, headers, _body = replayer.requests[0]
    assert path == f"/v1/models/{MODEL}:generateContent"  # google-genai 3 defaults to v1
    assert headers["x-goog-api-key"] == "test-key-0000"
    assert replayer.decoded[0].model_input == {
        "messages": [{"role": "user", "content": "Capital of Australia?"}],
        "tools": [],
        "model": MODEL,
    }


def test_function_calls_parse_and_the_sdks_own_history_maps_back_to_the_same_call_ids(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    replayer.answer = lambda _request: NARRATED_CALLS
    client = _client(url)
    config = types.GenerateContentConfig(tools=[WEATHER], system_instruction="Be brief.", temperature=0.2, max_output_tokens=256)
    question = types.Content(role="user", parts=[types.Part(text="Weather in Paris and Zürich?")])
    response = client.models.generate_content(model=MODEL, contents=[question], config=config)
    assert response.text == NARRATED_CALLS["text"]
    assert _calls(response) == [
        ("gemini-bb0", "get_weather", NARRATED_CALLS["calls"][0]["toolInput"]),
        ("gemini-bb1", "get_weather", NARRATED_CALLS["calls"][1]["toolInput"]),
    ]
    first = response.candidates[0].content.parts[1]
    assert first.function_call and first.thought_signature  # the sentinel, which the SDK sends back as it got it
    assert replayer.decoded[0].model_input["systemPrompt"] == "Be brief."
    assert replayer.decoded[0].model_input["params"] == {"temperature": 0.2, "maxTokens": 256}
    assert replayer.decoded[0].model_input["tools"][0]["inputSchema"]["required"] == ["city"]

    replayer.answer = lambda _request: {"type": "final_answer", "text": "Both mild."}
    results = types.Content(
        role="user",
        parts=[types.Part.from_function_response(name=c.name, response={"celsius": 18 + k}) for k, c in enumerate(response.function_calls)],
    )
    final = client.models.generate_content(model=MODEL, contents=[question, response.candidates[0].content, results], config=config)
    assert final.text == "Both mild."
    echoed = json.loads(replayer.requests[1][2])["contents"][1]["parts"]
    assert [p.get("thoughtSignature") for p in echoed] == [None, "skip_thought_signature_validator", None]
    history = replayer.decoded[1].model_input["messages"]
    assert history[1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": NARRATED_CALLS["text"]}, *({"type": "tool_use", **c} for c in NARRATED_CALLS["calls"])],
    }
    assert history[2]["content"] == [
        {"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather", "result": {"celsius": 18}},
        {"type": "tool_result", "toolCallId": "call-1", "toolName": "get_weather", "result": {"celsius": 19}},
    ]


def test_automatic_function_calling_runs_the_tool_and_sends_its_result_back(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    client = _client(url)
    answers: Iterator[dict[str, Any]] = iter(
        [
            {"type": "tool_calls", "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Oslo"}}]},
            {"type": "final_answer", "text": "Oslo: sun, 21°C."},
        ]
    )
    replayer.answer = lambda _request: next(answers)
    response = client.models.generate_content(
        model=MODEL, contents="Weather in Oslo?", config=types.GenerateContentConfig(tools=[get_weather])
    )
    assert response.text == "Oslo: sun, 21°C."
    assert len(replayer.decoded) == 2
    tools = replayer.decoded[0].model_input["tools"]
    assert [t["name"] for t in tools] == ["get_weather"]
    second = replayer.decoded[1].model_input["messages"]
    assert second[1]["content"] == [{"type": "tool_use", "toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Oslo"}}]
    assert second[2]["content"] == [
        {
            "type": "tool_result",
            "toolCallId": "call-0",
            "toolName": "get_weather",
            "result": {"result": {"city": "Oslo", "forecast": "sun", "celsius": 21}},
        }
    ]


def test_a_length_stop_is_max_tokens(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    client = _client(url)
    replayer.answer = lambda _request: {"type": "final_answer", "text": "Mercury\nVen", "stop": "length"}
    response = client.models.generate_content(model=MODEL, contents="Planets?")
    assert response.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert response.text == "Mercury\nVen"


def test_generate_content_stream_gives_exactly_the_text_and_calls(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    client = _client(url)
    replayer.answer = lambda _request: NARRATED_CALLS
    chunks = list(
        client.models.generate_content_stream(model=MODEL, contents="Weather?", config=types.GenerateContentConfig(tools=[WEATHER]))
    )
    path = replayer.requests[0][0]
    assert path == f"/v1/models/{MODEL}:streamGenerateContent?alt=sse"
    assert replayer.decoded[0].stream is True and replayer.decoded[0].model_input["params"] == {"stream": True}
    assert len(chunks) == 2  # the narration (under one fragment), then the function calls with the finishReason
    assert "".join(c.text or "" for c in chunks if c.candidates[0].content.parts[0].text) == NARRATED_CALLS["text"]
    calls = [call for c in chunks for call in (c.function_calls or [])]
    assert [(c.id, c.name, c.args) for c in calls] == [
        (f"gemini-bb{k}", "get_weather", call["toolInput"]) for k, call in enumerate(NARRATED_CALLS["calls"])
    ]
    assert [c.candidates[0].finish_reason for c in chunks][-1] == types.FinishReason.STOP
    assert all(c.candidates[0].finish_reason is None for c in chunks[:-1])


def test_a_long_streamed_answer_arrives_whole(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    client = _client(url)
    answer = "Ligne ✓ 東京 — 👩‍💻\n" * 500
    replayer.answer = lambda _request: {"type": "final_answer", "text": answer}
    chunks = list(client.models.generate_content_stream(model=MODEL, contents="Write a lot."))
    assert "".join(c.text or "" for c in chunks) == answer
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP


def test_a_chat_sends_its_history_back_and_it_decodes_to_the_same_transcript(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    client = _client(url)
    replayer.answer = lambda request: {"type": "final_answer", "text": f"answer {len(replayer.decoded)}"}
    chat = client.chats.create(model=MODEL)
    assert chat.send_message("first").text == "answer 1"
    assert chat.send_message("second").text == "answer 2"
    assert replayer.decoded[1].model_input["messages"] == [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "answer 1"},
        {"role": "user", "content": "second"},
    ]


def test_a_refusal_is_a_client_error_naming_the_field_without_a_retry(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    client = _client(url)
    with pytest.raises(errors.ClientError) as err:
        client.models.generate_content(model=MODEL, contents="Hi", config=types.GenerateContentConfig(candidate_count=2))
    assert err.value.code == 400
    assert err.value.status == "INVALID_ARGUMENT"
    assert err.value.message is not None
    assert "generationConfig.candidateCount" in err.value.message and "BlackboxUnsupportedError" in err.value.message
    assert len(replayer.requests) == 1


def test_a_built_in_tool_is_refused_by_name(server: tuple[Replayer, str]) -> None:
    _replayer, url = server
    client = _client(url)
    # Maps, file search and computer use are recorded (test_gemini_multimodal.py); an MCP server is not: Google calls it.
    mcp = types.Tool(
        mcp_servers=[types.McpServer(name="docs", streamable_http_transport=types.StreamableHttpTransport(url="https://mcp.example/x"))]
    )
    with pytest.raises(errors.ClientError) as err:
        client.models.generate_content(model=MODEL, contents="Cafes near me", config=types.GenerateContentConfig(tools=[mcp]))
    assert err.value.message is not None and "tools[0].mcpServers" in err.value.message


def test_an_in_stream_error_raises_in_the_sdk(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    client = _client(url)
    replayer.stream_error = "BlackboxUnsupportedError: candidates[0].finishReason: refused"
    with pytest.raises(errors.APIError) as err:
        list(client.models.generate_content_stream(model=MODEL, contents="Hi"))
    assert "candidates[0].finishReason" in str(err.value)


def test_the_v1beta_api_version_decodes_the_same(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    replayer.answer = lambda _request: {"type": "final_answer", "text": "ok"}
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=url, api_version="v1beta", client_args={"trust_env": False}))
    assert client.models.generate_content(model=MODEL, contents="Hi").text == "ok"
    assert "".join(c.text or "" for c in client.models.generate_content_stream(model=MODEL, contents="Hi")) == "ok"
    assert [path for path, _h, _b in replayer.requests] == [
        f"/v1beta/models/{MODEL}:generateContent",
        f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse",
    ]
    assert [d.model for d in replayer.decoded] == [MODEL, MODEL]
    assert replayer.decoded[0].model_input["messages"] == replayer.decoded[1].model_input["messages"]


# -- media: an image in the prompt, an image in the answer ------------------------------------------------

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==")
PNG_SHA = hashlib.sha256(PNG).hexdigest()
IMAGE_ANSWER: dict[str, Any] = {
    "type": "final_answer",
    "text": "Here is your pixel.",
    "content": [
        {"type": "text", "text": "Here is your pixel."},
        {"type": "image", "mediaType": "image/png", "sha256": PNG_SHA, "size": len(PNG)},
    ],
}
IMAGE_CONFIG = types.GenerateContentConfig(response_modalities=["TEXT", "IMAGE"])


def test_an_image_answer_parses_in_the_sdk_byte_for_byte(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    replayer.media = {PNG_SHA: PNG}
    replayer.answer = lambda _request: IMAGE_ANSWER
    client = _client(url)  # held: a client collected mid-call closes its connection pool
    response = client.models.generate_content(model="gemini-2.5-flash-image", contents="Draw a red pixel.", config=IMAGE_CONFIG)
    parts = response.candidates[0].content.parts
    assert parts[0].text == "Here is your pixel."
    assert parts[1].inline_data.mime_type == "image/png" and parts[1].inline_data.data == PNG
    assert replayer.decoded[0].model_input["params"] == {"modalities": ["TEXT", "IMAGE"]}


def test_a_streamed_image_answer_parses_in_the_sdk_byte_for_byte(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    replayer.media = {PNG_SHA: PNG}
    replayer.answer = lambda _request: IMAGE_ANSWER
    client = _client(url)
    chunks = list(client.models.generate_content_stream(model="gemini-2.5-flash-image", contents="Draw.", config=IMAGE_CONFIG))
    parts = [p for c in chunks for p in c.candidates[0].content.parts]
    assert "".join(p.text or "" for p in parts) == "Here is your pixel."
    [image] = [p.inline_data for p in parts if p.inline_data is not None]
    assert image.mime_type == "image/png" and image.data == PNG
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP


def test_an_image_in_the_prompt_and_the_answers_image_sent_back_decode_by_digest(server: tuple[Replayer, str]) -> None:
    replayer, url = server
    replayer.media = {PNG_SHA: PNG}
    replayer.answer = lambda _request: IMAGE_ANSWER
    client = _client(url)
    chat = client.chats.create(model="gemini-2.5-flash-image", config=IMAGE_CONFIG)
    chat.send_message([types.Part.from_bytes(data=PNG, mime_type="image/png"), "Make it bigger."])
    chat.send_message("Thanks.")
    media = {"type": "image", "mediaType": "image/png", "sha256": PNG_SHA, "size": len(PNG)}
    history = replayer.decoded[1].model_input["messages"]
    assert history[0]["content"] == [media, {"type": "text", "text": "Make it bigger."}]
    assert history[1] == {"role": "assistant", "content": [{"type": "text", "text": "Here is your pixel."}, media]}
