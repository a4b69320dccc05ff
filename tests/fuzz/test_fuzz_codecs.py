"""Property-based: every registered codec decodes any body into a neutral step or a named error, nothing else.

For each codec in ``blackbox_mitm.codecs.CODECS``: ``decode_request``,
``decode_response`` and ``aggregate_stream`` are fed random bytes, random JSON,
and the real recorded bodies of tests/fixtures (OpenAI and Anthropic, and the
Responses API's) mutated. Only ``BlackboxError`` subclasses (a refusal, a
stream that never completed, ...) may escape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fuzz_strategies import json_values, mutated, replace_at
from hypothesis import given
from hypothesis import strategies as st

from blackbox_mitm import codecs
from blackbox_mitm.codecs import CallIds, DecodedRequest, SseEvent
from blackbox_mitm.codecs.sse import parse_sse
from blackbox_mitm.errors import BlackboxError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# ``CODECS`` is a name -> codec mapping today; a plain sequence of codecs works too.
ALL = list(codecs.CODECS.values()) if isinstance(codecs.CODECS, dict) else list(codecs.CODECS)
CANDIDATE_PATHS = (
    "/v1/chat/completions",
    "/v1/messages",
    "/v1/responses",
    "/v1beta/models/gemini-2.0-flash:generateContent",
    "/v1beta/models/gemini-2.0-flash:streamGenerateContent",
    "/model/anthropic.claude-3-5-haiku-20241022-v1:0/invoke",
    "/model/anthropic.claude-3-5-haiku-20241022-v1:0/converse",
    "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-3-5-haiku@20241022:rawPredict",
)


def _name(codec: Any) -> str:
    return str(getattr(codec, "NAME", getattr(codec, "__name__", codec)))


def _path(codec: Any) -> str:
    for path in CANDIDATE_PATHS:
        if codec.matches("POST", path, ""):
            return path
    raise AssertionError(f"no path in CANDIDATE_PATHS is a model call of codec {_name(codec)}: add one")


def _samples() -> tuple[list[bytes], list[bytes], list[bytes]]:
    """Every recorded request body, response body and SSE stream in the fixtures."""
    requests, responses, streams = [], [], []
    for f in sorted(FIXTURES.glob("*/*.json")):
        if f.parent.name in ("canonical", "cassettes"):
            continue
        data = json.loads(f.read_text(encoding="utf-8"))
        for call in data.get("calls", [data]):
            if "request" in call:
                requests.append(json.dumps(call["request"]).encode())
            if isinstance(call.get("response"), dict):
                responses.append(json.dumps(call["response"]).encode())
            if isinstance(call.get("stream"), str):
                streams.append(call["stream"].encode())
    return requests, responses, streams


REQUESTS, RESPONSES, STREAMS = _samples()
assert REQUESTS and RESPONSES and STREAMS


def _decode_request(codec: Any, body: bytes) -> DecodedRequest | None:
    try:
        return codec.decode_request(body, CallIds(), path=_path(codec), query="")  # type: ignore[no-any-return]
    except BlackboxError:
        return None


# A minimal request of each API the fixtures do not cover, so every codec has one it decodes.
SEED_REQUESTS = [json.dumps({"contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}]}).encode()]


def _request_for(codec: Any) -> DecodedRequest:
    """A request this codec decodes, for ``decode_response``'s third argument."""
    for body in REQUESTS + SEED_REQUESTS:
        decoded = _decode_request(codec, body)
        if decoded is not None:
            return decoded
    raise AssertionError(f"no fixture request decodes with codec {_name(codec)}: add one to SEED_REQUESTS")


def _with_one_node_replaced(body: bytes) -> st.SearchStrategy[bytes]:
    """``body``'s JSON with one node (a field, an item, the whole) replaced by a random JSON value."""
    paths = st.lists(st.integers(min_value=0, max_value=20), max_size=7)
    return st.tuples(paths, json_values).map(lambda pv: json.dumps(replace_at(json.loads(body), pv[0], pv[1])).encode())


def _bodies() -> st.SearchStrategy[bytes]:
    real = REQUESTS + RESPONSES + SEED_REQUESTS
    return (
        st.binary(max_size=300)
        | json_values.map(lambda v: json.dumps(v).encode())
        | st.sampled_from(real).flatmap(lambda body: mutated(body))
        | st.sampled_from(real).flatmap(_with_one_node_replaced)
        | st.sampled_from(real)
    )


@pytest.mark.parametrize("codec", ALL, ids=_name)
@given(body=_bodies())
def test_decode_request(codec: Any, body: bytes) -> None:
    _decode_request(codec, body)


