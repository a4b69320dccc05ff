"""The Gemini codec in plain Python: requests, positions of id-less calls, responses, streams, refusals, fork edits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from neutral_parts import output_calls

from blackbox_mitm.codecs import gemini as codec
from blackbox_mitm.codecs.base import CallIds, SseEvent, StreamIncomplete
from blackbox_mitm.codecs.sse import parse_sse
from blackbox_mitm.errors import BlackboxUnsupportedError

MODEL = "gemini-2.5-flash"
PATH = f"/v1beta/models/{MODEL}:generateContent"
STREAM_PATH = f"/v1beta/models/{MODEL}:streamGenerateContent"


def _body(**fields: Any) -> bytes:
    fields.setdefault("contents", [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}])
    return json.dumps(fields).encode()


def _decode(ids: CallIds | None = None, path: str = PATH, query: str = "", **fields: Any) -> Any:
    return codec.decode_request(_body(**fields), ids or CallIds(), path=path, query=query)


def _response(*parts: dict[str, Any], finish: str = "STOP", **extra: Any) -> bytes:
    return json.dumps(
        {
            "candidates": [{"content": {"role": "model", "parts": list(parts)}, "finishReason": finish, "index": 0, **extra}],
            "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 3, "totalTokenCount": 12},
            "modelVersion": "gemini-2.5-flash-001",
            "responseId": "Zx8yaPq1LMGm1dkP9oOxuAk",
        }
    ).encode()


CALL = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
USER = {"role": "user", "parts": [{"text": "Weather in Paris?"}]}


# --- which requests ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("POST", PATH, True),
        ("POST", STREAM_PATH, True),
        ("POST", f"/v1/models/{MODEL}:generateContent", True),
        ("POST", "/gateway/v1beta/models/gemini-3-pro-preview:streamGenerateContent", True),
        ("POST", "/v1internal:streamGenerateContent", True),
        ("GET", PATH, False),
        ("POST", f"/v1beta/models/{MODEL}:countTokens", False),
        ("POST", "/v1/chat/completions", False),
        ("POST", "/v1/messages", False),
    ],
)
def test_matches_model_calls_by_path(method: str, path: str, expected: bool) -> None:
    assert codec.matches(method, path, "alt=sse") is expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1beta/models", True),
        (f"/v1beta/models/{MODEL}:countTokens", True),
        ("/upload/v1beta/files", True),
        (f"/v1/models/{MODEL}:countTokens", True),
        ("/v1internal:loadCodeAssist", True),
        ("/v1/models", False),  # OpenAI's model list too: not Gemini's to answer
        ("/v1/messages/count_tokens", False),
        ("/v1/responses", False),
    ],
)
def test_speaks_for_gemini_paths_only(path: str, expected: bool) -> None:
    assert codec.speaks_for(path) is expected


# --- requests ------------------------------------------------------------------------


def test_the_model_and_streaming_come_from_the_path_and_the_query_is_not_kept() -> None:
    plain = _decode()
    assert (plain.model, plain.stream, plain.provider) == (MODEL, False, "gemini")
    assert plain.model_input == {"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": [], "model": MODEL}
    streamed = _decode(path=STREAM_PATH, query="alt=sse&key=AIzaSyTHISisAkeyTHATmustNOTbeKEPT000000")
    assert (streamed.model, streamed.stream) == (MODEL, True)
    assert streamed.model_input["params"] == {"stream": True}
    assert "AIzaSy" not in json.dumps(streamed.model_input)


def test_a_request_decodes_to_the_neutral_transcript() -> None:
    decoded = _decode(
        systemInstruction={"role": "user", "parts": [{"text": "Be "}, {"text": "brief."}]},
        contents=[
            {"role": "user", "parts": [{"text": "Weather in "}, {"text": "Paris?"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "thinking about it", "thought": True},
                    {"text": "Checking."},
                    {**CALL, "thoughtSignature": "c2lnbmF0dXJl"},
                ],
            },
            {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"celsius": 21}}}]},
        ],
        tools=[
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Weather",
                        "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}},
                    },
                    {"name": "now"},
                ]
            },
            {"functionDeclarations": [{"name": "geo", "parametersJsonSchema": {"type": "object"}}]},
        ],
        toolConfig={"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}},
        generationConfig={"temperature": 0.1, "maxOutputTokens": 99, "thinkingConfig": {"thinkingBudget": 0}, "candidateCount": 1},
        safetySettings=[{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_NONE"}],
        labels={"team": "x"},
    )
    assert decoded.model_input == {
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather", "result": {"celsius": 21}}],
            },
        ],
        "tools": [
            {
                "name": "get_weather",
                "description": "Weather",
                "inputSchema": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}},
            },
            {"name": "now", "inputSchema": {"type": "object", "properties": {}}},
            {"name": "geo", "inputSchema": {"type": "object"}},
        ],
        "systemPrompt": "Be brief.",
        "model": MODEL,
        "params": {
            "temperature": 0.1,
            "maxTokens": 99,
            "thinking": {"thinkingBudget": 0},
            "toolChoice": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]},
            "safetySettings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_NONE"}],
        },
    }


def test_snake_case_field_names_decode_like_camel_case_but_user_data_keeps_its_keys() -> None:
    camel = _decode(
        contents=[USER, {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"my_arg": 1}}}]}],
        tools=[{"functionDeclarations": [{"name": "f", "parametersJsonSchema": {"properties": {"my_arg": {"type": "integer"}}}}]}],
        generationConfig={"maxOutputTokens": 5, "thinkingConfig": {"thinkingBudget": 0}},
    )
    snake = codec.decode_request(
        json.dumps(
            {
                "contents": [USER, {"role": "model", "parts": [{"function_call": {"name": "f", "args": {"my_arg": 1}}}]}],
                "tools": [
                    {"function_declarations": [{"name": "f", "parameters_json_schema": {"properties": {"my_arg": {"type": "integer"}}}}]}
                ],
                "generation_config": {"max_output_tokens": 5, "thinking_config": {"thinking_budget": 0}},
            }
        ).encode(),
        CallIds(),
        path=PATH,
    )
    assert snake.model_input == camel.model_input
    assert camel.model_input["messages"][1]["content"][0]["toolInput"] == {"my_arg": 1}


def test_id_less_calls_keep_their_call_ids_across_the_run_by_position() -> None:
    ids = CallIds()
    first = _decode(ids)
    output = codec.decode_response(
        _response({"text": "Let me check."}, CALL, {"functionCall": {"name": "get_time", "args": {}}}), ids, first
    )
    assert output == {
        "type": "tool_calls",
        "calls": [
            {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}},
            {"toolCallId": "call-1", "toolName": "get_time", "toolInput": {}},
        ],
        "text": "Let me check.",
        "tokens": {"input": 9, "output": 3},
    }
    model_turn = {"role": "model", "parts": [{"text": "Let me check."}, CALL, {"functionCall": {"name": "get_time", "args": {}}}]}
    # Results in another order, and with ids of the agent's own making (Gemini CLI does that): paired by name.
    results = {
        "role": "user",
        "parts": [
            {"functionResponse": {"id": "get_time-1733-x", "name": "get_time", "response": {"now": "noon"}}},
            {"functionResponse": {"id": "get_weather-1733-y", "name": "get_weather", "response": {"celsius": 21}}},
        ],
    }
    second = _decode(ids, contents=[USER, model_turn, results])
    history = second.model_input["messages"]
    assert [p["toolCallId"] for p in history[1]["content"] if p["type"] == "tool_use"] == ["call-0", "call-1"]
    assert [(p["toolCallId"], p["toolName"]) for p in history[2]["content"]] == [("call-1", "get_time"), ("call-0", "get_weather")]
    answer = codec.decode_response(_response({"text": "Sunny at noon."}), ids, second)
    assert answer == {"type": "final_answer", "text": "Sunny at noon.", "tokens": {"input": 9, "output": 3}}
    # Asked again (a retry, or the next turn): the same history gives the same ids.
    again = _decode(ids, contents=[USER, model_turn, results, {"role": "model", "parts": [{"text": "Sunny at noon."}]}, USER])
    assert again.model_input["messages"][:3] == history


def test_two_conversations_with_calls_at_the_same_place_keep_their_own_ids() -> None:
    ids = CallIds()
    agent_q = {"role": "user", "parts": [{"text": "Plan the trip."}]}
    sub_q = {"role": "user", "parts": [{"text": "Sub-task: the weather."}]}
    agent = _decode(ids, contents=[agent_q])
    assert output_calls(codec.decode_response(_response(CALL), ids, agent))[0]["toolCallId"] == "call-0"
    sub = _decode(ids, contents=[sub_q])  # a sub-agent's own conversation, its call at the same place
    assert output_calls(codec.decode_response(_response(CALL), ids, sub))[0]["toolCallId"] == "call-1"
    result = {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {}}}]}
    turn = {"role": "model", "parts": [CALL]}
    assert _decode(ids, contents=[agent_q, turn, result]).tool_results()[0]["toolCallId"] == "call-0"
    assert _decode(ids, contents=[sub_q, turn, result]).tool_results()[0]["toolCallId"] == "call-1"


def test_a_replay_serves_its_own_ids_and_the_echoed_history_maps_back() -> None:
    ids = CallIds()
    ids.register("call-0", "get_weather")
    first = _decode(ids)
    served = codec.encode_response(
        {"type": "tool_calls", "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}}]},
        request=first,
        ids=ids,
        created_ms=1,
    )
    part = served["candidates"][0]["content"]["parts"][0]
    assert part["functionCall"] == {"id": "gemini-bb0", "name": "get_weather", "args": {"city": "Paris"}}
    assert part["thoughtSignature"] == "skip_thought_signature_validator"  # what Gemini 3 checks when the turn comes back
    turn = served["candidates"][0]["content"]
    with_ids = {"role": "user", "parts": [{"functionResponse": {"id": "gemini-bb0", "name": "get_weather", "response": {"c": 1}}}]}
    echoed = _decode(ids, contents=[USER, turn, with_ids])
    assert echoed.model_input["messages"][2]["content"][0]["toolCallId"] == "call-0"
    # A client that drops the ids still lands on call-0: the served call was noted by its place.
    stripped = {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]}
    no_ids = {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"c": 1}}}]}
    assert _decode(ids, contents=[USER, stripped, no_ids]).model_input == echoed.model_input


def test_provider_ids_are_used_when_present_and_never_stored() -> None:
    ids = CallIds()
    first = _decode(ids)
    output = codec.decode_response(_response({"functionCall": {"id": "fc-9f8e7d", "name": "get_weather", "args": {}}}), ids, first)
    assert output_calls(output)[0]["toolCallId"] == "call-0"
    turn = {"role": "model", "parts": [{"functionCall": {"id": "fc-9f8e7d", "name": "get_weather", "args": {}}}]}
    result = {"role": "user", "parts": [{"functionResponse": {"id": "fc-9f8e7d", "name": "get_weather", "response": {}}}]}
    decoded = _decode(ids, contents=[USER, turn, result])
    assert "fc-9f8e7d" not in json.dumps(decoded.model_input)
    assert decoded.tool_results() == [{"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather", "result": {}}]


def test_an_agent_built_history_gets_stable_ids() -> None:
    contents = [
        USER,
        {"role": "model", "parts": [CALL]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {}}}]},
    ]
    one, two = CallIds(), CallIds()
    assert _decode(one, contents=contents).model_input == _decode(two, contents=contents).model_input
    assert _decode(one, contents=contents).model_input == _decode(two, contents=contents).model_input


# --- responses -----------------------------------------------------------------------


def test_a_response_decodes_to_a_final_answer_without_provider_fields() -> None:
    output = codec.decode_response(
        _response({"text": "Sunny"}, {"text": ", 21°C."}, {"text": "", "thoughtSignature": "c2ln"}), CallIds(), _decode()
    )
    assert output == {
        "type": "final_answer",
        "text": "Sunny, 21°C.",
        "tokens": {"input": 9, "output": 3},
        "reasoning": [{"type": "thinking", "on": "text", "signature": "c2ln"}],  # kept, to be served back on the text
    }
    served = codec.encode_response(output, request=_decode(), ids=CallIds(), created_ms=1)["candidates"][0]["content"]["parts"]
    assert served == [{"text": "Sunny, 21°C.", "thoughtSignature": "c2ln"}]
    assert codec.decode_response(_response({"text": "Sun"}, finish="MAX_TOKENS"), CallIds(), _decode()) == {
        "type": "final_answer",
        "text": "Sun",
        "tokens": {"input": 9, "output": 3},
        "stop": "length",
    }
    assert codec.decode_response(_response(finish="MAX_TOKENS"), CallIds(), _decode()) == {
        "type": "final_answer",
        "text": "",
        "stop": "length",
        "tokens": {"input": 9, "output": 3},
    }


def test_only_the_first_call_of_a_served_turn_carries_the_sentinel_signature() -> None:
    calls = [{"toolCallId": f"call-{k}", "toolName": "get_weather", "toolInput": {"k": k}} for k in range(3)]
    body = codec.encode_response({"type": "tool_calls", "calls": calls, "text": "Go."}, request=_decode(), ids=CallIds(), created_ms=0)
    parts = body["candidates"][0]["content"]["parts"]
    assert [p.get("thoughtSignature") for p in parts] == [None, "skip_thought_signature_validator", None, None]
    assert "thoughtSignature" not in json.dumps(codec.decode_response(body, CallIds(), _decode()))


def test_a_synthesized_response_has_zero_usage_the_requested_model_and_our_id() -> None:
    body = codec.encode_response({"type": "final_answer", "text": "Hi", "stop": "length"}, request=_decode(), ids=CallIds(), created_ms=5)
    assert body["candidates"] == [{"content": {"parts": [{"text": "Hi"}], "role": "model"}, "finishReason": "MAX_TOKENS", "index": 0}]
    assert body["usageMetadata"] == {"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0}
    assert body["modelVersion"] == MODEL and body["responseId"].startswith("bb")
    again = codec.encode_response({"type": "final_answer", "text": "Hi", "stop": "length"}, request=_decode(), ids=CallIds(), created_ms=5)
    assert again == body  # the same answer is the same bytes


# --- streams -------------------------------------------------------------------------


def _chunk(*parts: dict[str, Any], finish: str | None = None, usage: int = 1) -> SseEvent:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return SseEvent(None, json.dumps({"candidates": [candidate], "usageMetadata": {"totalTokenCount": usage}, "modelVersion": "m"}))


def test_a_recorded_stream_adds_up_to_the_whole_response() -> None:
    events = [
        _chunk({"text": "thinking", "thought": True}),
        _chunk({"text": "Let me "}),
        _chunk({"text": "check."}, usage=2),
        _chunk(CALL, finish="STOP", usage=3),
    ]
    assert [codec.is_stream_end(e) for e in events] == [False, False, False, True]
    whole = codec.aggregate_stream(events)
    assert whole["candidates"][0]["content"]["parts"] == [{"text": "thinking", "thought": True}, {"text": "Let me check."}, CALL]
    assert whole["usageMetadata"] == {"totalTokenCount": 3}  # cumulative: the last chunk's
    output = codec.decode_response(whole, CallIds(), _decode())
    assert output == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}}],
        "text": "Let me check.",
        "reasoning": [{"type": "thinking", "text": "thinking"}],  # the thought part, served back as one
    }
    again = codec.aggregate_stream(parse_sse(codec.encode_stream(output, request=_decode(), ids=CallIds(), created_ms=1)))
    assert again["candidates"][0]["content"]["parts"][0] == {"text": "thinking", "thought": True}
    assert codec.decode_response(again, CallIds(), _decode()) == output


def test_a_stream_without_its_finish_reason_or_with_an_error_is_incomplete() -> None:
    with pytest.raises(StreamIncomplete, match="finishReason"):
        codec.aggregate_stream([_chunk({"text": "Let me "})])
    error = SseEvent(None, json.dumps({"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}))
    assert codec.is_stream_end(error)
    with pytest.raises(StreamIncomplete, match="overloaded") as exc:
        codec.aggregate_stream([_chunk({"text": "Let me "}), error])
    assert exc.value.error == {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}
    with pytest.raises(StreamIncomplete, match="not JSON"):
        codec.aggregate_stream([SseEvent(None, "{nope")])


def test_a_synthesized_stream_decodes_back_to_the_same_output() -> None:
    output = {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-3", "toolName": "get_weather", "toolInput": {"city": "Zürich"}}],
        "text": "Ligne ✓ 東京 — 👩‍💻 " * 10,
    }
    ids = CallIds()
    body = codec.encode_stream(output, request=_decode(path=STREAM_PATH, query="alt=sse"), ids=ids, created_ms=7)
    events = parse_sse(body)
    assert body.startswith(b"data: {") and b"[DONE]" not in body and b"event:" not in body
    assert len(events) > 3 and [codec.is_stream_end(e) for e in events].index(True) == len(events) - 1
    whole = codec.aggregate_stream(events)
    assert whole["candidates"][0]["content"]["parts"][-1]["functionCall"]["id"] == "gemini-bb3"
    replayed = codec.decode_response(whole, CallIds(), _decode())
    assert replayed["text"] == output["text"]
    assert [(c["toolName"], c["toolInput"]) for c in output_calls(replayed)] == [("get_weather", {"city": "Zürich"})]


def test_an_empty_final_answer_streams_as_one_chunk() -> None:
    events = parse_sse(codec.encode_stream({"type": "final_answer", "text": ""}, request=_decode(), ids=CallIds(), created_ms=0))
    assert len(events) == 1
    assert json.loads(events[0].data)["candidates"][0] == {
        "content": {"parts": [{"text": ""}], "role": "model"},
        "finishReason": "STOP",
        "index": 0,
    }


# --- refusals: one case per row of the table ----------------------------------------------


def _refusal_cases() -> dict[str, Any]:
    def request(**fields: Any) -> Any:
        return lambda: _decode(**fields)

    def response(*parts: dict[str, Any], finish: str = "STOP", **extra: Any) -> Any:
        return lambda: codec.decode_response(_response(*parts, finish=finish, **extra), CallIds(), _decode())

    blocked = json.dumps({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}).encode()
    two = json.dumps({"candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": "STOP"}] * 2}).encode()
    return {
        "gemini.code_assist": (
            lambda: _decode(path="/v1internal:streamGenerateContent", query="alt=sse"),
            "/v1internal:streamGenerateContent",
        ),
        "gemini.stream_json": (lambda: _decode(path=STREAM_PATH), "alt"),
        "gemini.candidate_count": (request(generationConfig={"candidateCount": 2}), "generationConfig.candidateCount: (it was 2)"),
        "gemini.non_text": (
            request(contents=[{"role": "user", "parts": [{"toolCall": {"functionCalls": []}}]}]),
            "contents[0].parts[0].toolCall",
        ),
        "gemini.builtin_tool": (request(tools=[{"mcpServers": [{"name": "docs"}]}]), "tools[0].mcpServers"),
        "gemini.cached_content": (request(cachedContent="cachedContents/abc"), "cachedContent"),
        "gemini.prompt_blocked": (
            lambda: codec.decode_response(blocked, CallIds(), _decode()),
            'promptFeedback.blockReason: (it was "PROHIBITED_CONTENT")',
        ),
        "gemini.candidates": (lambda: codec.decode_response(two, CallIds(), _decode()), "candidates:"),
        "gemini.finish_reason": (response({"text": "x"}, finish="SAFETY"), 'candidates[0].finishReason: (it was "SAFETY")'),
        "gemini.response_metadata": (
            response({"text": "x"}, logprobsResult={"topCandidates": []}),
            "candidates[0].logprobsResult",
        ),
        "gemini.non_text_response": (response({"toolCall": {"functionCalls": []}}), "candidates[0].content.parts[0].toolCall"),
        "gemini.text_after_call": (response(CALL, {"text": "done"}), "candidates[0].content.parts[1]"),
    }


@pytest.mark.parametrize("row", codec.REFUSALS, ids=lambda r: r.id)
def test_every_refusal_row_is_raised_naming_its_field(row: Any) -> None:
    cases = _refusal_cases()
    assert row.id in cases, f"no test case for refusal row {row.id}"
    call, field = cases[row.id]
    with pytest.raises(BlackboxUnsupportedError) as exc:
        call()
    assert exc.value.provider == "gemini"
    # One format for every codec: "field: reason (it was VALUE)"; a case "field: (it was VALUE)" names the value too.
    field, _, shown = field.partition(": (it was ")
    assert field in str(exc.value)
    assert row.reason in str(exc.value)
    if shown:
        assert exc.value.client_message == f"BlackboxUnsupportedError: {field}: {row.reason} (it was {shown}"
        assert exc.value.value == shown.removesuffix(")")


def test_the_cases_and_the_table_are_the_same_rows() -> None:
    assert set(_refusal_cases()) == {r.id for r in codec.REFUSALS}
    assert all(r.id.startswith("gemini.") and r.provider == "gemini" for r in codec.REFUSALS)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"not json", "body"),
        (b"[]", "body"),
        (json.dumps({"contents": {"role": "user"}}).encode(), "contents"),
        (json.dumps({"contents": [{"parts": [{"functionCall": {"args": {}}}]}]}).encode(), "contents[0].parts[0].functionCall"),
        (json.dumps({"contents": [{"parts": [{"text": 5}]}]}).encode(), "contents[0].parts[0].text"),
    ],
)
def test_an_unreadable_request_is_a_named_error(body: bytes, field: str) -> None:
    with pytest.raises(BlackboxUnsupportedError) as exc:
        codec.decode_request(body, CallIds(), path=PATH)
    assert exc.value.field == field


# --- errors --------------------------------------------------------------------------


def test_errors_are_google_shaped_and_say_not_to_retry() -> None:
    err = codec.encode_error("no such call", status=404)
    assert err.status == 404 and err.headers["x-should-retry"] == "false"
    assert json.loads(err.body) == {"error": {"code": 404, "message": "no such call", "status": "NOT_FOUND"}}
    typed = json.loads(codec.encode_error("diverged", error_type="replay_divergence").body)["error"]
    assert typed["status"] == "INVALID_ARGUMENT" and typed["details"][0]["reason"] == "replay_divergence"
    (event,) = parse_sse(codec.encode_stream_error("refused"))
    assert json.loads(event.data)["error"]["message"] == "refused" and codec.is_stream_end(event)


# --- fork edits ----------------------------------------------------------------------


def _tool_round(response: dict[str, Any] | None = None) -> bytes:
    result = {"functionResponse": {"name": "get_weather", "response": response or {"forecast": "rain"}}}
    return _body(contents=[USER, {"role": "model", "parts": [CALL]}, {"role": "user", "parts": [result]}])


def test_rewrite_tool_result_replaces_what_the_model_sees() -> None:
    ids = CallIds()
    codec.decode_response(_response(CALL), ids, _decode(ids))
    body = codec.rewrite_tool_result(_tool_round(), ids, "call-0", '{"forecast":"sun","celsius":24}')
    assert body is not None
    decoded = codec.decode_request(body, ids, path=PATH)
    assert decoded.tool_results()[0]["result"] == {"forecast": "sun", "celsius": 24}
    text = codec.rewrite_tool_result(_tool_round(), ids, "call-0", "sunny")
    assert text is not None and json.loads(text)["contents"][2]["parts"][0]["functionResponse"]["response"] == {"result": "sunny"}
    assert codec.rewrite_tool_result(_tool_round(), ids, "call-7", "x") is None
    assert codec.rewrite_tool_result(b"nope", ids, "call-0", "x") is None


def test_normalize_answer_takes_gemini_shapes_only() -> None:
    ids = CallIds()
    assert codec.normalize_answer({"parts": [{"text": "Hi"}]}, ids) == {"type": "final_answer", "text": "Hi"}
    assert codec.normalize_answer([{"text": "Go "}, {"function_call": {"name": "f", "args": {"a": 1}}}], ids) == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "f", "toolInput": {"a": 1}}],
        "text": "Go ",
    }
    whole = json.loads(_response({"text": "Cut"}, finish="MAX_TOKENS"))
    assert codec.normalize_answer(whole, ids) == {"type": "final_answer", "text": "Cut", "stop": "length"}
    other: Any
    for other in (
        {"content": "Hi"},
        {"choices": []},
        [{"type": "text", "text": "Hi"}],
        [{"role": "assistant", "content": "Hi"}],
        "Hi",
        {"role": "assistant", "content": []},
    ):
        assert codec.normalize_answer(other, ids) is None
    with pytest.raises(ValueError, match="neither text nor a function call"):
        codec.normalize_answer({"parts": []}, ids)
    with pytest.raises(ValueError, match="model turn"):
        codec.normalize_answer({"role": "user", "parts": [{"text": "Hi"}]}, ids)


# --- recorded fixtures (tests/fixtures/gemini) --------------------------------------------

FIXTURES = sorted((Path(__file__).resolve().parent.parent / "fixtures" / "gemini").glob("*.json"))


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.stem)
def test_recorded_calls_decode_to_their_neutral_steps(fixture: Path) -> None:
    data = json.loads(fixture.read_text())
    bare, _, query = data["path"].partition("?")
    ids = CallIds()
    for call in data["calls"]:
        request = codec.decode_request(json.dumps(call["request"]).encode(), ids, path=bare, query=query)
        assert request.model_input == call["model_input"]
        body = codec.aggregate_stream(parse_sse(call["stream"].encode())) if "stream" in call else json.loads(json.dumps(call["response"]))
        assert codec.decode_response(body, ids, request) == call["model_output"]


def test_inline_data_and_file_data_are_content_addressed_parts() -> None:
    """Gemini CLI's @img.png / @doc.pdf (inlineData beside the text) and a fileData URI."""
    import base64
    import hashlib

    png = b"\x89PNG\r\n\x1a\ngemini"
    parts = [
        {"text": "Describe "},
        {"text": "these."},
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(png).decode()}},
        {"inlineData": {"mimeType": "application/pdf", "data": base64.urlsafe_b64encode(b"%PDF-1.4 ~~~").decode()}},
        {"fileData": {"mimeType": "video/mp4", "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc"}},
    ]
    mi = _decode(contents=[{"role": "user", "parts": parts}]).model_input
    assert mi["messages"][0]["content"] == [
        {"type": "text", "text": "Describe these."},
        {"type": "image", "mediaType": "image/png", "sha256": hashlib.sha256(png).hexdigest(), "size": len(png)},
        {"type": "document", "mediaType": "application/pdf", "sha256": hashlib.sha256(b"%PDF-1.4 ~~~").hexdigest(), "size": 12},
        {"type": "video", "mediaType": "video/mp4", "url": "https://generativelanguage.googleapis.com/v1beta/files/abc"},
    ]
    with pytest.raises(BlackboxUnsupportedError, match="not base64"):
        _decode(contents=[{"role": "user", "parts": [{"inlineData": {"mimeType": "image/png", "data": "@@@"}}]}])


