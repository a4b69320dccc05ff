"""The Anthropic Messages codec against reference bodies, its refusal table rows, and its round trips."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

import pytest
from neutral_parts import listed, tool_result, tool_use

from blackbox_mitm.codecs import anthropic_messages as codec
from blackbox_mitm.codecs import codec_for_path
from blackbox_mitm.codecs.base import CallIds, DecodedRequest, SseEvent, StreamIncomplete
from blackbox_mitm.codecs.common.refusals import Refusal
from blackbox_mitm.codecs.sse import parse_sse
from blackbox_mitm.errors import BlackboxError, BlackboxUnsupportedError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "anthropic"
FIXTURE_FILES = sorted(FIXTURES.glob("*.json"))
CREATED_MS = 1_767_225_600_000
# Nothing provider-native may reach a neutral payload (spec: "What verify checks").
NATIVE = re.compile(r"toolu_|srvtoolu_|msg_|req_|\"(usage|stop_reason|stop_sequence|tool_use_id|input_schema|is_error|signature)\"")


# --- helpers ---------------------------------------------------------------------------


def _load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _b(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _sse(*events: Any) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _response_body(call: dict[str, Any]) -> bytes | dict[str, Any]:
    """The response as a JSON body: a recorded stream is aggregated first, as the recorder does."""
    if "stream" in call:
        return codec.aggregate_stream(parse_sse(call["stream"].encode()))
    return _b(call["response"])


TOKENS = {"input": 10, "output": 5}  # what _resp's usage decodes to


def _record(fixture: dict[str, Any]) -> list[tuple[DecodedRequest, dict[str, Any]]]:
    """Decode every call of a fixture in run order with one CallIds, as a recording does."""
    found = codec_for_path(fixture["path"])
    assert found is codec
    ids = CallIds()
    out = []
    for call in fixture["calls"]:
        request = found.decode_request(_b(call["request"]), ids)
        out.append((request, found.decode_response(_response_body(call), ids, request)))
    return out


def _request(model: str = "claude-sonnet-4-5", *, stream: bool = False) -> DecodedRequest:
    return DecodedRequest(provider="anthropic", model_input={"messages": [], "tools": []}, model=model, stream=stream)


def _ids_before(output: dict[str, Any]) -> CallIds:
    """Fresh ids whose next ``assign`` is the output's first call (call-N numbering continues a run)."""
    ids = CallIds()
    calls = output.get("calls") or []
    if calls:
        first = int(calls[0]["toolCallId"].removeprefix("call-"))
        if first:
            ids.register(f"call-{first - 1}")
    return ids


def _req(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"max_tokens": 1024, "messages": [{"role": "user", "content": "hi"}], "model": "claude-sonnet-4-5"}
    body.update(fields)
    return body


def _resp(content: list[Any], stop_reason: str | None = "end_turn", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "msg_01AbCdEf",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "stop_details": None,
        "container": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},  # TOKENS
    }
    body.update(fields)
    return body


def _stream_events(content: list[dict[str, Any]], delta: dict[str, Any]) -> bytes:
    """A recorded stream: message_start, text blocks with their deltas, a message_delta, message_stop."""
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {**_resp([], None), "content": []}}]
    for i, block in enumerate(content):
        events.append({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
        events.append({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": block["text"]}})
        for citation in block.get("citations", []):
            events.append({"type": "content_block_delta", "index": i, "delta": {"type": "citations_delta", "citation": citation}})
        events.append({"type": "content_block_stop", "index": i})
    events.append({"type": "message_delta", "delta": delta, "usage": {"output_tokens": 9}})
    events.append({"type": "message_stop"})
    return _sse(*events)


TEXT: dict[str, Any] = {"type": "text", "text": "Here you go."}
TOOL_USE: dict[str, Any] = {"type": "tool_use", "id": "toolu_01Xy", "name": "lookup", "input": {"q": "x"}}
REFUSAL_DETAILS: dict[str, Any] = {"type": "refusal", "category": "cyber", "explanation": None}
CITATION: dict[str, Any] = {
    "type": "char_location",
    "cited_text": "Paris",
    "document_index": 0,
    "document_title": "Atlas",
    "start_char_index": 0,
    "end_char_index": 5,
}
HISTORY_TOOL_ROUND = [
    {"role": "user", "content": "Read the report."},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_01Pdf", "name": "fetch_pdf", "input": {"url": "https://example.com/r.pdf"}}],
    },
]


# --- fixtures: exact neutral payloads --------------------------------------------------


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_reference_bodies_decode_to_the_exact_neutral_payloads(path: Path) -> None:
    fixture = _load(path)
    for call, (request, output) in zip(fixture["calls"], _record(fixture), strict=True):
        assert request.model_input == call["model_input"]
        assert output == call["model_output"]
        assert request.provider == "anthropic"
        assert request.model == call["request"]["model"]
        assert request.stream is (call["request"].get("stream") is True)
        # The answer's reasoning keeps the thinking's signature (served back, never compared); nothing else native.
        answer = {k: v for k, v in output.items() if k != "reasoning"}
        assert not NATIVE.search(json.dumps([request.model_input, answer], ensure_ascii=False))
        assert all(set(part) <= {"type", "text", "signature", "data"} for part in output.get("reasoning", []))


def test_the_fixtures_cover_what_the_brief_lists() -> None:
    names = {p.stem for p in FIXTURE_FILES}
    assert {
        "plain_text",
        "tool_round",
        "parallel_tools",
        "tool_error",
        "max_tokens",
        "thinking",
        "unicode",
        "claude_code_beta_stream",
    } <= names


def test_beta_query_path_selects_this_codec() -> None:
    assert codec_for_path("/v1/messages?beta=true") is codec
    assert codec_for_path("/v1/messages") is codec
    assert codec.PROVIDER == "anthropic"
    assert codec_for_path("/v1/messages/count_tokens") is not codec


def test_a_200_kb_tool_result_and_tool_input_pass_unchanged() -> None:
    line = "2025-01-01T00:00:00Z INFO worker-7 processed job 4711 in 12 ms — ok ✓ 東京\n"
    big = line * (200_000 // len(line.encode()) + 1)
    assert len(big.encode()) > 200_000
    body = _req(
        messages=[
            {"role": "user", "content": "Summarise the log."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01Log", "name": "read_log", "input": {"path": "app.log"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01Log", "content": big}]},
        ]
    )
    decoded = codec.decode_request(_b(body), CallIds())
    assert decoded.model_input["messages"][2]["content"] == [
        {"type": "tool_result", "toolCallId": "call-0", "toolName": "read_log", "result": big}
    ]
    output: dict[str, Any] = {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "write_file", "toolInput": {"path": "copy.log", "text": big}}],
    }
    stream = codec.encode_stream(output, request=_request(stream=True), ids=CallIds(), created_ms=CREATED_MS)
    fragments = [json.loads(e.data)["delta"]["partial_json"] for e in parse_sse(stream) if e.event == "content_block_delta"]
    assert len(fragments) > 1000
    assert json.loads("".join(fragments)) == output["calls"][0]["toolInput"]
    assert codec.decode_response(codec.aggregate_stream(parse_sse(stream)), CallIds(), _request()) == output


