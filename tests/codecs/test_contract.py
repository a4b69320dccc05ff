"""The codec contract, checked for every registered codec: a new codec gets these tests by registering.

For each codec in ``blackbox_mitm.codecs.REGISTERED``:

* its recorded fixtures (``tests/fixtures/<NAME>/*.json``, each a ``request`` and a
  ``response`` or ``stream``) decode, and the answer re-encoded decodes to the same
  neutral output (``encode_response`` / ``encode_stream`` are ``decode_response``'s inverse);
* a synthesized stream ends with the one event ``is_stream_end`` accepts, and adds
  up (``aggregate_stream``) to the answer it was made from;
* an error is the provider's error shape with a no-retry header, and the in-stream
  error event (``encode_stream_error``) makes a stream an incomplete call;
* the provider's real SDK parses every synthesized response and stream
  (``SDK_CLIENTS`` below holds one small client per codec: a codec without one fails).
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from blackbox_mitm.codecs import REGISTERED, Codec, parse_stream, stream_content_type
from blackbox_mitm.codecs.base import CallIds, DecodedRequest, SseEvent, StreamIncomplete
from blackbox_mitm.errors import BlackboxError

if TYPE_CHECKING:
    from openai.types import CompletionUsage
    from openai.types.responses import Response  # the SDK is imported where it is used

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CREATED_MS = 1_750_000_000_123

OUTPUTS: dict[str, dict[str, Any]] = {
    "text": {"type": "final_answer", "text": "Paris — « la Ville Lumière » 🗼, " * 12},
    "empty_text": {"type": "final_answer", "text": ""},
    "length": {"type": "final_answer", "text": "cut off", "stop": "length"},
    "one_call": {"type": "tool_calls", "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Oslo"}}]},
    "parallel_calls_with_text": {
        "type": "tool_calls",
        "text": "Checking both.",
        "calls": [
            {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Oslo", "days": [1, 2], "note": 'ß 日本 "q"'}},
            {"toolCallId": "call-1", "toolName": "get_time", "toolInput": {}},
        ],
    },
    # Token counts are part of the answer (every API carries input, output and cached input).
    "text_with_tokens": {"type": "final_answer", "text": "Oslo.", "tokens": {"input": 151_000, "output": 812, "cachedInput": 150_000}},
    "calls_with_tokens": {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Oslo"}}],
        "tokens": {"input": 20, "output": 7},
    },
}

_CODECS = {c.NAME: c for c in REGISTERED}


def _fixtures(codec: Codec) -> list[Path]:
    return sorted((FIXTURES / codec.NAME).glob("*.json"))


def _fixture_cases() -> list[Any]:
    return [pytest.param(c.NAME, p.name, id=f"{c.NAME}-{p.stem}") for c in REGISTERED for p in _fixtures(c)]


def _calls(path: Path) -> list[dict[str, Any]]:
    """A fixture's calls in order: one ``{request, response | stream}``, or several under ``calls``."""
    data = json.loads(path.read_text())
    calls = data.get("calls", [data])
    return [{"path": data.get("path", ""), **call} for call in calls]


def _recorded_stream(codec: Codec, call: dict[str, Any]) -> list[SseEvent]:
    """A fixture's recorded stream: SSE text (``stream``), or binary framing as base64 (``stream_base64``)."""
    raw = base64.b64decode(call["stream_base64"]) if "stream_base64" in call else call["stream"].encode()
    return parse_stream(codec, raw)


def _decode(codec: Codec, call: dict[str, Any], ids: CallIds) -> DecodedRequest:
    bare, _, query = call["path"].partition("?")
    return codec.decode_request(json.dumps(call["request"]).encode(), ids, path=bare, query=query)


def _request(codec: Codec, ids: CallIds, *, stream: bool = False) -> DecodedRequest:
    """The first fixture's first request, as a streamed or whole call."""
    request = _decode(codec, _calls(_fixtures(codec)[0])[0], ids)
    request.stream = stream
    return request