def test_speech_output_is_recorded_with_its_voice_compared() -> None:
    """responseModalities AUDIO and speechConfig: compared params; the answer's audio parts are media, served back as sent."""
    import base64
    import hashlib

    from blackbox_mitm.cassette.media import collecting, resolving

    voice = {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}}
    decoded = _decode(generationConfig={"responseModalities": ["AUDIO"], "speechConfig": voice})
    assert decoded.model_input["params"]["modalities"] == ["AUDIO"] and decoded.model_input["params"]["speechConfig"] == voice
    other = _decode(
        generationConfig={"responseModalities": ["AUDIO"], "speechConfig": {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Puck"}}}}
    )
    assert other.model_input != decoded.model_input  # another voice is another request
    pcm, mime = bytes(range(200)), "audio/L16;codec=pcm;rate=24000"
    answer = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"inlineData": {"mimeType": mime, "data": base64.b64encode(pcm).decode()}}]},
                "finishReason": "STOP",
            }
        ]
    }
    with collecting() as media:
        out = codec.decode_response(json.dumps(answer).encode(), CallIds(), decoded)
    digest = hashlib.sha256(pcm).hexdigest()
    assert out["content"] == [{"type": "audio", "mediaType": mime, "sha256": digest, "size": len(pcm)}] and out["text"] == ""
    assert media == {digest: (mime, pcm)}
    with resolving({digest: pcm}):
        served = codec.encode_response(out, request=decoded, ids=CallIds(), created_ms=0)
    assert served["candidates"][0]["content"]["parts"] == [{"inlineData": {"mimeType": mime, "data": base64.b64encode(pcm).decode()}}]