# --- decode_request: choices the spec leaves to us -------------------------------------


@pytest.mark.parametrize(("body", "detail"), [(b"{not json", "not JSON"), (b"[1, 2]", "expected a JSON object"), (b"\xff\xfe", "not JSON")])
def test_a_body_that_is_not_a_json_object_is_refused_with_a_clear_error(body: bytes, detail: str) -> None:
    with pytest.raises(BlackboxUnsupportedError) as err:
        codec.decode_request(body, CallIds())
    assert err.value.field == "body"
    assert err.value.client_message.startswith("BlackboxUnsupportedError: body: ")
    assert detail in str(err.value)


def test_history_blocks_keep_their_order_and_empty_text_and_thinking_disappear() -> None:
    body = _req(
        messages=[
            {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "user", "content": [{"type": "text", "text": ""}, {"type": "text", "text": "Go"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": ""},
                    {"type": "tool_use", "id": "toolu_01A", "name": "ls", "input": {}},
                    {"type": "text", "text": "Then more."},
                ],
            },
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "sig"}]},
            {"role": "user", "content": []},
        ]
    )
    messages = codec.decode_request(_b(body), CallIds()).model_input["messages"]
    assert messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Go"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "toolCallId": "call-0", "toolName": "ls", "toolInput": {}},
                {"type": "text", "text": "Then more."},
            ],
        },
        {"role": "assistant", "content": ""},
        {"role": "user", "content": ""},
    ]


def test_a_tool_result_without_content_is_an_empty_result_or_error() -> None:
    body = _req(
        messages=[
            {"role": "user", "content": "Touch both files."},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_01A", "name": "touch", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "toolu_01B", "name": "touch", "input": {"path": "b"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01A"},
                    {"type": "tool_result", "tool_use_id": "toolu_01B", "is_error": True, "content": []},
                ],
            },
        ]
    )
    parts = codec.decode_request(_b(body), CallIds()).model_input["messages"][2]["content"]
    assert parts == [
        {"type": "tool_result", "toolCallId": "call-0", "toolName": "touch", "result": ""},
        {"type": "tool_result", "toolCallId": "call-1", "toolName": "touch", "error": ""},
    ]