@pytest.mark.parametrize("name", list(_CODECS))
def test_every_codec_has_recorded_fixtures(name: str) -> None:
    assert _fixtures(_CODECS[name]), f"add recorded request/response fixtures for {name} under tests/fixtures/{name}/"


@pytest.mark.parametrize(("name", "fixture"), _fixture_cases())
def test_a_recorded_call_decodes_and_its_answer_round_trips(name: str, fixture: str) -> None:
    codec = _CODECS[name]
    ids = CallIds()
    for call in _calls(FIXTURES / name / fixture):
        request = _decode(codec, call, ids)
        assert request.provider == codec.NAME
        assert isinstance(request.model_input.get("messages"), list)
        if "stream" in call or "stream_base64" in call:
            output = codec.decode_response(codec.aggregate_stream(_recorded_stream(codec, call)), ids, request)
        else:
            output = codec.decode_response(json.dumps(call["response"]).encode(), ids, request)
        assert output["type"] in ("final_answer", "tool_calls")
        again = codec.encode_response(output, request=request, ids=CallIds(), created_ms=CREATED_MS)
        assert codec.decode_response(json.dumps(again).encode(), _ids_for(output), request) == output


def _ids_for(output: Mapping[str, Any]) -> CallIds:
    """A run's ids just before ``output`` was answered, so its calls get the same call-N again."""
    ids = CallIds()
    numbers = [int(c["toolCallId"].split("-")[1]) for c in output.get("calls", [])]
    for _ in range(min(numbers, default=0)):
        ids.assign(None)
    return ids


@pytest.mark.parametrize("name", list(_CODECS))
@pytest.mark.parametrize("shape", list(OUTPUTS))
def test_whole_answers_round_trip(name: str, shape: str) -> None:
    codec, output = _CODECS[name], OUTPUTS[shape]
    request = _request(codec, CallIds())
    body = codec.encode_response(output, request=request, ids=CallIds(), created_ms=CREATED_MS)
    assert codec.decode_response(json.dumps(body).encode(), CallIds(), request) == output
    assert codec.decode_response(body, CallIds(), request) == output  # the object itself, no JSON round trip


@pytest.mark.parametrize("name", list(_CODECS))
@pytest.mark.parametrize("shape", list(OUTPUTS))
def test_a_synthesized_stream_adds_up_to_its_answer_and_ends_once(name: str, shape: str) -> None:
    codec, output = _CODECS[name], OUTPUTS[shape]
    request = _request(codec, CallIds(), stream=True)
    request.include_usage = True  # chat completions stream usage only when asked (stream_options.include_usage)
    events = parse_stream(codec, codec.encode_stream(output, request=request, ids=CallIds(), created_ms=CREATED_MS))
    ends = [i for i, ev in enumerate(events) if codec.is_stream_end(ev)]
    assert ends == [len(events) - 1], f"is_stream_end must accept exactly the last event, not {ends} of {len(events)}"
    assert codec.decode_response(codec.aggregate_stream(events), CallIds(), request) == output


@pytest.mark.parametrize("name", list(_CODECS))
def test_a_stream_without_its_final_event_is_incomplete(name: str) -> None:
    codec = _CODECS[name]
    request = _request(codec, CallIds(), stream=True)
    events = parse_stream(codec, codec.encode_stream(OUTPUTS["text"], request=request, ids=CallIds(), created_ms=CREATED_MS))
    with pytest.raises(StreamIncomplete):
        codec.aggregate_stream(events[:-1])


@pytest.mark.parametrize("name", list(_CODECS))
def test_the_in_stream_error_replaces_a_final_event(name: str) -> None:
    codec = _CODECS[name]
    request = _request(codec, CallIds(), stream=True)
    events = parse_stream(codec, codec.encode_stream(OUTPUTS["text"], request=request, ids=CallIds(), created_ms=CREATED_MS))
    error = parse_stream(codec, codec.encode_stream_error("BlackboxUnsupportedError: x: refused"))
    assert len(error) == 1
    with pytest.raises(StreamIncomplete, match="refused"):
        codec.aggregate_stream([*events[:-1], *error])


