"""Server-side tools are model output: recorded in neutral parts, served back as the provider sent them, parsed by the real SDKs.

For each API, a recorded answer that used a server-side tool (Anthropic's web
search with citations, container and counts; the Responses API's web_search_call
with url citations; Gemini's Google Search grounding) decodes to neutral parts
with no provider id in them, is encoded whole and streamed, and the provider's
own SDK parses both (strict validation where the SDK has it) with the tool's
blocks, items or metadata in place. The served blocks sent back in the history
map to the same call-N, and a cassette holding them verifies.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from neutral_parts import listed, server_tool_call

from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.codecs import Codec, codec_named, parse_stream, stream_content_type
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.codecs.verified import verify_trace

if TYPE_CHECKING:
    from openai.types.responses import Response  # the SDK is imported where it is used

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CREATED_MS = 1_750_000_000_123

WEB_SEARCH_RESULT = [
    {
        "type": "web_search_result",
        "url": "https://weather.example/paris",
        "title": "Paris",
        "encrypted_content": "EqgfCioIARgB",
        "page_age": "1 day",
    }
]
CITATION = {
    "type": "web_search_result_location",
    "url": "https://weather.example/paris",
    "title": "Paris",
    "encrypted_index": "Eo8BCioIAhgB",
    "cited_text": "Sunny, 24 °C",
}
ANTHROPIC_ANSWER: dict[str, Any] = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [
        {"type": "text", "text": "I'll search for that."},
        {"type": "server_tool_use", "id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE", "name": "web_search", "input": {"query": "paris weather"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE", "content": WEB_SEARCH_RESULT},
        {"type": "text", "text": "It is sunny in Paris", "citations": [CITATION]},
        {"type": "text", "text": ", 24 °C."},
    ],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "container": {"id": "container_011CPR5CNjB747bApND2pnHS", "expires_at": "2026-12-01T12:00:00Z"},
    "usage": {"input_tokens": 2100, "output_tokens": 80, "server_tool_use": {"web_search_requests": 1}},
}
RESPONSES_ANSWER: dict[str, Any] = {
    "id": "resp_68a0c9c2b3c4",
    "object": "response",
    "created_at": 1750000000,
    "status": "completed",
    "model": "gpt-5",
    "output": [
        {"id": "rs_68a0c9c2", "type": "reasoning", "summary": [], "encrypted_content": "gAAAAABo"},
        {
            "id": "ws_68a0c9c2d5e6",
            "type": "web_search_call",
            "status": "completed",
            "action": {"type": "search", "query": "paris weather"},
        },
        {
            "id": "msg_68a0c9c3",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [
                {
                    "type": "output_text",
                    "text": "Sunny, 24 °C (weather.example).",
                    "annotations": [
                        {
                            "type": "url_citation",
                            "start_index": 14,
                            "end_index": 29,
                            "url": "https://weather.example/paris",
                            "title": "Paris",
                        }
                    ],
                    "logprobs": [],
                }
            ],
        },
    ],
    "usage": {"input_tokens": 900, "output_tokens": 40, "total_tokens": 940},
}
GROUNDING = {
    "webSearchQueries": ["paris weather"],
    "searchEntryPoint": {"renderedContent": "<div>paris weather</div>"},
    "groundingChunks": [{"web": {"uri": "https://weather.example/paris", "title": "weather.example"}}],
    "groundingSupports": [
        {"segment": {"startIndex": 0, "endIndex": 12, "text": "Sunny, 24 °C"}, "groundingChunkIndices": [0], "confidenceScores": [0.93]}
    ],
}
GEMINI_ANSWER: dict[str, Any] = {
    "candidates": [
        {
            "content": {"parts": [{"text": "Sunny, 24 °C in Paris."}], "role": "model"},
            "finishReason": "STOP",
            "index": 0,
            "groundingMetadata": GROUNDING,
        }
    ],
    "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 8, "totalTokenCount": 18},
    "modelVersion": "gemini-2.5-flash",
    "responseId": "abc123",
}
ANSWERS = {
    "anthropic": ANTHROPIC_ANSWER,
    "bedrock": ANTHROPIC_ANSWER,
    "vertex-anthropic": ANTHROPIC_ANSWER,
    "openai-responses": RESPONSES_ANSWER,
    "gemini": GEMINI_ANSWER,
}


def _request(codec: Codec, ids: CallIds, *, stream: bool) -> DecodedRequest:
    """The codec's first recorded request (its path names the model for the clouds)."""
    data = json.loads(sorted((FIXTURES / codec.NAME).glob("*.json"))[0].read_text())
    call = data.get("calls", [data])[0]
    bare, _, query = data.get("path", "").partition("?")
    request = codec.decode_request(json.dumps(call["request"]).encode(), ids, path=bare, query=query)
    request.stream = stream
    return request