def test_a_tool_result_whose_tool_use_left_the_history_takes_the_name_the_run_knows() -> None:
    ids = CallIds()
    codec.decode_response(_b(_resp([{**TOOL_USE, "id": "toolu_01Gone", "name": "search"}], "tool_use")), ids, _request())
    body = _req(messages=[{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01Gone", "content": "3 hits"}]}])
    assert codec.decode_request(_b(body), ids).model_input["messages"][0]["content"] == [
        {"type": "tool_result", "toolCallId": "call-0", "toolName": "search", "result": "3 hits"}
    ]
    stranger = _req(messages=[{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01Who", "content": "?"}]}])
    assert codec.decode_request(_b(stranger), ids).model_input["messages"][0]["content"] == [
        {"type": "tool_result", "toolCallId": "call-1", "toolName": "", "result": "?"}
    ]


def test_params_hold_only_the_compared_controls_that_are_present() -> None:
    body = _req(
        temperature=None,
        top_k=5,
        tool_choice={"type": "tool", "name": "lookup"},
        stream=False,
        metadata={"user_id": "u1"},
        service_tier="auto",
        cache_control={"type": "ephemeral"},
        container="container_01",
        speed="fast",
        inference_geo="us",
    )
    model_input = codec.decode_request(_b(body), CallIds()).model_input
    assert model_input["params"] == {"maxTokens": 1024, "topK": 5, "toolChoice": {"type": "tool", "name": "lookup"}}
    assert set(model_input) == {"messages", "tools", "model", "params"}
    bare = codec.decode_request(_b({"messages": [{"role": "user", "content": "hi"}]}), CallIds())
    assert bare.model_input == {"messages": [{"role": "user", "content": "hi"}], "tools": []}
    assert bare.model is None
    assert bare.stream is False


def test_streaming_is_a_param_and_a_flag_only_when_true() -> None:
    decoded = codec.decode_request(_b(_req(stream=True)), CallIds())
    assert decoded.stream is True
    assert decoded.model_input["params"] == {"maxTokens": 1024, "stream": True}


def test_tool_definitions_keep_name_description_and_schema_only() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    tools = [
        {
            "name": "a",
            "input_schema": schema,
            "type": "custom",
            "strict": False,
            "defer_loading": True,
            "cache_control": {"type": "ephemeral"},
        },
        {"name": "b", "description": "", "input_schema": schema, "input_examples": [{"q": "x"}], "eager_input_streaming": True},
    ]
    assert codec.decode_request(_b(_req(tools=tools)), CallIds()).model_input["tools"] == [
        {"name": "a", "inputSchema": schema},
        {"name": "b", "description": "", "inputSchema": schema},
    ]


def test_ids_seen_in_a_request_stay_the_same_call_in_later_requests() -> None:
    ids = CallIds()
    first = _req(
        messages=[
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01K", "name": "k", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01K", "content": "1"}]},
        ]
    )
    codec.decode_request(_b(first), ids)
    again = codec.decode_request(_b(first), ids).model_input["messages"]
    assert tool_use(listed(again[1]["content"])[0])["toolCallId"] == tool_result(listed(again[2]["content"])[0])["toolCallId"] == "call-0"
    assert ids.next_index() == 1


# --- decode_response -------------------------------------------------------------------


def test_empty_text_blocks_are_dropped_and_thinking_is_kept_with_its_signature() -> None:
    thinking = [{"type": "thinking", "thinking": "t", "signature": "s"}, {"type": "redacted_thinking", "data": "d"}]
    output = codec.decode_response(_b(_resp([*thinking, {"type": "text", "text": ""}, TOOL_USE], "tool_use")), CallIds(), _request())
    assert output == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "lookup", "toolInput": {"q": "x"}}],
        "tokens": TOKENS,
        "reasoning": [{"type": "thinking", "text": "t", "signature": "s"}, {"type": "redacted_thinking", "data": "d"}],
    }
    # Served back ahead of the answer, whole and streamed, as the API sends them.
    served = codec.encode_response(output, request=_request(), ids=CallIds(), created_ms=1)
    assert served["content"][:2] == thinking
    streamed = codec.aggregate_stream(parse_sse(codec.encode_stream(output, request=_request(stream=True), ids=CallIds(), created_ms=1)))
    assert streamed["content"][:2] == thinking
    assert codec.decode_response(_b(streamed), CallIds(), _request()) == output
    assert codec.decode_response(_b(_resp([{"type": "text", "text": ""}])), CallIds(), _request()) == {
        "type": "final_answer",
        "text": "",
        "tokens": TOKENS,
    }
    assert codec.decode_response(_b(_resp([])), CallIds(), _request()) == {"type": "final_answer", "text": "", "tokens": TOKENS}
    empty_citations = [{"type": "text", "text": "ok", "citations": None}, {"type": "text", "text": "", "citations": []}]
    assert codec.decode_response(_b(_resp(empty_citations)), CallIds(), _request()) == {
        "type": "final_answer",
        "text": "ok",
        "tokens": TOKENS,
    }


def test_tool_calls_cut_by_max_tokens_keep_the_length_stop() -> None:
    output = codec.decode_response(_b(_resp([TEXT, TOOL_USE], "max_tokens")), CallIds(), _request())
    assert output == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "lookup", "toolInput": {"q": "x"}}],
        "text": "Here you go.",
        "stop": "length",
        "tokens": TOKENS,
    }


# --- refusals: one case per Anthropic row of the table ---------------------------------