@pytest.mark.parametrize("name", list(_CODECS))
@pytest.mark.parametrize("status", [400, 404, 500])
def test_errors_have_the_provider_shape_and_are_not_retried(name: str, status: int) -> None:
    codec = _CODECS[name]
    err = codec.encode_error("blackbox: something named", status=status)
    assert err.status == status
    assert err.headers.get("x-should-retry") == "false"
    assert "blackbox: something named" in json.dumps(json.loads(err.body))


@pytest.mark.parametrize("name", list(_CODECS))
def test_the_codec_states_its_facts(name: str) -> None:
    codec = _CODECS[name]
    assert codec.DEFAULT_HOSTS and all(h == h.lower() and "/" not in h for h in codec.DEFAULT_HOSTS)
    assert codec.KEY_ENV_VARS and codec.ID_PREFIXES and codec.RESPONSE_KEYS
    assert all(h == h.lower() for h in codec.CREDENTIAL_HEADERS)
    assert all(r.id.startswith(codec.PROVIDER + ".") for r in codec.REFUSALS), "refusal ids start with the provider"
    neutral = {n for _, n in codec.PARAMS}
    assert all(n[:1].islower() and "_" not in n for n in neutral), "neutral control names are camelCase"


@pytest.mark.parametrize("name", list(_CODECS))
def test_capabilities_are_the_declared_sub_protocols(name: str) -> None:
    """isinstance finds a capability exactly where the registry declares it (and mypy checks the declaration)."""
    from blackbox_mitm.codecs import CHAINING, TURN_FOLDING, WEBSOCKETS
    from blackbox_mitm.codecs.base import ChainingCodec, TurnFoldingCodec
    from blackbox_mitm.codecs.websocket_base import WebSocketCapable, websocket_of

    codec = _CODECS[name]
    assert isinstance(codec, ChainingCodec) == (codec in CHAINING)
    assert isinstance(codec, TurnFoldingCodec) == (codec in TURN_FOLDING)
    assert isinstance(codec, WebSocketCapable) == (codec in WEBSOCKETS)
    assert (websocket_of(codec) is not None) == (codec in WEBSOCKETS)


@pytest.mark.parametrize("name", list(_CODECS))
def test_bad_bodies_raise_only_named_errors(name: str) -> None:
    codec = _CODECS[name]
    request = _request(codec, CallIds())
    for body in (b"", b"not json", b"[]", b"null", b'{"messages": 3}', b"{" * 5000 + b"}" * 5000):
        for decode in (
            lambda b: codec.decode_request(b, CallIds(), path="", query=""),
            lambda b: codec.decode_response(b, CallIds(), request),
        ):
            try:
                decode(body)
            except BlackboxError:
                pass


# --- the real SDKs ----------------------------------------------------------------------


class _OneShot:
    """A loopback HTTP server answering every request with the same status, headers and body."""

    def __init__(self) -> None:
        self.answer: tuple[int, dict[str, str], bytes] = (200, {}, b"")
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                status, headers, body = outer.answer
                self.send_response(status)
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


def _openai_chat(url: str, stream: bool) -> tuple[str, list[str]]:
    import openai

    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    messages: Any = [{"role": "user", "content": "hi"}]
    if not stream:
        message = client.chat.completions.create(model="m", messages=messages).choices[0].message
        return message.content or "", [c.function.name for c in message.tool_calls or [] if c.type == "function"]
    with client.chat.completions.stream(model="m", messages=messages) as s:
        final = s.get_final_completion().choices[0].message
    return final.content or "", [c.function.name for c in final.tool_calls or [] if c.type == "function"]