def _encoded(codec: Codec, output: Mapping[str, Any], request: DecodedRequest, ids: CallIds, stream: bool) -> bytes:
    if stream:
        return codec.encode_stream(output, request=request, ids=ids, created_ms=CREATED_MS)
    return json.dumps(codec.encode_response(output, request=request, ids=ids, created_ms=CREATED_MS)).encode()


def test_an_anthropic_web_search_answer_is_kept_block_by_block_without_provider_ids() -> None:
    codec, ids = codec_named("anthropic"), CallIds()
    output = codec.decode_response(json.dumps(ANTHROPIC_ANSWER).encode(), ids, _request(codec, ids, stream=False))
    assert output["type"] == "final_answer"
    assert output["text"] == "I'll search for that.It is sunny in Paris, 24 °C."  # what a reader that predates parts sees
    assert [p["type"] for p in output["parts"]] == ["text", "server_tool_call", "server_tool_result", "text", "text"]
    assert output["parts"][1] == {
        "type": "server_tool_call",
        "toolCallId": "call-0",
        "toolName": "web_search",
        "toolInput": {"query": "paris weather"},
    }
    assert output["parts"][2] == {
        "type": "server_tool_result",
        "toolCallId": "call-0",
        "kind": "web_search_tool_result",
        "result": WEB_SEARCH_RESULT,
    }
    assert output["parts"][3]["citations"] == [CITATION]
    assert output["container"] == {"expiresAt": "2026-12-01T12:00:00Z"}
    assert output["serverToolUse"] == {"web_search": 1}
    text = json.dumps(output)
    assert "srvtoolu_" not in text and "container_0" not in text and "msg_01" not in text


@pytest.mark.parametrize("name", list(ANSWERS))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_server_tool_answer_round_trips(name: str, stream: bool) -> None:
    codec, ids = codec_named(name), CallIds()
    request = _request(codec, ids, stream=stream)
    output = codec.decode_response(json.dumps(ANSWERS[name]).encode(), ids, request)
    body = _encoded(codec, output, request, CallIds(), stream)
    again = codec.aggregate_stream(parse_stream(codec, body)) if stream else json.loads(body)
    assert codec.decode_response(again, CallIds(), request) == output


@pytest.mark.parametrize("name", ["anthropic", "openai-responses"])
def test_the_served_calls_sent_back_map_to_their_call_n(name: str) -> None:
    codec, ids = codec_named(name), CallIds()
    request = _request(codec, ids, stream=False)
    output = codec.decode_response(json.dumps(ANSWERS[name]).encode(), ids, request)
    replay = CallIds()
    body = codec.encode_response(output, request=request, ids=replay, created_ms=CREATED_MS)
    if name == "anthropic":
        history: dict[str, Any] = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 100,
            "messages": [
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": body["content"]},
                {"role": "user", "content": "Thanks"},
            ],
        }
    else:
        history = {
            "model": "gpt-5",
            "input": [{"role": "user", "content": "Weather?"}, *body["output"], {"role": "user", "content": "Thanks"}],
        }
    sent = codec.decode_request(json.dumps(history).encode(), replay).model_input["messages"][1]["content"]
    calls = [server_tool_call(p) for p in listed(sent) if p["type"] == "server_tool_call"]
    assert [c["toolCallId"] for c in calls] == ["call-0"]
    assert calls[0]["toolInput"] == next(p for p in output["parts"] if p["type"] == "server_tool_call")["toolInput"]


def test_a_cassette_with_server_tool_parts_verifies() -> None:
    codec, ids = codec_named("anthropic"), CallIds()
    tools = [{"type": "web_search_20250305", "name": "web_search", "max_uses": 5, "allowed_domains": ["weather.example"]}]
    body = {"model": "claude-sonnet-4-6", "max_tokens": 100, "tools": tools, "messages": [{"role": "user", "content": "Weather?"}]}
    model_input = codec.decode_request(json.dumps(body).encode(), ids).model_input
    assert model_input["tools"] == [{"name": "web_search", "builtin": {k: v for k, v in tools[0].items() if k != "name"}}]
    output = codec.decode_response(json.dumps(ANTHROPIC_ANSWER).encode(), ids, codec.decode_request(json.dumps(body).encode(), CallIds()))
    trace = Trace.new()
    trace.append("model_input", dict(model_input))
    trace.append("model_output", dict(output))
    trace.append("metadata", {"event": "run_completed", "status": "success", "result": output["text"]})
    assert verify_trace(trace) == []