# row id -> cases: (side, body, the field the error must name). side: "request", "response"
# (a JSON body) or "stream" (a recorded SSE stream, aggregated then decoded).
REFUSAL_CASES: dict[str, list[tuple[str, Any, str]]] = {
    "anthropic.image_content": [
        (
            "request",
            _req(
                messages=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "What is this?"},
                            {"type": "search_result", "source": "https://example.com", "title": "t", "content": [{"type": "image"}]},
                        ],
                    }
                ]
            ),
            "messages[0].content[1].content[0]",
        ),
        (
            "request",
            _req(
                messages=[
                    *HISTORY_TOOL_ROUND,
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "toolu_01Pdf",
                                "content": [
                                    {"type": "text", "text": "Page 1"},
                                    {
                                        "type": "document",
                                        "source": {"type": "content", "content": [{"type": "search_result", "content": []}]},
                                    },
                                ],
                            }
                        ],
                    },
                ]
            ),
            "messages[2].content[0].content[1].source.content[0]",
        ),
        (
            "request",
            _req(messages=[{"role": "user", "content": [{"type": "document", "source": {"type": "content", "content": 7}}]}]),
            "messages[0].content[0].source.type",
        ),
    ],
    "anthropic.system_content": [
        (
            "request",
            _req(system=[{"type": "text", "text": "Sys"}, {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}]),
            "system[1]",
        ),
        (
            "request",
            _req(
                messages=[
                    {"role": "system", "content": [{"type": "document", "source": {"type": "text", "data": "d"}}]},
                    {"role": "user", "content": "hi"},
                ]
            ),
            "messages[0].content[0]",
        ),
    ],
    "anthropic.stop_sequence": [
        ("response", _resp([TEXT], "stop_sequence", stop_sequence="END"), "stop_reason"),
        ("stream", _stream_events([TEXT], {"stop_reason": "stop_sequence", "stop_sequence": "END"}), "stop_reason"),
    ],
    "anthropic.context_window": [
        ("response", _resp([TEXT], "model_context_window_exceeded"), "stop_reason"),
    ],
    "anthropic.text_blocks": [
        ("response", _resp([TEXT, {"type": "text", "text": " And more."}]), "content[1]"),
        (
            "response",
            _resp([TEXT, {"type": "thinking", "thinking": "t", "signature": "s"}, {"type": "text", "text": "Again."}]),
            "content[2]",
        ),
        ("response", _resp([TOOL_USE, TEXT], "tool_use"), "content[1]"),
    ],
    "anthropic.refusal": [
        ("response", _resp([{"type": "text", "text": "I can't help with that."}], "refusal", stop_details=REFUSAL_DETAILS), "stop_reason"),
        ("response", _resp([TOOL_USE], "refusal"), "stop_reason"),
        (
            "stream",
            _stream_events([TEXT], {"stop_reason": "refusal", "stop_sequence": None, "stop_details": REFUSAL_DETAILS}),
            "stop_reason",
        ),
    ],
    "anthropic.citations": [
        ("response", _resp([TEXT], stop_details={"type": "refusal", "category": None, "explanation": None}), "stop_details"),
        (
            "stream",
            _stream_events([TEXT], {"stop_reason": "end_turn", "stop_sequence": None, "stop_details": {"type": "refusal"}}),
            "stop_details",
        ),
    ],
    "anthropic.unknown_stop": [
        ("response", _resp([TEXT], "compaction"), "stop_reason"),
        ("response", _resp([TEXT], None), "stop_reason"),
    ],
    "anthropic.tool_use_stop": [
        ("response", _resp([TEXT, TOOL_USE], "end_turn"), "stop_reason"),
        ("response", _resp([TEXT], "tool_use"), "stop_reason"),
    ],
    "anthropic.unknown_block": [
        ("response", _resp([{"type": "compaction", "content": "Summary of the earlier turns."}, TEXT]), "content[0]"),
        ("response", _resp([TEXT, "not a block"]), "content[1]"),
    ],
}
ANTHROPIC_ROWS = list(codec.REFUSALS)


def _run(side: str, body: Any, ids: CallIds) -> None:
    if side == "request":
        codec.decode_request(_b(body), ids)
    elif side == "response":
        codec.decode_response(_b(body), ids, _request())
    else:
        codec.decode_response(codec.aggregate_stream(parse_sse(body)), ids, _request())


@pytest.mark.parametrize("refusal", ANTHROPIC_ROWS, ids=lambda r: r.id)
def test_refusal_row(refusal: Refusal) -> None:
    cases = REFUSAL_CASES.get(refusal.id)
    assert cases, f"no test case for refusal row {refusal.id}"
    for side, body, field in cases:
        assert side == refusal.side or (side == "stream" and refusal.side == "response")
        ids = CallIds()
        with pytest.raises(BlackboxUnsupportedError) as err:
            _run(side, body, ids)
        assert err.value.field == field, (side, body)
        assert err.value.reason == refusal.reason, (side, body)
        assert err.value.provider == "anthropic"
        assert err.value.client_message.startswith(f"BlackboxUnsupportedError: {field}: ")
        if side != "request":
            assert ids.next_index() == 0, "a refused response must not use up call-N ids"


def test_every_anthropic_refusal_row_has_cases_and_no_case_is_stale() -> None:
    assert set(REFUSAL_CASES) == {r.id for r in ANTHROPIC_ROWS}


def test_what_the_refusals_spare_is_accepted() -> None:
    tools = [
        {"name": "lookup", "input_schema": {"type": "object"}, "strict": False},
        {"name": "x", "type": "custom", "input_schema": {"type": "object"}},
    ]
    assert len(codec.decode_request(_b(_req(tools=tools)), CallIds()).model_input["tools"]) == 2
    direct = {**TOOL_USE, "caller": {"type": "direct"}}
    assert codec.decode_response(_b(_resp([direct], "tool_use")), CallIds(), _request())["type"] == "tool_calls"