def _anthropic(url: str, stream: bool) -> tuple[str, list[str]]:
    import anthropic

    client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
    args: Any = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    if stream:
        with client.messages.stream(**args) as s:
            message = s.get_final_message()
    else:
        message = client.messages.create(**args)
    text = "".join(b.text for b in message.content if b.type == "text")
    return text, [b.name for b in message.content if b.type == "tool_use"]


def _gemini(url: str, stream: bool) -> tuple[str, list[str]]:
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=url, client_args={"trust_env": False}))
    if stream:
        chunks = list(client.models.generate_content_stream(model="m", contents="hi"))
    else:
        chunks = [client.models.generate_content(model="m", contents="hi")]
    parts = [p for c in chunks if c.candidates and c.candidates[0].content for p in (c.candidates[0].content.parts or [])]
    return "".join(p.text or "" for p in parts if not p.thought), [p.function_call.name or "" for p in parts if p.function_call]


def _openai_responses(url: str, stream: bool) -> tuple[str, list[str]]:
    import openai

    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    response: Response
    if stream:
        with client.responses.stream(model="m", input="hi") as s:
            response = s.get_final_response()
    else:
        response = client.responses.create(model="m", input="hi")
    return response.output_text, [i.name for i in response.output if i.type in ("function_call", "custom_tool_call")]


def _bedrock(url: str, stream: bool) -> tuple[str, list[str]]:
    import anthropic

    client = anthropic.AnthropicBedrock(
        base_url=url, aws_access_key="AKIAFAKEFAKEFAKEFAKE", aws_secret_key="fake", aws_region="us-east-1", max_retries=0
    )
    return _anthropic_messages(client, stream, "us.anthropic.claude-sonnet-4-5-20250929-v1:0")


def _vertex_anthropic(url: str, stream: bool) -> tuple[str, list[str]]:
    import anthropic

    client = anthropic.AnthropicVertex(base_url=url, region="us-east5", project_id="p", access_token="ya29.fake", max_retries=0)
    return _anthropic_messages(client, stream, "claude-sonnet-4-5@20250929")