# --- the real SDKs --------------------------------------------------------------------


class _OneShot:
    def __init__(self) -> None:
        self.answer: tuple[dict[str, str], bytes] = ({}, b"")
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                headers, body = outer.answer
                self.send_response(200)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()


@pytest.fixture(scope="module")
def one_shot() -> Iterator[_OneShot]:
    server = _OneShot()
    yield server
    server.server.shutdown()
    server.server.server_close()


def _anthropic_client(name: str, url: str) -> tuple[Any, str]:
    import anthropic

    if name == "bedrock":
        client: Any = anthropic.AnthropicBedrock(
            base_url=url, aws_access_key="AKIAFAKEFAKEFAKEFAKE", aws_secret_key="fake", aws_region="us-east-1", max_retries=0
        )
        return client, "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    if name == "vertex-anthropic":
        return anthropic.AnthropicVertex(
            base_url=url, region="us-east5", project_id="p", access_token="ya29.fake", max_retries=0
        ), "claude-sonnet-4-5@20250929"
    return anthropic.Anthropic(base_url=url, api_key="k", max_retries=0, _strict_response_validation=True), "claude-sonnet-4-6"


def _anthropic_blocks(name: str, url: str, stream: bool) -> list[Any]:
    client, model = _anthropic_client(name, url)
    args: Any = {"model": model, "max_tokens": 100, "messages": [{"role": "user", "content": "Weather?"}]}
    args["tools"] = [{"type": "web_search_20250305", "name": "web_search"}]
    if stream:
        with client.messages.stream(**args) as s:
            message = s.get_final_message()
    else:
        message = client.messages.create(**args)
    assert message.container is not None and message.container.id.startswith("container_bb")
    assert message.usage.server_tool_use is not None and message.usage.server_tool_use.web_search_requests == 1
    return list(message.content)


@pytest.mark.parametrize("name", ["anthropic", "bedrock", "vertex-anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_the_anthropic_sdk_parses_served_server_tool_blocks(name: str, stream: bool, one_shot: _OneShot) -> None:
    codec, ids = codec_named(name), CallIds()
    request = _request(codec, ids, stream=stream)
    output = codec.decode_response(json.dumps(ANTHROPIC_ANSWER).encode(), ids, request)
    one_shot.answer = (
        {"content-type": stream_content_type(codec) if stream else "application/json"},
        _encoded(codec, output, request, CallIds(), stream),
    )
    blocks = _anthropic_blocks(name, one_shot.url, stream)
    assert [b.type for b in blocks] == ["text", "server_tool_use", "web_search_tool_result", "text", "text"]
    assert blocks[1].id == blocks[2].tool_use_id == "srvtoolu_bb0"
    assert blocks[1].input == {"query": "paris weather"}
    assert blocks[2].content[0].url == "https://weather.example/paris"
    assert blocks[2].content[0].encrypted_content == "EqgfCioIARgB"
    assert blocks[3].citations is not None and blocks[3].citations[0].cited_text == "Sunny, 24 °C"
    assert "".join(b.text for b in blocks if b.type == "text") == output["text"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_the_openai_sdk_parses_a_served_web_search_call(stream: bool, one_shot: _OneShot) -> None:
    import openai

    codec, ids = codec_named("openai-responses"), CallIds()
    request = _request(codec, ids, stream=stream)
    output = codec.decode_response(json.dumps(RESPONSES_ANSWER).encode(), ids, request)
    one_shot.answer = (
        {"content-type": "text/event-stream" if stream else "application/json"},
        _encoded(codec, output, request, CallIds(), stream),
    )
    client = openai.OpenAI(base_url=one_shot.url + "/v1", api_key="k", max_retries=0, _strict_response_validation=True)
    tools: Any = [{"type": "web_search"}]
    response: Response
    if stream:
        with client.responses.stream(model="gpt-5", input="Weather?", tools=tools) as s:
            response = s.get_final_response()
    else:
        response = client.responses.create(model="gpt-5", input="Weather?", tools=tools)
    assert [i.type for i in response.output] == ["reasoning", "web_search_call", "message"]
    call = response.output[1]
    assert call.type == "web_search_call" and call.id == "ws_bb0" and call.status == "completed"
    assert call.action.type == "search" and call.action.query == "paris weather"
    message = response.output[2]
    assert message.type == "message" and message.content[0].type == "output_text"
    annotation = message.content[0].annotations[0]
    assert annotation.type == "url_citation" and annotation.url == "https://weather.example/paris"
    assert response.output_text == "Sunny, 24 °C (weather.example)."


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_google_genai_parses_served_grounding_metadata(stream: bool, one_shot: _OneShot) -> None:
    from google import genai
    from google.genai import types

    codec, ids = codec_named("gemini"), CallIds()
    request = _request(codec, ids, stream=stream)
    output = codec.decode_response(json.dumps(GEMINI_ANSWER).encode(), ids, request)
    assert output["grounding"] == {"groundingMetadata": GROUNDING}
    one_shot.answer = (
        {"content-type": "text/event-stream" if stream else "application/json"},
        _encoded(codec, output, request, CallIds(), stream),
    )
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=one_shot.url, client_args={"trust_env": False}))
    config = types.GenerateContentConfig(tools=[types.Tool(google_search=types.GoogleSearch())])
    if stream:
        chunks = list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="Weather?", config=config))
    else:
        chunks = [client.models.generate_content(model="gemini-2.5-flash", contents="Weather?", config=config)]
    metadata = [c.candidates[0].grounding_metadata for c in chunks if c.candidates and c.candidates[0].grounding_metadata]
    assert len(metadata) == 1
    assert metadata[0].web_search_queries == ["paris weather"]
    assert metadata[0].grounding_chunks is not None and metadata[0].grounding_chunks[0].web is not None
    assert metadata[0].grounding_chunks[0].web.uri == "https://weather.example/paris"
    assert "".join(c.text or "" for c in chunks) == "Sunny, 24 °C in Paris."