@pytest.mark.parametrize("codec", ALL, ids=_name)
@given(body=_bodies())
def test_decode_response(codec: Any, body: bytes) -> None:
    request = _request_for(codec)
    try:
        codec.decode_response(body, CallIds(), request)
    except BlackboxError:
        pass


def _events_with_one_replaced(stream: bytes) -> st.SearchStrategy[list[SseEvent]]:
    """A recorded stream's events with one event's JSON data changed in one node (or the event dropped, or repeated)."""
    events = parse_sse(stream)

    def edit(choice: tuple[int, str, list[int], Any]) -> list[SseEvent]:
        n, how, path, value = choice
        out = list(events)
        if not out:
            return out
        n %= len(out)
        if how == "drop":
            del out[n]
        elif how == "repeat":
            out.insert(n, out[n])
        else:
            try:
                data = json.loads(out[n].data)
            except ValueError:
                data = out[n].data
            out[n] = SseEvent(out[n].event, json.dumps(replace_at(data, path, value)))
        return out

    choices = st.tuples(
        st.integers(min_value=0, max_value=200),
        st.sampled_from(["drop", "repeat", "edit", "edit"]),
        st.lists(st.integers(0, 20), max_size=6),
        json_values,
    )
    return choices.map(edit)


streams = (
    st.sampled_from(STREAMS).flatmap(lambda s: mutated(s)).map(parse_sse)
    | st.binary(max_size=300).map(parse_sse)
    | st.sampled_from(STREAMS).flatmap(_events_with_one_replaced)
    | st.sampled_from(STREAMS).map(parse_sse)
)


@pytest.mark.parametrize("codec", ALL, ids=_name)
@given(events=streams)
def test_aggregate_stream(codec: Any, events: list[SseEvent]) -> None:
    try:
        codec.aggregate_stream(events)
    except BlackboxError:
        pass


# Found by the long run (`make fuzz`) and fixed in the codecs; each is the minimal input, kept as a regression test.
_RESPONSES = "/v1/responses"
_KNOWN = [
    pytest.param(
        lambda: codecs.codec_named("openai-responses").decode_request(
            json.dumps({"model": "gpt-4.1", "input": "hi", "tools": [{"type": []}]}).encode(), CallIds(), path=_RESPONSES
        ),
        id="responses request tools[0].type is a list (openai_responses_items.py: `kind in HOSTED_TOOLS`)",
    ),
    pytest.param(
        lambda: codecs.codec_named("openai-responses").decode_response(
            json.dumps(
                {"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-4.1", "output": [{"type": []}]}
            ).encode(),
            CallIds(),
            codecs.codec_named("openai-responses").decode_request(b'{"model":"gpt-4.1","input":"hi"}', CallIds(), path=_RESPONSES),
        ),
        id="responses answer output[0].type is a list (openai_responses.py: `kind in HOSTED_ITEMS`)",
    ),
    pytest.param(
        lambda: codecs.codec_named("gemini").aggregate_stream(
            [
                SseEvent(None, json.dumps({"candidates": [{"index": 0, "content": {"role": "model", "parts": [{"text": "a"}]}}]})),
                SseEvent(
                    None, json.dumps({"candidates": [{"index": None, "content": {"parts": [{"text": "b"}]}, "finishReason": "STOP"}]})
                ),
            ]
        ),
        id="gemini stream candidate index 0 then null (gemini_stream.py: sorted(candidates))",
    ),
    pytest.param(
        lambda: codecs.codec_named("anthropic").decode_request(
            json.dumps({"model": "claude-x", "max_tokens": 10, "messages": [{"role": "user", "content": [{"type": {}}]}]}).encode(),
            CallIds(),
            path="/v1/messages",
        ),
        id="anthropic request content[0].type is an object (anthropic_messages.py: `kind in _THINKING`)",
    ),
    pytest.param(
        lambda: codecs.codec_named("anthropic").aggregate_stream([SseEvent("message_start", '{"type":"message_start","message":5}')]),
        id="anthropic stream message_start.message is a number (anthropic_messages.py: `{**data.get('message')}`)",
    ),
    pytest.param(
        lambda: codecs.codec_named("anthropic").aggregate_stream(
            [
                SseEvent("message_start", '{"type":"message_start","message":{"role":"assistant"}}'),
                SseEvent("content_block_start", '{"type":"content_block_start","index":0,"content_block":[{}]}'),
            ]
        ),
        id="anthropic stream content_block is an array (anthropic_messages.py: dict(data['content_block']))",
    ),
]


@pytest.mark.parametrize("call", _KNOWN)
def test_known_codec_inputs_give_a_named_error(call: Any) -> None:
    try:
        call()
    except BlackboxError:
        pass