def _anthropic_messages(client: Any, stream: bool, model: str) -> tuple[str, list[str]]:
    args: Any = {"model": model, "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    if stream:
        with client.messages.stream(**args) as s:
            message = s.get_final_message()
    else:
        message = client.messages.create(**args)
    text = "".join(b.text for b in message.content if b.type == "text")
    return text, [b.name for b in message.content if b.type == "tool_use"]


def _bedrock_converse(url: str, stream: bool) -> tuple[str, list[str]]:
    import boto3

    client = boto3.client(
        "bedrock-runtime", endpoint_url=url, region_name="us-east-1", aws_access_key_id="AKIAFAKEFAKEFAKEFAKE", aws_secret_access_key="f",
        config=__import__("botocore.config").config.Config(retries={"max_attempts": 1}),
    )  # fmt: skip
    args: Any = {"modelId": "us.anthropic.claude-sonnet-4-6-v1:0", "messages": [{"role": "user", "content": [{"text": "hi"}]}]}
    if not stream:
        content = client.converse(**args)["output"]["message"]["content"]
        return "".join(b.get("text", "") for b in content), [b["toolUse"]["name"] for b in content if "toolUse" in b]
    text, tools = "", []
    for event in client.converse_stream(**args)["stream"]:
        text += event.get("contentBlockDelta", {}).get("delta", {}).get("text", "")
        start = event.get("contentBlockStart", {}).get("start", {})
        tools += [start["toolUse"]["name"]] if "toolUse" in start else []
    return text, tools


#: One small client per codec: (base URL, stream?) -> (text, tool names), through the provider's own SDK.
SDK_CLIENTS: dict[str, Callable[[str, bool], tuple[str, list[str]]]] = {
    "openai": _openai_chat,
    "openai-responses": _openai_responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "bedrock": _bedrock,
    "vertex-anthropic": _vertex_anthropic,
    "bedrock-converse": _bedrock_converse,
}


@pytest.mark.parametrize("name", list(_CODECS))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("shape", ["text", "parallel_calls_with_text", "empty_text"])
def test_the_real_sdk_parses_what_the_codec_synthesizes(name: str, stream: bool, shape: str, one_shot: _OneShot) -> None:
    codec, output = _CODECS[name], OUTPUTS[shape]
    client = SDK_CLIENTS.get(name)
    assert client is not None, f"add a client for codec {name} to SDK_CLIENTS (its provider's official SDK)"
    request = _request(codec, CallIds(), stream=stream)
    if stream:
        body = codec.encode_stream(output, request=request, ids=CallIds(), created_ms=CREATED_MS)
        one_shot.answer = (200, {"content-type": stream_content_type(codec)}, body)
    else:
        body = json.dumps(codec.encode_response(output, request=request, ids=CallIds(), created_ms=CREATED_MS)).encode()
        one_shot.answer = (200, {"content-type": "application/json"}, body)
    text, tools = client(one_shot.url, stream)
    assert text == output.get("text", "")
    assert tools == [c["toolName"] for c in output.get("calls", [])]


# A codec's server-side tools live in one module of their own (cassette/server_parts.py is the neutral side).
SERVER_TOOL_MODULES = ("server_tools.py", "hosted_tools.py", "grounding.py", "code_execution.py")

# The order every codec package defines its contract functions in, file by file (docs/adding-a-provider.md).
LAYOUT: dict[str, tuple[str, ...]] = {
    "__init__.py": ("matches", "speaks_for"),
    "request.py": ("decode_request", "forward_body", "rewrite_tool_result"),
    "response.py": ("decode_response", "encode_response", "encode_error", "normalize_answer"),
    "stream.py": ("encode_stream", "encode_stream_error", "is_stream_end", "aggregate_stream"),
}


# A part of one API alone, beside the shared layout: the Responses API's compaction items (Codex's compaction),
# computer use, the mcp tool, its input media and reasoning items; Gemini's media outside a user turn (a function
# response's parts, systemInstruction) and its recorded built-ins.
OWN_PARTS: dict[str, set[str]] = {
    "openai-responses": {"compaction.py", "computer.py", "mcp.py", "media.py", "reasoning.py"},
    "openai": {"audio.py"},
    "gemini": {"multimodal.py", "builtins.py"},
}


@pytest.mark.parametrize("name", list(_CODECS))
def test_every_codec_package_has_the_same_layout(name: str) -> None:
    """Each codec is a package of the same files, defining the contract functions in the same order."""
    import ast

    folder = Path(getattr(_CODECS[name], "__file__", None) or "").parent  # a codec is a module
    assert folder.name != "codecs", f"{name} is a module, not a package of its own"
    for file, order in LAYOUT.items():
        tree = ast.parse((folder / file).read_text())
        defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in order]
        assert defined == [f for f in order if f in defined], f"{name}/{file} defines {defined}, expected that order: {order}"
        assert set(order) - {"forward_body"} <= set(defined), f"{name}/{file} lacks {set(order) - set(defined)}"
    extra = (
        {p.name for p in folder.glob("*.py")}
        - set(LAYOUT)
        - {"fields.py", "websocket.py", *SERVER_TOOL_MODULES}
        - OWN_PARTS.get(name, set())
    )
    assert not extra, f"{name} has files outside the layout: {sorted(extra)}"


# The ids a replay serves, as every version of Blackbox served them (codecs/common/ids.py is the one
# recipe; each codec's key text is kept so that these stay byte-identical).
SERVED_IDS = {
    "openai": {"chatcmpl-bbc71f35a53592c9d9d433e6b1", "call_bb3"},
    "openai-responses": {"resp_bbb272f4a8c898a678015616db", "msg_bb08085ae75fc17594c899bbaf", "fc_bb3", "call_bb3"},
    "anthropic": {"msg_bb146a120621c4532c38e27068", "toolu_bb3"},
    "gemini": {"bbc71f35a53592c9d9d433e6", "gemini-bb3"},
    # The clouds' transports of the Anthropic body serve what Anthropic's API does (a recording moves between them).
    "bedrock": {"msg_bb146a120621c4532c38e27068", "toolu_bb3"},
    "vertex-anthropic": {"msg_bb146a120621c4532c38e27068", "toolu_bb3"},
    "bedrock-converse": {"tooluse_bb3"},  # Converse answers carry no message id
}