# --- bad and edge input ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "field"),
    [
        ({"type": "server_tool_use", "name": "web_search", "input": {}}, "content[0]"),
        ({"type": "web_search_tool_result", "content": []}, "content[0].tool_use_id"),
    ],
)
def test_a_malformed_server_block_is_a_named_error_and_uses_no_call_id(block: dict[str, Any], field: str) -> None:
    from blackbox_mitm.errors import BlackboxUnsupportedError

    codec, ids = codec_named("anthropic"), CallIds()
    body = {**ANTHROPIC_ANSWER, "content": [block, {"type": "text", "text": "x"}]}
    with pytest.raises(BlackboxUnsupportedError) as err:
        codec.decode_response(json.dumps(body).encode(), ids, _request(codec, CallIds(), stream=False))
    assert err.value.field == field
    assert ids.next_index() == 0


def test_an_anthropic_answer_with_citations_alone_keeps_them() -> None:
    codec = codec_named("anthropic")
    body = {**ANTHROPIC_ANSWER, "content": [{"type": "text", "text": "Paris.", "citations": [CITATION]}], "container": None}
    output = codec.decode_response(json.dumps(body).encode(), CallIds(), _request(codec, CallIds(), stream=False))
    assert output["parts"] == [{"type": "text", "text": "Paris.", "citations": [CITATION]}]
    assert "container" not in output


def test_a_hosted_call_item_without_an_id_in_the_history_is_still_a_part() -> None:
    codec, ids = codec_named("openai-responses"), CallIds()
    item = {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "q"}}
    body = {"model": "gpt-5", "input": [{"role": "user", "content": "Hi"}, item, {"role": "user", "content": "And?"}]}
    messages = codec.decode_request(json.dumps(body).encode(), ids).model_input["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": [
            {
                "type": "server_tool_call",
                "toolCallId": "call-0",
                "toolName": "web_search_call",
                "toolInput": {k: v for k, v in item.items() if k != "type"},
            }
        ],
    }


def test_gemini_url_context_and_google_search_are_builtin_definitions() -> None:
    codec = codec_named("gemini")
    body = {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}], "tools": [{"googleSearch": {}}, {"urlContext": {}}]}
    tools = codec.decode_request(json.dumps(body).encode(), CallIds(), path="/v1beta/models/gemini-2.5-flash:generateContent").model_input[
        "tools"
    ]
    assert tools == [{"name": "googleSearch", "builtin": {"googleSearch": {}}}, {"name": "urlContext", "builtin": {"urlContext": {}}}]