# --- encode_response / encode_stream and the round trips -------------------------------

OUTPUTS = [
    pytest.param(call["model_output"], id=f"{path.stem}-{i}") for path in FIXTURE_FILES for i, call in enumerate(_load(path)["calls"])
] + [
    pytest.param({"type": "final_answer", "text": ""}, id="empty-answer"),
    pytest.param(
        {"type": "tool_calls", "calls": [{"toolCallId": "call-7", "toolName": "noop", "toolInput": {}}], "stop": "length"},
        id="tool-call-cut-at-call-7",
    ),
]


def test_the_round_trip_cases_exercise_ids_beyond_call_0() -> None:
    call_ids = {c["toolCallId"] for p in OUTPUTS for c in cast(dict[str, Any], p.values[0]).get("calls", [])}
    assert {"call-0", "call-1", "call-7"} <= call_ids


@pytest.mark.parametrize("output", OUTPUTS)
def test_decode_of_encode_response_gives_back_the_output(output: dict[str, Any]) -> None:
    ids = CallIds()
    body = codec.encode_response(output, request=_request(), ids=ids, created_ms=CREATED_MS)
    served = [b["id"] for b in body["content"] if b["type"] == "tool_use"]
    # The ids we serve map back to the recorded call-N when the agent sends them again.
    assert [ids.neutral(s) for s in served] == [c["toolCallId"] for c in output.get("calls", [])]
    assert codec.decode_response(_b(body), _ids_before(output), _request()) == output


@pytest.mark.parametrize("output", OUTPUTS)
def test_an_encoded_stream_aggregates_back_to_the_output(output: dict[str, Any]) -> None:
    stream = codec.encode_stream(output, request=_request(stream=True), ids=CallIds(), created_ms=CREATED_MS)
    assert stream.endswith(b"\n\n")
    events = parse_sse(stream)
    assert all(e.event == json.loads(e.data)["type"] for e in events)
    kinds = [e.event for e in events]
    assert kinds[0] == "message_start"
    assert kinds[-2:] == ["message_delta", "message_stop"]
    start = json.loads(events[0].data)["message"]
    assert start["content"] == [] and start["stop_reason"] is None
    started = [json.loads(e.data)["index"] for e in events if e.event == "content_block_start"]
    stopped = [json.loads(e.data)["index"] for e in events if e.event == "content_block_stop"]
    assert started == stopped == list(range(len(started)))
    assert codec.decode_response(codec.aggregate_stream(events), _ids_before(output), _request()) == output


@pytest.mark.parametrize("path", [p for p in FIXTURE_FILES if len(_load(p)["calls"]) > 1], ids=lambda p: p.stem)
def test_a_replay_serving_our_ids_matches_the_recording(path: Path) -> None:
    """Replay a multi-call fixture: the agent echoes the ids we served; every request must match."""
    fixture = _load(path)
    recorded = _record(fixture)
    ids = CallIds()
    swap: dict[str, str] = {}  # provider id in the recording -> the id our replay served
    for call, (recorded_request, recorded_output) in zip(fixture["calls"], recorded, strict=True):
        text = json.dumps(call["request"], ensure_ascii=False)
        for native, ours in swap.items():
            text = text.replace(native, ours)
        request = codec.decode_request(text.encode(), ids)
        assert request.model_input == recorded_request.model_input
        body = codec.encode_response(recorded_output, request=request, ids=ids, created_ms=CREATED_MS)
        raw = _response_body(call)
        assert isinstance(raw, bytes)  # a whole body: these calls were not streamed
        natives = [b["id"] for b in json.loads(raw)["content"] if b["type"] == "tool_use"]
        swap.update(zip(natives, [b["id"] for b in body["content"] if b["type"] == "tool_use"], strict=True))
    assert swap and all(ours.startswith("toolu_bb") for ours in swap.values())