# --- token counts through the real SDKs -------------------------------------------------


def _chat_usage(url: str, stream: bool) -> tuple[int, int, int]:
    import openai

    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    messages: Any = [{"role": "user", "content": "hi"}]
    usage: CompletionUsage | None
    if stream:
        chunks = list(client.chat.completions.create(model="m", messages=messages, stream=True, stream_options={"include_usage": True}))
        usage = next(c.usage for c in chunks if c.usage is not None)
    else:
        usage = client.chat.completions.create(model="m", messages=messages).usage
    assert usage is not None and usage.prompt_tokens_details is not None
    return usage.prompt_tokens, usage.completion_tokens, usage.prompt_tokens_details.cached_tokens or 0


def _anthropic_usage(url: str, stream: bool) -> tuple[int, int, int]:
    import anthropic

    client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
    args: Any = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    if stream:
        with client.messages.stream(**args) as s:
            usage = s.get_final_message().usage
    else:
        usage = client.messages.create(**args).usage
    cached = usage.cache_read_input_tokens or 0
    # What Claude Code adds up for its context size: uncached, cache reads and cache writes.
    return usage.input_tokens + cached + (usage.cache_creation_input_tokens or 0), usage.output_tokens, cached


def _gemini_usage(url: str, stream: bool) -> tuple[int, int, int]:
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=url, client_args={"trust_env": False}))
    if stream:
        usage = list(client.models.generate_content_stream(model="m", contents="hi"))[-1].usage_metadata
    else:
        usage = client.models.generate_content(model="m", contents="hi").usage_metadata
    assert usage is not None
    return (
        usage.prompt_token_count or 0,
        (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0),
        usage.cached_content_token_count or 0,
    )


def _responses_usage(url: str, stream: bool) -> tuple[int, int, int]:
    import openai

    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    if stream:
        with client.responses.stream(model="m", input="hi") as s:
            usage = s.get_final_response().usage
    else:
        usage = client.responses.create(model="m", input="hi").usage
    assert usage is not None
    return usage.input_tokens, usage.output_tokens, usage.input_tokens_details.cached_tokens


USAGE_READERS: dict[str, Callable[[str, bool], tuple[int, int, int]]] = {
    "openai": _chat_usage,
    "openai-responses": _responses_usage,
    "anthropic": _anthropic_usage,
    "gemini": _gemini_usage,
}


@pytest.mark.parametrize("name", list(_CODECS))
def test_served_ids_are_the_ones_earlier_versions_served(name: str) -> None:
    import re

    codec = _CODECS[name]
    output = {
        "type": "tool_calls",
        "text": "Checking « Oslo ».",
        "calls": [{"toolCallId": "call-3", "toolName": "get_weather", "toolInput": {"city": "Oslo"}}],
    }
    request = _request(codec, CallIds())
    body = json.dumps(codec.encode_response(output, request=request, ids=CallIds(), created_ms=1_750_000_000_123))
    served = set(re.findall(r'"((?:call_bb|toolu_bb|tooluse_bb|fc_bb|msg_bb|resp_bb|chatcmpl-bb|gemini-bb|bb)[0-9a-f]+)"', body))
    assert served == SERVED_IDS.get(name), f"{name} serves {sorted(served)}"