def test_an_encoded_response_is_a_message_every_sdk_accepts() -> None:
    output = {"type": "tool_calls", "calls": [{"toolCallId": "call-2", "toolName": "ls", "toolInput": {"path": "."}}], "text": "Listing."}
    body = codec.encode_response(output, request=_request("claude-opus-4-1"), ids=CallIds(), created_ms=CREATED_MS)
    assert re.fullmatch(r"msg_bb[0-9a-f]{24}", body.pop("id"))
    assert body == {
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-1",
        "content": [{"type": "text", "text": "Listing."}, {"type": "tool_use", "id": "toolu_bb2", "name": "ls", "input": {"path": "."}}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "stop_details": None,
        "container": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


@pytest.mark.parametrize(
    ("output", "stop_reason"),
    [
        ({"type": "final_answer", "text": "Done."}, "end_turn"),
        ({"type": "final_answer", "text": "Cut", "stop": "length"}, "max_tokens"),
        ({"type": "final_answer", "text": "I can't.", "stop": "refusal"}, "refusal"),
        ({"type": "tool_call", "toolCallId": "call-4", "toolName": "ls", "toolInput": {}}, "tool_use"),
    ],
)
def test_stop_reasons_and_the_single_call_shape(output: dict[str, Any], stop_reason: str) -> None:
    body = codec.encode_response(output, request=_request(), ids=CallIds(), created_ms=CREATED_MS)
    assert body["stop_reason"] == stop_reason
    stream = parse_sse(codec.encode_stream(output, request=_request(), ids=CallIds(), created_ms=CREATED_MS))
    assert json.loads(stream[-2].data)["delta"]["stop_reason"] == stop_reason
    if output["type"] == "tool_call":
        assert body["content"] == [{"type": "tool_use", "id": "toolu_bb4", "name": "ls", "input": {}}]


def test_the_same_answer_gives_the_same_bytes() -> None:
    output = {"type": "final_answer", "text": "Same."}
    one = codec.encode_response(output, request=_request(), ids=CallIds(), created_ms=CREATED_MS)
    assert one == codec.encode_response(output, request=_request(), ids=CallIds(), created_ms=CREATED_MS)
    assert one["id"] != codec.encode_response(output, request=_request(), ids=CallIds(), created_ms=CREATED_MS + 1)["id"]
    stream = codec.encode_stream(output, request=_request(), ids=CallIds(), created_ms=CREATED_MS)
    assert stream == codec.encode_stream(output, request=_request(), ids=CallIds(), created_ms=CREATED_MS)


# --- aggregate_stream ------------------------------------------------------------------


def test_a_recorded_stream_aggregates_to_the_message_it_stands_for() -> None:
    call = _load(FIXTURES / "claude_code_beta_stream.json")["calls"][0]
    message = codec.aggregate_stream(parse_sse(call["stream"].encode()))
    assert message["id"] == "msg_01Hs8uVk2LqP9wXe4RtY7nBa"
    assert message["content"] == [
        {
            "type": "thinking",
            "thinking": "The user wants the tests run. Start with the API tests.",
            "signature": "EqMCCkYIBxgCKkBvS2lnbmF0dXJlX2Zvcl90ZXN0aW5n",
        },
        {"type": "text", "text": "I'll run the API tests first."},
        {
            "type": "tool_use",
            "id": "toolu_01KdP4sN8vQz2mXr7YbT3wLe",
            "name": "Bash",
            "input": {"command": "pytest -q tests/test_api.py", "description": "Run the API tests"},
        },
    ]
    assert message["stop_reason"] == "tool_use"
    assert message["stop_sequence"] is None
    assert message["usage"]["output_tokens"] == 187
    assert message["usage"]["cache_read_input_tokens"] == 11962


def test_thinking_deltas_append_and_a_signature_delta_replaces() -> None:
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": _resp([], None)},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": "placeholder"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "a"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "b"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "Sig1"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "Sig2"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "EmwK"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens", "stop_sequence": None}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    message = codec.aggregate_stream(parse_sse(_sse(*events)))
    assert message["content"] == [
        {"type": "thinking", "thinking": "ab", "signature": "Sig2"},
        {"type": "redacted_thinking", "data": "EmwK"},
    ]
    assert codec.decode_response(_b(message), CallIds(), _request()) == {
        "type": "final_answer",
        "text": "",
        "stop": "length",
        "reasoning": [{"type": "thinking", "text": "ab", "signature": "Sig2"}, {"type": "redacted_thinking", "data": "EmwK"}],
        "tokens": {"input": 10, "output": 2},
    }


def test_events_without_an_event_line_are_read_by_their_type() -> None:
    events = [SseEvent(None, e.data) for e in parse_sse(_stream_events([TEXT], {"stop_reason": "end_turn", "stop_sequence": None}))]
    assert codec.decode_response(codec.aggregate_stream(events), CallIds(), _request()) == {
        "type": "final_answer",
        "text": "Here you go.",
        "tokens": {"input": 10, "output": 9},
    }


def test_an_error_event_is_not_a_completed_call() -> None:
    events = parse_sse(_stream_events([TEXT], {"stop_reason": "end_turn", "stop_sequence": None}))
    error = SseEvent("error", json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
    with pytest.raises(StreamIncomplete) as err:
        codec.aggregate_stream([*events[:3], error])
    assert err.value.error == {"type": "overloaded_error", "message": "Overloaded"}
    assert "overloaded_error: Overloaded" in str(err.value)
    assert isinstance(err.value, BlackboxError)
    assert not isinstance(err.value, BlackboxUnsupportedError)


@pytest.mark.parametrize(
    ("cut", "detail"),
    [
        (lambda ev: ev[:-1], "before message_stop"),
        (lambda ev: [], "before message_start"),
        (lambda ev: ev[1:], "before message_start"),
        (
            lambda ev: [
                ev[0],
                SseEvent("content_block_delta", '{"type":"content_block_delta","index":5,"delta":{"type":"text_delta","text":"x"}}'),
            ],
            "malformed",
        ),
        (lambda ev: [ev[0], SseEvent("content_block_start", "{oops")], "not JSON"),
    ],
    ids=["no-message_stop", "empty", "no-message_start", "unknown-index", "bad-json"],
)
def test_a_cut_or_broken_stream_is_incomplete(cut: Any, detail: str) -> None:
    events = parse_sse(_stream_events([TEXT], {"stop_reason": "end_turn", "stop_sequence": None}))
    with pytest.raises(StreamIncomplete, match=detail):
        codec.aggregate_stream(cut(events))


def test_tool_input_that_is_not_json_is_incomplete() -> None:
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": _resp([], None)},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_01", "name": "x", "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"a": '}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens", "stop_sequence": None}, "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]
    with pytest.raises(StreamIncomplete, match="not valid JSON"):
        codec.aggregate_stream(parse_sse(_sse(*events)))


# --- encode_error ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_type", "expected"),
    [
        (400, None, "invalid_request_error"),
        (404, None, "not_found_error"),
        (429, None, "rate_limit_error"),
        (529, None, "overloaded_error"),
        (503, None, "api_error"),
        (409, None, "invalid_request_error"),
        (400, "permission_error", "permission_error"),
    ],
)
def test_errors_are_anthropic_shaped_and_not_retried(status: int, error_type: str | None, expected: str) -> None:
    err = BlackboxUnsupportedError("tools[0].strict", "not recorded", provider="anthropic")
    response = codec.encode_error(err.client_message, status=status, error_type=error_type)
    body = json.loads(response.body)
    assert response.status == status
    assert body == {
        "type": "error",
        "error": {"type": expected, "message": "BlackboxUnsupportedError: tools[0].strict: not recorded"},
        "request_id": body["request_id"],
    }
    assert re.fullmatch(r"req_bb[0-9a-f]{24}", body["request_id"])
    assert response.headers == {"content-type": "application/json", "x-should-retry": "false", "request-id": body["request_id"]}


# --- normalize_answer ------------------------------------------------------------------

BLOCKS: list[dict[str, Any]] = [
    {"type": "thinking", "thinking": "t", "signature": "s"},
    {"type": "text", "text": "Let me "},
    {"type": "text", "text": "look."},
    {"type": "tool_use", "id": "toolu_01Q", "name": "search", "input": {"q": "rust"}},
    {"type": "tool_use", "name": "open"},
]
NORMALIZED: dict[str, Any] = {
    "type": "tool_calls",
    "calls": [
        {"toolCallId": "call-3", "toolName": "search", "toolInput": {"q": "rust"}},
        {"toolCallId": "call-4", "toolName": "open", "toolInput": {}},
    ],
    "text": "Let me look.",
}


@pytest.mark.parametrize(
    "answer",
    [BLOCKS, {"content": BLOCKS}, {"role": "assistant", "content": BLOCKS}, _resp(BLOCKS, "tool_use")],
    ids=["blocks", "content", "assistant-turn", "message-body"],
)
def test_a_user_written_anthropic_answer_becomes_a_neutral_output_with_fresh_ids(answer: Any) -> None:
    ids = CallIds()
    ids.register("call-2")
    assert codec.normalize_answer(answer, ids) == NORMALIZED
    assert ids.next_index() == 5


def test_a_single_block_and_a_length_stop_are_understood() -> None:
    assert codec.normalize_answer({"type": "text", "text": "Fine."}, CallIds()) == {"type": "final_answer", "text": "Fine."}
    cut = _resp([{"type": "text", "text": "Cut sh"}], "max_tokens")
    assert codec.normalize_answer(cut, CallIds()) == {"type": "final_answer", "text": "Cut sh", "stop": "length"}


@pytest.mark.parametrize(
    "answer",
    [
        {"id": "chatcmpl-1", "choices": [{"message": {"role": "assistant", "content": "hi"}}]},
        {"content": "hi", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "assistant", "content": "just a string"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"type": "final_answer", "text": "already neutral"},
        "plain text",
        42,
    ],
)
def test_shapes_that_are_not_anthropic_ones_are_left_to_others(answer: Any) -> None:
    assert codec.normalize_answer(answer, CallIds()) is None


@pytest.mark.parametrize(
    "answer",
    [
        [],
        [{"type": "thinking", "thinking": "t", "signature": "s"}],
        {"content": [{"type": "text", "text": ""}]},
        [{"type": "image", "source": {}}],
    ],
    ids=["empty", "thinking-only", "empty-text", "image"],
)
def test_an_answer_without_text_or_tool_call_is_a_value_error(answer: Any) -> None:
    with pytest.raises(ValueError):
        codec.normalize_answer(answer, CallIds())


# --- rewrite_tool_result (a fork's edit) -----------------------------------------------


def test_a_fork_edit_rewrites_every_result_of_that_call_and_nothing_else() -> None:
    fixture = _load(FIXTURES / "tool_round.json")
    ids = CallIds()
    for call in fixture["calls"][:2]:  # the recording so far: call-0 (get_weather) and call-1 (get_forecast)
        codec.decode_response(_response_body(call), ids, codec.decode_request(_b(call["request"]), ids))
    body = _b(fixture["calls"][2]["request"])
    rewritten = codec.rewrite_tool_result(body, ids, "call-0", "31°C, clear sky")
    assert rewritten is not None
    messages = codec.decode_request(rewritten, ids).model_input["messages"]
    assert messages[2]["content"] == [
        {"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather", "result": "31°C, clear sky"}
    ]
    expected = fixture["calls"][2]["model_input"]["messages"]
    assert [m for i, m in enumerate(messages) if i != 2] == [m for i, m in enumerate(expected) if i != 2]


def test_a_fork_edit_turns_an_error_into_a_result() -> None:
    fixture = _load(FIXTURES / "tool_error.json")
    ids = CallIds()
    body = _b(fixture["calls"][0]["request"])
    codec.decode_request(body, ids)
    rewritten = codec.rewrite_tool_result(body, ids, "call-0", '{"port": 8080}')
    assert rewritten is not None
    assert codec.decode_request(rewritten, ids).model_input["messages"][2]["content"] == [
        {"type": "tool_result", "toolCallId": "call-0", "toolName": "read_file", "result": '{"port": 8080}'}
    ]


@pytest.mark.parametrize(
    "body", [_b(_req()), b"{not json", b"[]", _b(_req(messages=[*HISTORY_TOOL_ROUND]))], ids=["no-results", "not-json", "array", "no-match"]
)
def test_a_fork_edit_with_nothing_to_rewrite_is_none(body: bytes) -> None:
    ids = CallIds()
    ids.assign("toolu_01Pdf", "fetch_pdf")
    assert codec.rewrite_tool_result(body, ids, "call-0", "x") is None


def test_strict_true_on_a_tool_is_recorded_and_false_records_like_leaving_it_out() -> None:
    schema = {"type": "object"}
    decode = codec.decode_request
    tools = [{"name": "a", "input_schema": schema, "strict": True}, {"name": "b", "input_schema": schema, "strict": False}]
    mi = decode(json.dumps(_req(tools=tools)).encode(), CallIds()).model_input
    assert mi["tools"] == [{"name": "a", "inputSchema": schema, "strict": True}, {"name": "b", "inputSchema": schema}]


def test_a_tool_search_result_of_tool_references_is_a_list_of_neutral_parts() -> None:
    """Claude Code's ToolSearch loads tools with tool_reference blocks: recorded (and compared) by tool name."""
    use = {"type": "tool_use", "id": "toolu_ts", "name": "ToolSearch", "input": {"query": "select:WebFetch,WebSearch"}}
    refs = [
        {"type": "tool_reference", "tool_name": "WebFetch"},
        {"type": "tool_reference", "tool_name": "WebSearch", "cache_control": {"type": "ephemeral"}},
    ]
    result = {"type": "tool_result", "tool_use_id": "toolu_ts", "content": refs}
    messages = [{"role": "user", "content": "fetch it"}, {"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    mi = codec.decode_request(json.dumps(_req(messages=messages)).encode(), CallIds()).model_input
    [part] = cast(list[Any], mi["messages"][2]["content"])
    assert part == {
        "type": "tool_result",
        "toolCallId": "call-0",
        "toolName": "ToolSearch",
        "result": [{"type": "tool_reference", "toolName": "WebFetch"}, {"type": "tool_reference", "toolName": "WebSearch"}],
    }
    text_only = {**result, "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    again = codec.decode_request(json.dumps(_req(messages=[*messages[:2], {"role": "user", "content": [text_only]}])).encode(), CallIds())
    assert cast(list[Any], again.model_input["messages"][2]["content"])[0]["result"] == "ab"  # text alone: a string, as always


PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000")


def test_images_and_documents_are_content_addressed_parts() -> None:
    """Claude Code reading a PNG or a PDF: the bytes become their digest; a URL or file id is kept as the reference."""
    import base64
    import hashlib

    data = base64.b64encode(PNG).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    pdf = {"type": "document", "title": "report.pdf", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQ="}}
    by_url = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    plain = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "notes"}}
    use = {"type": "tool_use", "id": "toolu_r", "name": "Read", "input": {"file_path": "/w/img.png"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_r", "content": [image]}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Look:"}, pdf, by_url, plain]},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]
    mi = codec.decode_request(json.dumps(_req(messages=messages)).encode(), CallIds()).model_input
    digest = hashlib.sha256(PNG).hexdigest()
    assert mi["messages"][0]["content"] == [
        {"type": "text", "text": "Look:"},
        {
            "type": "document",
            "mediaType": "application/pdf",
            "sha256": hashlib.sha256(b"%PDF-1.4").hexdigest(),
            "size": 8,
            "name": "report.pdf",
        },
        {"type": "image", "url": "https://example.com/a.png"},
        {"type": "document", "mediaType": "text/plain", "sha256": hashlib.sha256(b"notes").hexdigest(), "size": 5},
    ]
    [part] = cast(list[Any], mi["messages"][2]["content"])
    assert part["result"] == [{"type": "image", "mediaType": "image/png", "sha256": digest, "size": len(PNG)}]
    # Another image is another digest: a strict replay tells them apart.
    other = json.loads(json.dumps(messages))
    other[2]["content"][0]["content"][0]["source"]["data"] = base64.b64encode(PNG + b"\0").decode()
    changed = codec.decode_request(json.dumps(_req(messages=other)).encode(), CallIds()).model_input
    assert changed["messages"][2] != mi["messages"][2] and changed["messages"][0] == mi["messages"][0]
    broken = json.loads(json.dumps(messages))
    broken[0]["content"][1]["source"]["data"] = "not base64!"
    with pytest.raises(BlackboxUnsupportedError, match=r"messages\[0\]\.content\[1\]\.source\.data"):
        codec.decode_request(json.dumps(_req(messages=broken)).encode(), CallIds())