@pytest.mark.parametrize("name", list(_CODECS))
def test_bodies_are_valid_utf8_even_with_a_lone_surrogate(name: str) -> None:
    """json.loads makes a lone surrogate from "\\ud800": every body written is still UTF-8 (escaped, never raw)."""
    codec = _CODECS[name]
    message = "blackbox: odd \ud800 text é"
    err = codec.encode_error(message, status=400)
    assert message in json.dumps(json.loads(err.body.decode("utf-8")), ensure_ascii=False)
    _stream_text(codec, codec.encode_stream_error(message))
    output = {"type": "final_answer", "text": "odd \udfff é"}
    request = _request(codec, CallIds())
    _stream_text(codec, codec.encode_stream(output, request=request, ids=CallIds(), created_ms=CREATED_MS))


def _stream_text(codec: Any, body: bytes) -> None:
    """A stream's text decoded as UTF-8: the whole body for server-sent events, each frame's payload for a framed stream."""
    from blackbox_mitm.codecs import FRAMED, parse_stream

    if codec not in FRAMED:
        body.decode("utf-8")
        return
    events = parse_stream(codec, body)
    assert events
    for event in events:
        event.data.encode("utf-8")  # a str with no lone surrogate: the frame's payload was valid UTF-8


@pytest.mark.parametrize("name", list(USAGE_READERS))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("shape", ["text_with_tokens", "calls_with_tokens", "text"])
def test_the_real_sdk_reads_the_recorded_token_counts(name: str, stream: bool, shape: str, one_shot: _OneShot) -> None:
    """A replay reports the recorded usage (auto-compaction and cost trackers decide on it); none recorded: zero."""
    codec, output = _CODECS[name], OUTPUTS[shape]
    request = _request(codec, CallIds(), stream=stream)
    request.include_usage = True
    if stream:
        one_shot.answer = (
            200,
            {"content-type": "text/event-stream"},
            codec.encode_stream(output, request=request, ids=CallIds(), created_ms=CREATED_MS),
        )
    else:
        body = json.dumps(codec.encode_response(output, request=request, ids=CallIds(), created_ms=CREATED_MS)).encode()
        one_shot.answer = (200, {"content-type": "application/json"}, body)
    counts = output.get("tokens", {})
    assert USAGE_READERS[name](one_shot.url, stream) == (counts.get("input", 0), counts.get("output", 0), counts.get("cachedInput", 0))


# --- thinking kept -----------------------------------------------------------------------

#: What the model thought, with the signature its provider checks when the turn comes back. Chat
#: completions has no field for it (a replay of a chat answer carries none), so that codec is left out.
THINKING: dict[str, Any] = {
    "type": "tool_calls",
    "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Oslo"}}],
    "reasoning": [{"type": "thinking", "text": "The user wants Oslo; call the tool.", "signature": "EqQBCkgIARABGAIiQL2sig=="}],
}
_THINKING_CODECS = ["openai-responses", "anthropic", "gemini"]  # the clouds carry the same bodies (tests/codecs/test_clouds.py)


@pytest.mark.parametrize("name", _THINKING_CODECS)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_thinking_is_served_back_and_the_real_sdk_parses_it(name: str, stream: bool, one_shot: _OneShot) -> None:
    codec = _CODECS[name]
    request = _request(codec, CallIds(), stream=stream)
    if stream:
        body = codec.encode_stream(THINKING, request=request, ids=CallIds(), created_ms=CREATED_MS)
        assert codec.decode_response(codec.aggregate_stream(parse_stream(codec, body)), CallIds(), request) == THINKING
        one_shot.answer = (200, {"content-type": "text/event-stream"}, body)
    else:
        whole = codec.encode_response(THINKING, request=request, ids=CallIds(), created_ms=CREATED_MS)
        assert codec.decode_response(json.dumps(whole).encode(), CallIds(), request) == THINKING
        one_shot.answer = (200, {"content-type": "application/json"}, json.dumps(whole).encode())
    text, tools = SDK_CLIENTS[name](one_shot.url, stream)
    assert (text, tools) == ("", ["get_weather"])
