"""The OpenAI chat-completions codec against reference bodies, its round trips, and every OpenAI refusal row."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from neutral_parts import listed, tool_result

from blackbox_mitm.cassette.payloads import ModelInput, ModelOutput
from blackbox_mitm.codecs import codec_for_path, openai_chat
from blackbox_mitm.codecs.base import CallIds, DecodedRequest, StreamIncomplete
from blackbox_mitm.codecs.sse import parse_sse
from blackbox_mitm.errors import BlackboxError, BlackboxUnsupportedError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "openai"
CREATED_MS = 1_750_000_000_123


def fixture(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return loaded


def body(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


def decode_fixture(name: str) -> tuple[DecodedRequest, ModelOutput, CallIds]:
    """Decode a fixture's request, then its response (or recorded stream), with one run's CallIds."""
    fx = fixture(name)
    ids = CallIds()
    request = openai_chat.decode_request(body(fx["request"]), ids)
    raw = openai_chat.aggregate_stream(parse_sse(fx["stream"].encode())) if "stream" in fx else body(fx["response"])
    return request, openai_chat.decode_response(raw, ids, request), ids


WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
    "required": ["city"],
    "additionalProperties": False,
}
WEATHER_TOOL = {"name": "get_weather", "description": "Current weather for a city", "inputSchema": WEATHER_SCHEMA}
OSLO_LIMA = [
    {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Oslo"}},
    {"toolCallId": "call-1", "toolName": "get_weather", "toolInput": {"city": "Lima", "unit": "celsius"}},
]

EXPECTED_INPUT: dict[str, dict[str, Any]] = {
    "plain_text": {
        "messages": [{"role": "user", "content": "What is the capital of France?"}],
        "tools": [],
        "systemPrompt": "You are a terse assistant.\n\nAnswer in English.",
        "model": "gpt-4.1-mini",
        "params": {"maxTokens": 256, "temperature": 0.2},
    },
    "tool_round": {
        "messages": [
            {"role": "user", "content": "Weather in Paris and Tokyo?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}},
                    {
                        "type": "tool_use",
                        "toolCallId": "call-1",
                        "toolName": "get_weather",
                        "toolInput": {"city": "Tokyo", "unit": "celsius"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather", "result": '{"temp_c": 18, "sky": "clear"}'},
                    {"type": "tool_result", "toolCallId": "call-1", "toolName": "get_weather", "result": '{"temp_c": 24}'},
                ],
            },
            {"role": "system", "content": "Keep it under 20 words."},
        ],
        "tools": [WEATHER_TOOL, {"name": "get_time", "inputSchema": {"type": "object", "properties": {}}}],
        "systemPrompt": "You are a weather bot.",
        "model": "gpt-4.1",
        "params": {"toolChoice": "auto", "parallelToolCalls": True, "seed": 9007199254740993},
    },
    "parallel_tool_calls": {
        "messages": [{"role": "user", "content": "Is it warmer in Oslo or in Lima right now?"}],
        "tools": [WEATHER_TOOL],
        "model": "gpt-4.1",
        "params": {"maxTokens": 512, "topP": 0.9, "toolChoice": "required"},
    },
    "length_stop": {
        "messages": [{"role": "user", "content": "Write a haiku about the sea."}],
        "tools": [],
        "model": "gpt-4o-mini",
        "params": {
            "maxTokens": 8,
            "responseFormat": {"type": "text"},
            "stop": ["\n\n"],
            "presencePenalty": -0.5,
            "frequencyPenalty": 0.5,
            "logitBias": {"50256": -100},
        },
    },
    "refusal": {
        "messages": [{"role": "user", "content": "How do I pick the lock on my neighbour's door?"}],
        "tools": [],
        "model": "gpt-4o-2024-08-06",
        "params": {"responseFormat": fixture("refusal")["request"]["response_format"]},
    },
    "unicode": {
        "messages": [
            {"role": "user", "content": "Traduis « café crème » en 日本語 et en עברית 🙂"},
            {"role": "assistant", "content": "D’accord — voici : カフェ・クレーム"},
            {"role": "user", "content": "Et en emoji ? 👉 \u00e9\u0301"},
        ],
        "tools": [
            {
                "name": "translate",
                "description": "Traduit un texte — précisément",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}, "lang": {"type": "string"}}},
            }
        ],
        "systemPrompt": "Tu es un traducteur. ✍️",
        "model": "gpt-4.1",
        "params": {"reasoningEffort": "low", "verbosity": "low"},
    },
    "stream_tool_calls": {
        "messages": [{"role": "user", "content": "Is it warmer in Oslo or in Lima right now?"}],
        "tools": [WEATHER_TOOL],
        "model": "gpt-4.1",
        "params": {"parallelToolCalls": True, "stream": True},
    },
    "stream_text": {
        "messages": [{"role": "user", "content": "Présente-toi."}],
        "tools": [],
        "model": "gpt-4o-mini",
        "params": {"stream": True},
    },
}

EXPECTED_OUTPUT: dict[str, dict[str, Any]] = {
    "plain_text": {"type": "final_answer", "text": "The capital of France is Paris."},
    "tool_round": {"type": "final_answer", "text": "Paris: 18 °C and clear. Tokyo: 24 °C."},
    "parallel_tool_calls": {"type": "tool_calls", "calls": OSLO_LIMA, "text": "Let me look both up."},
    "length_stop": {"type": "final_answer", "text": "Waves fold into foam,\nsalt", "stop": "length"},
    "refusal": {"type": "final_answer", "text": "I'm sorry, but I can't help with that.", "stop": "refusal"},
    "unicode": {
        "type": "tool_calls",
        "calls": [
            {
                "toolCallId": "call-0",
                "toolName": "translate",
                "toolInput": {"text": "café crème 😀", "lang": "日本語", "note": '"quoted" \\ back'},
            }
        ],
        "text": "Je traduis ☕",
    },
    "large_tool_result": {"type": "final_answer", "text": "Every 17th request returned 503: the upstream was overloaded."},
    "stream_tool_calls": {"type": "tool_calls", "calls": OSLO_LIMA, "text": "Checking both cities."},
    "stream_text": {"type": "final_answer", "text": "Bonjour ! Je m’appelle 🤖."},
}


# --- reference bodies ----------------------------------------------------------------


def test_every_fixture_has_expectations() -> None:
    names = {p.stem for p in FIXTURES.glob("*.json")}
    assert names == set(EXPECTED_OUTPUT)
    assert names - {"large_tool_result"} == set(EXPECTED_INPUT)


def test_module_is_registered_for_chat_completions() -> None:
    assert openai_chat.PROVIDER == "openai"
    assert codec_for_path("/v1/chat/completions") is openai_chat
    assert codec_for_path("/openai/deployments/x/chat/completions?api-version=2024-10-21") is openai_chat


@pytest.mark.parametrize("name", sorted(EXPECTED_INPUT))
def test_decode_request_fixture(name: str) -> None:
    request, _, _ = decode_fixture(name)
    assert request.model_input == EXPECTED_INPUT[name]
    assert request.provider == "openai"
    assert request.model == EXPECTED_INPUT[name]["model"]


@pytest.mark.parametrize("name", sorted(EXPECTED_OUTPUT))
def test_decode_response_fixture(name: str) -> None:
    _, output, _ = decode_fixture(name)
    # Every fixture reports usage 82 prompt / 17 completion tokens, but a stream that did not ask for usage.
    tokens = {} if name == "stream_text" else {"tokens": {"input": 82, "output": 17}}
    assert output == {**EXPECTED_OUTPUT[name], **tokens}


def test_stream_flags() -> None:
    assert decode_fixture("stream_tool_calls")[0].stream is True
    assert decode_fixture("stream_tool_calls")[0].include_usage is True
    assert (decode_fixture("stream_text")[0].stream, decode_fixture("stream_text")[0].include_usage) == (True, False)
    assert (decode_fixture("plain_text")[0].stream, decode_fixture("plain_text")[0].include_usage) == (False, False)
    # stream_options without stream asks for nothing.
    req = openai_chat.decode_request(body({"model": "m", "messages": [], "stream_options": {"include_usage": True}}), CallIds())
    assert (req.stream, req.include_usage, "params" in req.model_input) == (False, False, False)


def test_large_tool_result_kept_exactly() -> None:
    fx = fixture("large_tool_result")
    sent = fx["request"]["messages"][2]["content"]
    assert len(sent.encode()) > 200_000
    request, _, _ = decode_fixture("large_tool_result")
    assert request.model_input["messages"] == [
        {"role": "user", "content": "Why did some order requests fail? Read /var/log/app.log."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading the log."},
                {"type": "tool_use", "toolCallId": "call-0", "toolName": "read_file", "toolInput": {"path": "/var/log/app.log"}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "toolCallId": "call-0", "toolName": "read_file", "result": sent}]},
    ]
    assert request.tool_results()[0]["result"] is not None


def test_nothing_provider_native_in_outputs() -> None:
    for name in EXPECTED_OUTPUT:
        text = json.dumps(decode_fixture(name)[1])
        for native in ("chatcmpl-", "call_", "usage", "finish_reason", "system_fingerprint", "created"):
            assert native not in text, (name, native)


# --- request details -------------------------------------------------------------------


def decode(req: dict[str, Any], ids: CallIds | None = None) -> ModelInput:
    return openai_chat.decode_request(body({"model": "gpt-4.1", **req}), ids or CallIds()).model_input


def test_system_prompt_only_from_leading_messages() -> None:
    mi = decode({"messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": "late"}]})
    assert "systemPrompt" not in mi
    assert mi["messages"] == [{"role": "user", "content": "hi"}, {"role": "system", "content": "late"}]
    mi = decode({"messages": [{"role": "system", "content": "a"}, {"role": "developer", "content": ""}, {"role": "user", "content": "q"}]})
    assert mi["systemPrompt"] == "a\n\n"


def test_system_and_developer_compare_equal() -> None:
    as_system = decode({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]})
    as_developer = decode(
        {"messages": [{"role": "developer", "content": [{"type": "text", "text": "s"}]}, {"role": "user", "content": "q"}]}
    )
    assert as_system == as_developer


def test_max_tokens_and_max_completion_tokens_record_alike() -> None:
    assert decode({"messages": [], "max_tokens": 7}) == decode({"messages": [], "max_completion_tokens": 7})
    assert decode({"messages": [], "max_tokens": 7})["params"] == {"maxTokens": 7}


def test_every_compared_param_is_recorded_and_others_dropped() -> None:
    wire = {
        "max_completion_tokens": 1,
        "temperature": 0.5,
        "top_p": 0.1,
        "tool_choice": {"type": "function", "function": {"name": "f"}},
        "response_format": {"type": "json_object"},
        "stop": "END",
        "parallel_tool_calls": False,
        "seed": 3,
        "reasoning_effort": "minimal",
        "presence_penalty": 0.0,
        "frequency_penalty": 1,
        "logit_bias": {"1": 2},
        "logprobs": False,
        "top_logprobs": 0,
        "verbosity": "high",
        "prediction": {"type": "content", "content": "x"},
        "modalities": ["text"],
        "stream": True,
        # dropped:
        "metadata": {"a": "b"},
        "user": "u",
        "service_tier": "flex",
        "store": True,
        "stream_options": {"include_usage": False},
        "safety_identifier": "s",
        "prompt_cache_key": "k",
        "n": 1,
        "audio": None,
    }
    assert decode({"messages": [], **wire})["params"] == {
        "maxTokens": 1,
        "temperature": 0.5,
        "topP": 0.1,
        "toolChoice": {"type": "function", "function": {"name": "f"}},
        "responseFormat": {"type": "json_object"},
        "stop": "END",
        "parallelToolCalls": False,
        "seed": 3,
        "reasoningEffort": "minimal",
        "presencePenalty": 0.0,
        "frequencyPenalty": 1,
        "logitBias": {"1": 2},
        "logprobs": False,
        "topLogprobs": 0,
        "verbosity": "high",
        "prediction": {"type": "content", "content": "x"},
        "modalities": ["text"],
        "stream": True,
    }


def test_null_params_count_as_absent_and_empty_params_are_omitted() -> None:
    mi = decode({"messages": [], "temperature": None, "stop": None, "stream": False, "max_tokens": None})
    assert "params" not in mi


def test_tool_definitions() -> None:
    tools = [
        {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}, "strict": False}},
        {"type": "function", "function": {"name": "b", "description": "", "strict": None}},
        {"function": {"name": "c", "description": "no type key"}},
    ]
    assert decode({"messages": [], "tools": tools})["tools"] == [
        {"name": "a", "inputSchema": {"type": "object"}},
        {"name": "b", "description": "", "inputSchema": {"type": "object", "properties": {}}},
        {"name": "c", "description": "no type key", "inputSchema": {"type": "object", "properties": {}}},
    ]


def test_strict_true_is_a_recorded_and_compared_field_of_the_tool() -> None:
    """@openai/agents sends every zod tool with ``strict: true``: recorded, and a change of it is a divergence."""
    from blackbox_mitm.matcher.difference import first_difference

    tool: dict[str, Any] = {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}}
    strict = {"type": "function", "function": {**tool["function"], "strict": True}}
    loose, tight = decode({"messages": [], "tools": [tool]}), decode({"messages": [], "tools": [strict]})
    assert tight["tools"] == [{"name": "a", "inputSchema": {"type": "object"}, "strict": True}]
    assert loose["tools"] == [{"name": "a", "inputSchema": {"type": "object"}}]  # as before the field existed: same hash
    found = first_difference(tight, loose)
    assert found is not None and found.field == "tools"
    assert first_difference(tight, decode({"messages": [], "tools": [strict]})) is None


def test_empty_content_beside_streamed_tool_calls_is_recorded_and_served_back() -> None:
    """Some OpenAI-compatible servers open a tool-call turn with ``content: ""``: kept as ``text: ""``."""
    call = {"index": 0, "id": "call_9", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    events = sse_of(chunk({"role": "assistant", "content": ""}), chunk({"tool_calls": [call]}), chunk({}, "tool_calls"), "[DONE]")
    request = openai_chat.decode_request(body({"model": "m", "messages": [], "stream": True}), CallIds())
    output = openai_chat.decode_response(openai_chat.aggregate_stream(events), CallIds(), request)
    assert output == {"type": "tool_calls", "calls": [{"toolCallId": "call-0", "toolName": "f", "toolInput": {}}], "text": ""}
    whole = openai_chat.encode_response(output, request=request, ids=CallIds(), created_ms=CREATED_MS)
    assert whole["choices"][0]["message"]["content"] == ""
    served = stream_chunks(openai_chat.encode_stream(output, request=REQUEST_STREAM, ids=CallIds(), created_ms=CREATED_MS))
    assert served[0]["choices"][0]["delta"]["content"] == ""
    assert (
        openai_chat.decode_response(
            openai_chat.aggregate_stream(
                parse_sse(openai_chat.encode_stream(output, request=REQUEST_STREAM, ids=CallIds(), created_ms=CREATED_MS))
            ),
            CallIds(),
            request,
        )
        == output
    )


def test_assistant_text_beside_tool_calls_leads_and_empty_text_is_dropped() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    mi = decode(
        {
            "messages": [
                {"role": "assistant", "content": [{"type": "text", "text": "Let "}, {"type": "text", "text": "me."}], "tool_calls": [call]}
            ]
        }
    )
    assert mi["messages"][0]["content"] == [
        {"type": "text", "text": "Let me."},
        {"type": "tool_use", "toolCallId": "call-0", "toolName": "f", "toolInput": {}},
    ]
    mi = decode({"messages": [{"role": "assistant", "content": "", "tool_calls": [call]}]})
    assert mi["messages"][0]["content"] == [{"type": "tool_use", "toolCallId": "call-0", "toolName": "f", "toolInput": {}}]
    # An assistant turn without tool calls (null or []) is plain text.
    assert decode({"messages": [{"role": "assistant", "content": None, "tool_calls": []}]})["messages"] == [
        {"role": "assistant", "content": ""}
    ]


def test_tool_messages_group_into_one_user_turn_until_another_message() -> None:
    calls = [{"id": f"call_{n}", "type": "function", "function": {"name": f"t{n}", "arguments": f'{{"n": {n}}}'}} for n in range(3)]
    mi = decode(
        {
            "messages": [
                {"role": "assistant", "content": None, "tool_calls": calls},
                {"role": "tool", "tool_call_id": "call_1", "content": "one"},
                {"role": "tool", "tool_call_id": "call_0", "content": ""},
                {"role": "user", "content": "and?"},
                {"role": "tool", "tool_call_id": "call_2", "content": "two"},
            ]
        }
    )
    assert [m["role"] for m in mi["messages"]] == ["assistant", "user", "user", "user"]
    assert mi["messages"][1]["content"] == [
        {"type": "tool_result", "toolCallId": "call-1", "toolName": "t1", "result": "one"},
        {"type": "tool_result", "toolCallId": "call-0", "toolName": "t0", "result": ""},
    ]
    assert mi["messages"][2] == {"role": "user", "content": "and?"}
    assert mi["messages"][3]["content"] == [{"type": "tool_result", "toolCallId": "call-2", "toolName": "t2", "result": "two"}]


def test_tool_result_name_from_the_run_when_the_history_lacks_the_call() -> None:
    ids = CallIds()
    ids.assign("call_earlier", "lookup")
    mi = decode({"messages": [{"role": "tool", "tool_call_id": "call_earlier", "content": "r"}]}, ids)
    assert mi["messages"] == [
        {"role": "user", "content": [{"type": "tool_result", "toolCallId": "call-0", "toolName": "lookup", "result": "r"}]}
    ]
    mi = decode({"messages": [{"role": "tool", "tool_call_id": "call_unknown", "content": "r"}]})
    assert tool_result(listed(mi["messages"][0]["content"])[0])["toolName"] == ""


def test_served_ids_map_back_to_the_recorded_call_ids() -> None:
    ids = CallIds()
    ids.register("call-4", "get_weather")
    output = {"type": "tool_calls", "calls": [{"toolCallId": "call-4", "toolName": "get_weather", "toolInput": {"city": "Oslo"}}]}
    served = openai_chat.encode_response(
        output, request=DecodedRequest("openai", {"messages": [], "tools": []}, model="gpt-4.1"), ids=ids, created_ms=CREATED_MS
    )
    message = served["choices"][0]["message"]
    assert message["tool_calls"][0]["id"] == "call_bb4"
    mi = decode({"messages": [message, {"role": "tool", "tool_call_id": "call_bb4", "content": "cold"}]}, ids)
    assert mi["messages"] == [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "toolCallId": "call-4", "toolName": "get_weather", "toolInput": {"city": "Oslo"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "toolCallId": "call-4", "toolName": "get_weather", "result": "cold"}]},
    ]
    assert ids.next_index() == 5


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b"not json", "body"),
        (b"\xff\xfe{", "body"),
        (b"[1, 2]", "body"),
        (b'{"model": "m"}', "messages"),
        (b'{"messages": ["hi"]}', "messages[0]"),
        (b'{"messages": [{"role": "robot", "content": "x"}]}', "messages[0].role"),
        (b'{"messages": [{"role": "user", "content": 3}]}', "messages[0].content"),
        (b'{"messages": [{"role": "user", "content": [{"text": "no type"}]}]}', "messages[0].content[0]"),
        (b'{"messages": [{"role": "tool", "content": "x"}]}', "messages[0].tool_call_id"),
        (
            b'{"messages": [{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}]}',
            "messages[0].tool_calls[0].id",
        ),
        (b'{"messages": [], "tools": [{"type": "function"}]}', "tools[0].function"),
    ],
)
def test_unreadable_request_bodies_name_the_field(raw: bytes, field: str) -> None:
    with pytest.raises(BlackboxUnsupportedError) as err:
        openai_chat.decode_request(raw, CallIds())
    assert err.value.field == field
    assert err.value.client_message.startswith(f"BlackboxUnsupportedError: {field}: ")


# --- responses: encode, decode, round trips ----------------------------------------------

REQUEST = DecodedRequest("openai", {"messages": [], "tools": []}, model="gpt-4.1")
REQUEST_STREAM = DecodedRequest("openai", {"messages": [], "tools": []}, model="gpt-4.1", stream=True)
REQUEST_USAGE = DecodedRequest("openai", {"messages": [], "tools": []}, model="gpt-4.1", stream=True, include_usage=True)

LONG = "Lorem ipsum dolor sit amet, “consectetur” 🧪 adipiscing elit. " * 12
SHAPES: dict[str, dict[str, Any]] = {
    "final": {"type": "final_answer", "text": "Hello."},
    "empty_final": {"type": "final_answer", "text": ""},
    "long_final": {"type": "final_answer", "text": LONG},
    "length": {"type": "final_answer", "text": "Trunc", "stop": "length"},
    "refusal": {"type": "final_answer", "text": "I can't help with that.", "stop": "refusal"},
    "one_call": {"type": "tool_calls", "calls": [{"toolCallId": "call-0", "toolName": "f", "toolInput": {}}]},
    "calls_text": {"type": "tool_calls", "calls": OSLO_LIMA, "text": "Checking."},
    "calls_length": {"type": "tool_calls", "calls": OSLO_LIMA[:1], "stop": "length"},
    "odd_inputs": {
        "type": "tool_calls",
        "calls": [
            {"toolCallId": "call-0", "toolName": "g", "toolInput": {"z": 1, "a": [1.5, None, True], "é": '日本 "q" \n', "big": 2**60}},
            {"toolCallId": "call-1", "toolName": "g", "toolInput": None},
            {"toolCallId": "call-2", "toolName": "g", "toolInput": "just a string " * 20},
        ],
    },
    **{f"fixture_{name}": out for name, out in EXPECTED_OUTPUT.items()},
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_encode_response_round_trip(name: str) -> None:
    output = SHAPES[name]
    served_ids = CallIds()
    encoded = openai_chat.encode_response(copy.deepcopy(output), request=REQUEST, ids=served_ids, created_ms=CREATED_MS)
    # Through real JSON bytes, with a fresh run's CallIds: decode assigns call-0, call-1... in order.
    assert openai_chat.decode_response(body(encoded), CallIds(), REQUEST) == output
    for n, call in enumerate(encoded["choices"][0]["message"].get("tool_calls") or []):
        assert call["id"] == f"call_bb{n}"
        assert served_ids.neutral(call["id"]) == f"call-{n}"


@pytest.mark.parametrize("request_", [REQUEST_STREAM, REQUEST_USAGE], ids=["plain", "include_usage"])
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_encode_stream_round_trip(name: str, request_: DecodedRequest) -> None:
    output = SHAPES[name]
    sse = openai_chat.encode_stream(copy.deepcopy(output), request=request_, ids=CallIds(), created_ms=CREATED_MS)
    rebuilt = openai_chat.aggregate_stream(parse_sse(sse))
    assert openai_chat.decode_response(rebuilt, CallIds(), request_) == output


def test_single_tool_call_shape_is_accepted() -> None:
    single = {"type": "tool_call", "toolCallId": "call-0", "toolName": "f", "toolInput": {"a": 1}}
    plural = {"type": "tool_calls", "calls": [{"toolCallId": "call-0", "toolName": "f", "toolInput": {"a": 1}}]}
    a = openai_chat.encode_response(single, request=REQUEST, ids=CallIds(), created_ms=CREATED_MS)
    b = openai_chat.encode_response(plural, request=REQUEST, ids=CallIds(), created_ms=CREATED_MS)
    assert a["choices"] == b["choices"]
    assert openai_chat.decode_response(body(a), CallIds(), REQUEST) == plural
    sse = openai_chat.encode_stream(single, request=REQUEST_STREAM, ids=CallIds(), created_ms=CREATED_MS)
    assert openai_chat.decode_response(openai_chat.aggregate_stream(parse_sse(sse)), CallIds(), REQUEST_STREAM) == plural


def test_encode_response_body() -> None:
    output = {"type": "tool_calls", "calls": [{"toolCallId": "call-0", "toolName": "f", "toolInput": {"b": 1, "a": "é 😀", "c": [1, 2]}}]}
    encoded = openai_chat.encode_response(output, request=REQUEST, ids=CallIds(), created_ms=CREATED_MS)
    assert encoded["id"].startswith("chatcmpl-bb")
    assert encoded["object"] == "chat.completion"
    assert encoded["created"] == 1_750_000_000
    assert encoded["model"] == "gpt-4.1"
    assert (encoded["usage"]["prompt_tokens"], encoded["usage"]["completion_tokens"], encoded["usage"]["total_tokens"]) == (0, 0, 0)
    assert "system_fingerprint" not in encoded and "service_tier" not in encoded
    choice = encoded["choices"][0]
    assert (choice["index"], choice["logprobs"], choice["finish_reason"]) == (0, None, "tool_calls")
    assert choice["message"] == {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "annotations": [],
        "tool_calls": [{"id": "call_bb0", "type": "function", "function": {"name": "f", "arguments": '{"b":1,"a":"é 😀","c":[1,2]}'}}],
    }
    final = openai_chat.encode_response({"type": "final_answer", "text": "hi"}, request=REQUEST, ids=CallIds(), created_ms=CREATED_MS)
    assert final["choices"][0]["message"] == {"role": "assistant", "content": "hi", "refusal": None, "annotations": []}
    assert final["choices"][0]["finish_reason"] == "stop"
    refusal = openai_chat.encode_response(SHAPES["refusal"], request=REQUEST, ids=CallIds(), created_ms=CREATED_MS)
    assert refusal["choices"][0]["message"]["content"] is None
    assert refusal["choices"][0]["message"]["refusal"] == "I can't help with that."
    assert refusal["choices"][0]["finish_reason"] == "stop"
    # Same answer, same time -> same bytes; our ids only.
    again = openai_chat.encode_response(output, request=REQUEST, ids=CallIds(), created_ms=CREATED_MS)
    assert again == encoded


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "nope"},
        {"type": "final_answer"},
        {"type": "tool_calls", "calls": []},
        "text",
        {"type": "tool_calls", "calls": [{"toolName": "f"}]},
    ],
)
def test_encode_rejects_what_is_not_a_model_output(bad: Any) -> None:
    with pytest.raises(ValueError):
        openai_chat.encode_response(bad, request=REQUEST, ids=CallIds(), created_ms=CREATED_MS)
    with pytest.raises(ValueError):
        openai_chat.encode_stream(bad, request=REQUEST_STREAM, ids=CallIds(), created_ms=CREATED_MS)


def stream_chunks(sse: bytes) -> list[dict[str, Any]]:
    events = parse_sse(sse)
    assert events[-1].data == "[DONE]"
    assert all(e.event is None for e in events)
    return [json.loads(e.data) for e in events[:-1]]


def test_encode_stream_shape() -> None:
    output = {
        "type": "tool_calls",
        "calls": [*OSLO_LIMA, {"toolCallId": "call-2", "toolName": "big", "toolInput": {"q": "x" * 300}}],
        "text": LONG,
    }
    sse = openai_chat.encode_stream(output, request=REQUEST_STREAM, ids=CallIds(), created_ms=CREATED_MS)
    assert sse.endswith(b"data: [DONE]\n\n")
    chunks = stream_chunks(sse)
    assert {(c["id"], c["object"], c["created"], c["model"]) for c in chunks} == {
        (chunks[0]["id"], "chat.completion.chunk", 1_750_000_000, "gpt-4.1")
    }
    assert all("usage" not in c for c in chunks)
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[0] == {"role": "assistant", "content": "", "refusal": None}
    assert all("role" not in d for d in deltas[1:])
    assert sum(1 for d in deltas if "content" in d) > 2  # the narration arrives in pieces
    fragments = [tc for d in deltas for tc in d.get("tool_calls", [])]
    for index, served in enumerate(["call_bb0", "call_bb1", "call_bb2"]):
        mine = [f for f in fragments if f["index"] == index]
        assert [f.get("id") for f in mine if "id" in f] == [served]
        assert [f.get("type") for f in mine if "type" in f] == ["function"]
        assert [f["function"]["name"] for f in mine if "name" in f["function"]] == [OSLO_LIMA[index]["toolName"] if index < 2 else "big"]
    assert len([f for f in fragments if f["index"] == 2]) > 2  # long arguments arrive in pieces
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None] * (len(chunks) - 1) + ["tool_calls"]
    assert deltas[-1] == {}
    assert b"\ndata: \n" not in sse and sse.count(b"\n\n") == len(chunks) + 1


def test_encode_stream_usage_chunk_only_when_asked() -> None:
    chunks = stream_chunks(openai_chat.encode_stream(SHAPES["final"], request=REQUEST_USAGE, ids=CallIds(), created_ms=CREATED_MS))
    assert all(c["usage"] is None for c in chunks[:-1])
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["total_tokens"] == 0
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    plain = stream_chunks(openai_chat.encode_stream(SHAPES["final"], request=REQUEST_STREAM, ids=CallIds(), created_ms=CREATED_MS))
    assert all(c["choices"] for c in plain)


def test_encode_stream_refusal_and_tool_calls_start_with_null_content() -> None:
    refusal = stream_chunks(openai_chat.encode_stream(SHAPES["refusal"], request=REQUEST_STREAM, ids=CallIds(), created_ms=CREATED_MS))
    assert refusal[0]["choices"][0]["delta"] == {"role": "assistant", "content": None, "refusal": ""}
    assert "".join(c["choices"][0]["delta"].get("refusal") or "" for c in refusal) == "I can't help with that."
    calls = stream_chunks(openai_chat.encode_stream(SHAPES["one_call"], request=REQUEST_STREAM, ids=CallIds(), created_ms=CREATED_MS))
    assert calls[0]["choices"][0]["delta"] == {"role": "assistant", "content": None, "refusal": None}


# --- recorded streams -----------------------------------------------------------------


def chunk(delta: dict[str, Any], finish: str | None = None, *, index: int = 0, **extra: Any) -> str:
    return json.dumps(
        {
            "id": "chatcmpl-x",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": index, "delta": delta, "finish_reason": finish, **extra}],
        }
    )


def sse_of(*datas: str) -> list[Any]:
    return parse_sse("".join(f"data: {d}\n\n" for d in datas).encode())


def test_aggregate_stream_builds_the_whole_body() -> None:
    events = sse_of(
        chunk(
            {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "f", "arguments": ""}}],
            }
        ),
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "function": {"arguments": '{"x":'}},
                    {"index": 1, "id": "call_b", "type": "function", "function": {"name": "g", "arguments": "[1"}},
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": "]"}}, {"index": 0, "function": {"arguments": "2}"}}]}),
        chunk({}, "tool_calls"),
        '{"id":"chatcmpl-x","choices":[],"usage":{"total_tokens":5}}',
        "[DONE]",
    )
    rebuilt = openai_chat.aggregate_stream(events)
    assert rebuilt["object"] == "chat.completion"
    assert rebuilt["usage"] == {"total_tokens": 5}
    assert rebuilt["choices"] == [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [
                    {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": '{"x":2}'}},
                    {"id": "call_b", "type": "function", "function": {"name": "g", "arguments": "[1]"}},
                ],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ]


@pytest.mark.parametrize(
    "datas",
    [
        pytest.param([chunk({"content": "hi"}), chunk({}, "stop")], id="no-done"),
        pytest.param([chunk({"content": "hi"}), "[DONE]"], id="no-finish"),
        pytest.param(["[DONE]"], id="no-choices"),
        pytest.param(
            [chunk({"content": "hi"}), '{"error": {"message": "overloaded", "type": "server_error"}}', "[DONE]"], id="error-event"
        ),
        pytest.param([chunk({"content": "hi"}), "{not json", "[DONE]"], id="not-json"),
        pytest.param(['{"choices": [{"index": 0, "delta": "oops"}]}', "[DONE]"], id="malformed"),
    ],
)
def test_aggregate_stream_refuses_an_incomplete_call(datas: list[str]) -> None:
    with pytest.raises(StreamIncomplete) as err:
        openai_chat.aggregate_stream(sse_of(*datas))
    assert isinstance(err.value, BlackboxError)


def test_stream_error_event_is_kept_on_the_exception() -> None:
    with pytest.raises(StreamIncomplete) as err:
        openai_chat.aggregate_stream(sse_of('{"error": {"message": "overloaded", "type": "server_error"}}'))
    assert err.value.error == {"message": "overloaded", "type": "server_error"}
    assert "overloaded" in str(err.value)


def test_aggregate_stream_keeps_the_first_id_and_name() -> None:
    events = sse_of(
        chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "f"}}]}),
        chunk({}, "tool_calls"),
        "[DONE]",
    )
    call = openai_chat.aggregate_stream(events)["choices"][0]["message"]["tool_calls"][0]
    assert (call["id"], call["function"]["name"]) == ("call_a", "f")


# --- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (429, "rate_limit_error"),
        (500, "server_error"),
        (503, "server_error"),
    ],
)
def test_encode_error(status: int, kind: str) -> None:
    err = openai_chat.encode_error("BlackboxUnsupportedError: n: no", status=status)
    assert err.status == status
    assert err.headers["content-type"] == "application/json"
    assert err.headers["x-should-retry"] == "false"
    assert err.headers["x-request-id"].startswith("req_bb")
    assert json.loads(err.body) == {
        "error": {"message": "BlackboxUnsupportedError: n: no", "type": kind, "param": None, "code": "blackbox"}
    }


def test_encode_error_type_override() -> None:
    assert (
        json.loads(openai_chat.encode_error("m", status=409, error_type="replay_divergence").body)["error"]["type"] == "replay_divergence"
    )


# --- fork --response answers -------------------------------------------------------------


def test_normalize_answer_shapes() -> None:
    ids = CallIds()
    ids.register("call-6")
    message = {
        "role": "assistant",
        "content": "On it.",
        "tool_calls": [{"id": "x", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
    }
    assert openai_chat.normalize_answer(message, ids) == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-7", "toolName": "f", "toolInput": {"a": 1}}],
        "text": "On it.",
    }
    as_object = {"tool_calls": [{"function": {"name": "g", "arguments": {"b": [2]}}}]}
    assert openai_chat.normalize_answer(as_object, ids) == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-8", "toolName": "g", "toolInput": {"b": [2]}}],
    }
    assert openai_chat.normalize_answer({"content": "Done."}, CallIds()) == {"type": "final_answer", "text": "Done."}
    assert openai_chat.normalize_answer({"content": [{"type": "text", "text": "Do"}, {"type": "text", "text": "ne."}]}, CallIds()) == {
        "type": "final_answer",
        "text": "Done.",
    }
    whole = fixture("parallel_tool_calls")["response"]
    assert openai_chat.normalize_answer(whole, CallIds()) == EXPECTED_OUTPUT["parallel_tool_calls"]
    assert openai_chat.normalize_answer(fixture("length_stop")["response"], CallIds()) == EXPECTED_OUTPUT["length_stop"]
    assert openai_chat.normalize_answer(fixture("refusal")["response"], CallIds()) == EXPECTED_OUTPUT["refusal"]


@pytest.mark.parametrize(
    "answer",
    [
        "plain text",
        ["a"],
        {"type": "final_answer", "text": "neutral"},
        {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "anthropic"}], "stop_reason": "end_turn"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
        {"text": "something else"},
    ],
)
def test_normalize_answer_leaves_other_shapes(answer: Any) -> None:
    assert openai_chat.normalize_answer(answer, CallIds()) is None


@pytest.mark.parametrize(
    "answer",
    [
        {"content": None},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"choices": []},
        {"tool_calls": [{"function": {"arguments": "{}"}}]},
        {"tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]},
        {"role": "user", "content": "hi"},
    ],
)
def test_normalize_answer_rejects_empty_or_broken_answers(answer: Any) -> None:
    ids = CallIds()
    with pytest.raises(ValueError):
        openai_chat.normalize_answer(answer, ids)
    assert ids.next_index() == 0


# --- the refusal table --------------------------------------------------------------------

BASE_REQUEST: dict[str, Any] = {
    "model": "gpt-4.1",
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "sunny"}]},
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}, "strict": False}}],
}
BASE_RESPONSE: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4.1",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Sunny.", "refusal": None, "annotations": []},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
}
CALL = {"id": "call_9", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}


@dataclass(frozen=True)
class Case:
    row: str
    name: str
    side: str  # "request" | "response" | "stream"
    edit: Any  # a function that breaks a deep copy of the base body
    field: str


def req_edit(path: str, value: Any) -> Any:
    """Set ``path`` (dots and [n] indexes) of a body to ``value``; an index one past the end appends."""

    def apply(doc: dict[str, Any]) -> None:
        keys = path.replace("[", ".").replace("]", "").split(".")
        target: Any = doc
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        last = keys[-1]
        if isinstance(target, list) and int(last) == len(target):
            target.append(value)
        elif isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return apply


def message(**fields: Any) -> Any:
    return req_edit("choices[0].message", {"role": "assistant", "content": None, "refusal": None, **fields})


def both(*edits: Any) -> Any:
    def apply(doc: dict[str, Any]) -> None:
        for edit in edits:
            edit(doc)

    return apply


CASES = [
    Case(
        "openai.image_content",
        "unknown_part",
        "request",
        req_edit("messages[0].content[1]", {"type": "video_url", "video_url": {"url": "https://x/y.mp4"}}),
        "messages[0].content[1].type",
    ),
    Case(
        "openai.image_content",
        "tool_result_unknown_part",
        "request",
        req_edit("messages[2].content[0]", {"type": "input_video", "input_video": {"data": "AAAA"}}),
        "messages[2].content[0].type",
    ),
    Case(
        "openai.non_text_role",
        "system_image",
        "request",
        req_edit("messages[0]", {"role": "system", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}),
        "messages[0].content[0].type",
    ),
    Case(
        "openai.non_text_role",
        "developer_file",
        "request",
        req_edit("messages[0]", {"role": "developer", "content": [{"type": "file", "file": {"file_id": "file-1"}}]}),
        "messages[0].content[0].type",
    ),
    Case(
        "openai.non_text_role",
        "assistant_audio_part",
        "request",
        req_edit("messages[1].content", [{"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]),
        "messages[1].content[0].type",
    ),
    Case("openai.custom_tool", "custom", "request", req_edit("tools[0]", {"type": "custom", "custom": {"name": "grep"}}), "tools[0].type"),
    Case(
        "openai.custom_tool_call",
        "history",
        "request",
        req_edit("messages[1].tool_calls[0]", {"id": "call_1", "type": "custom", "custom": {"name": "grep", "input": "x"}}),
        "messages[1].tool_calls[0].type",
    ),
    Case(
        "openai.custom_tool_call",
        "response",
        "response",
        message(tool_calls=[{"id": "call_1", "type": "custom", "custom": {"name": "grep", "input": "x"}}]),
        "choices[0].message.tool_calls[0].type",
    ),
    Case("openai.n", "n", "request", req_edit("n", 2), "n"),
    Case("openai.choices", "two", "response", lambda d: d["choices"].append({**d["choices"][0], "index": 1}), "choices"),
    Case("openai.choices", "stream", "stream", lambda d: d["choices"].append({**d["choices"][0], "index": 1}), "choices"),
    Case("openai.audio_unknown_id", "history", "request", req_edit("messages[1].audio", {"id": "audio_1"}), "messages[1].audio.id"),
    Case("openai.functions", "functions", "request", req_edit("functions", [{"name": "f", "parameters": {}}]), "functions"),
    Case("openai.functions", "function_call", "request", req_edit("function_call", "auto"), "function_call"),
    Case(
        "openai.function_call_message",
        "response",
        "response",
        req_edit("choices[0].message.function_call", {"name": "f", "arguments": "{}"}),
        "choices[0].message.function_call",
    ),
    Case(
        "openai.function_call_message",
        "history",
        "request",
        req_edit("messages[1].function_call", {"name": "f", "arguments": "{}"}),
        "messages[1].function_call",
    ),
    Case(
        "openai.function_call_message",
        "function_role",
        "request",
        req_edit("messages[2]", {"role": "function", "name": "f", "content": "x"}),
        "messages[2].role",
    ),
    Case(
        "openai.function_call_message",
        "function_role_unnamed",
        "request",
        req_edit("messages[2]", {"role": "function", "content": "x"}),
        "messages[2].role",
    ),
    Case("openai.message_name", "name", "request", req_edit("messages[0].name", "alice"), "messages[0].name"),
    Case(
        "openai.content_filter", "response", "response", req_edit("choices[0].finish_reason", "content_filter"), "choices[0].finish_reason"
    ),
    Case("openai.content_filter", "stream", "stream", req_edit("choices[0].finish_reason", "content_filter"), "choices[0].finish_reason"),
    Case(
        "openai.azure_content_filter",
        "answer_filtered",
        "response",
        req_edit("choices[0].content_filter_results", {"hate": {"filtered": True, "severity": "high"}}),
        "choices[0].content_filter_results.hate.filtered",
    ),
    Case(
        "openai.azure_content_filter",
        "prompt_detected",
        "response",
        req_edit(
            "prompt_filter_results", [{"prompt_index": 0, "content_filter_results": {"jailbreak": {"filtered": False, "detected": True}}}]
        ),
        "prompt_filter_results[0].content_filter_results.jailbreak.detected",
    ),
    Case("openai.tool_calls_finish", "stop", "response", both(message(tool_calls=[CALL])), "choices[0].finish_reason"),
    Case("openai.null_content", "final_null", "response", req_edit("choices[0].message.content", None), "choices[0].message.content"),
    Case(
        "openai.refusal_mixed",
        "tool_calls",
        "response",
        both(message(refusal="No.", tool_calls=[CALL]), req_edit("choices[0].finish_reason", "tool_calls")),
        "choices[0].message.tool_calls",
    ),
    Case(
        "openai.refusal_mixed",
        "length",
        "response",
        both(message(refusal="No."), req_edit("choices[0].finish_reason", "length")),
        "choices[0].finish_reason",
    ),
    Case(
        "openai.annotations_response",
        "annotations",
        "response",
        req_edit(
            "choices[0].message.annotations",
            [{"type": "url_citation", "url_citation": {"start_index": 0, "end_index": 1, "title": "t", "url": "https://x"}}],
        ),
        "choices[0].message.annotations",
    ),
    Case("openai.web_search_options", "field", "request", req_edit("web_search_options", {}), "web_search_options"),
    Case("openai.content_and_refusal", "both", "response", message(content="Sure", refusal="No."), "choices[0].message.content"),
    Case(
        "openai.both_max_tokens",
        "both",
        "request",
        both(req_edit("max_tokens", 5), req_edit("max_completion_tokens", 5)),
        "max_completion_tokens",
    ),
    Case(
        "openai.tool_arguments",
        "response",
        "response",
        both(
            message(tool_calls=[{**CALL, "function": {"name": "f", "arguments": '{"a": 1'}}]),
            req_edit("choices[0].finish_reason", "tool_calls"),
        ),
        "choices[0].message.tool_calls[0].function.arguments",
    ),
    Case(
        "openai.tool_arguments",
        "history",
        "request",
        req_edit("messages[1].tool_calls[0].function.arguments", ""),
        "messages[1].tool_calls[0].function.arguments",
    ),
    Case(
        "openai.finish_reason",
        "tool_calls_without_calls",
        "response",
        req_edit("choices[0].finish_reason", "tool_calls"),
        "choices[0].finish_reason",
    ),
    Case("openai.finish_reason", "missing", "response", req_edit("choices[0].finish_reason", None), "choices[0].finish_reason"),
]


def to_stream(response: dict[str, Any]) -> dict[str, Any]:
    """A non-streaming body sent as the chunk stream the API would have sent for it (no [DONE] issue), aggregated back."""
    chunks = []
    for choice in response["choices"]:
        delta = {k: v for k, v in choice["message"].items() if k not in ("annotations",) and v is not None}
        chunks.append(
            {
                "id": response["id"],
                "object": "chat.completion.chunk",
                "choices": [{"index": choice["index"], "delta": delta, "logprobs": choice["logprobs"], "finish_reason": None}],
            }
        )
        chunks.append(
            {
                "id": response["id"],
                "object": "chat.completion.chunk",
                "choices": [{"index": choice["index"], "delta": {}, "logprobs": None, "finish_reason": choice["finish_reason"]}],
            }
        )
    return openai_chat.aggregate_stream(sse_of(*(json.dumps(c) for c in chunks), "[DONE]"))


def run_case(side: str, doc: dict[str, Any]) -> Any:
    ids = CallIds()
    if side == "request":
        return openai_chat.decode_request(body(doc), ids)
    request = openai_chat.decode_request(body(BASE_REQUEST), ids)
    raw = to_stream(doc) if side == "stream" else body(doc)
    return openai_chat.decode_response(raw, ids, request)


def test_the_base_bodies_are_accepted() -> None:
    # So each case below fails because of its one edit, not because of the base.
    for side in ("request", "response", "stream"):
        run_case(side, copy.deepcopy(BASE_REQUEST if side == "request" else BASE_RESPONSE))


def test_every_openai_row_has_a_case() -> None:
    rows = {r.id for r in openai_chat.REFUSALS}
    assert {case.row for case in CASES} == rows


@pytest.mark.parametrize("case", CASES, ids=[f"{c.row}-{c.name}" for c in CASES])
def test_refusal(case: Case) -> None:
    doc = copy.deepcopy(BASE_REQUEST if case.side == "request" else BASE_RESPONSE)
    case.edit(doc)
    with pytest.raises(BlackboxUnsupportedError) as err:
        run_case(case.side, doc)
    assert err.value.field == case.field
    assert err.value.reason == openai_chat.REFUSALS.row(case.row).reason
    assert err.value.provider == "openai"
    assert err.value.client_message.startswith(f"BlackboxUnsupportedError: {case.field}: ")


def test_a_refused_response_assigns_no_call_ids() -> None:
    ids = CallIds()
    good = {**CALL, "id": "call_good"}
    bad = {**CALL, "id": "call_bad", "function": {"name": "f", "arguments": "nope"}}
    doc = copy.deepcopy(BASE_RESPONSE)
    message(tool_calls=[good, bad])(doc)
    doc["choices"][0]["finish_reason"] = "tool_calls"
    with pytest.raises(BlackboxUnsupportedError):
        openai_chat.decode_response(body(doc), ids, REQUEST)
    assert ids.next_index() == 0


def test_empty_refusal_is_no_refusal() -> None:
    doc = copy.deepcopy(BASE_RESPONSE)
    doc["choices"][0]["message"]["refusal"] = ""
    assert openai_chat.decode_response(body(doc), CallIds(), REQUEST) == {"type": "final_answer", "text": "Sunny."}
    req = copy.deepcopy(BASE_REQUEST)
    req["messages"][1]["refusal"] = ""
    openai_chat.decode_request(body(req), CallIds())


def test_images_files_and_audio_are_content_addressed_parts() -> None:
    """image_url (a data URL or a URL), input_audio and file parts: inline bytes by digest, references kept."""
    import base64
    import hashlib

    png = b"\x89PNG\r\n\x1a\n-pixels"
    data = base64.b64encode(png).decode()
    content = [
        {"type": "text", "text": "What is in "},
        {"type": "text", "text": "these?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}", "detail": "high"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
        {"type": "input_audio", "input_audio": {"data": base64.b64encode(b"RIFF").decode(), "format": "wav"}},
        {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0xLjQ="}},
    ]
    call = {"id": "call_1", "type": "function", "function": {"name": "shot", "arguments": "{}"}}
    tool = {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}],
    }
    mi = decode({"messages": [{"role": "user", "content": content}, {"role": "assistant", "content": None, "tool_calls": [call]}, tool]})
    digest = hashlib.sha256(png).hexdigest()
    assert mi["messages"][0]["content"] == [
        {"type": "text", "text": "What is in these?"},
        {"type": "image", "mediaType": "image/png", "sha256": digest, "size": len(png), "detail": "high"},
        {"type": "image", "url": "https://example.com/cat.jpg"},
        {"type": "audio", "mediaType": "audio/wav", "sha256": hashlib.sha256(b"RIFF").hexdigest(), "size": 4},
        {"type": "document", "mediaType": "application/pdf", "sha256": hashlib.sha256(b"%PDF-1.4").hexdigest(), "size": 8, "name": "a.pdf"},
    ]
    assert tool_result(listed(mi["messages"][2]["content"])[0])["result"] == [
        {"type": "image", "mediaType": "image/png", "sha256": digest, "size": len(png)}
    ]
    with pytest.raises(BlackboxUnsupportedError, match="not base64"):
        decode({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@"}}]}]})


def test_a_refusal_in_the_history_is_a_refusal_part_whichever_way_it_is_sent() -> None:
    """The API takes an assistant's refusal back (the ``refusal`` field or a ``refusal`` part): a part of its own."""

    def turn(**assistant: Any) -> Any:
        req = {
            "model": "m",
            "messages": [{"role": "user", "content": "Help?"}, {"role": "assistant", **assistant}, {"role": "user", "content": "Why?"}],
        }
        return openai_chat.decode_request(json.dumps(req).encode(), CallIds()).model_input["messages"][1]

    refused = {"role": "assistant", "content": [{"type": "refusal", "text": "I can't help with that."}]}
    assert turn(content=None, refusal="I can't help with that.") == refused
    assert turn(content=[{"type": "refusal", "refusal": "I can't help with that."}]) == refused
    assert turn(content=[{"type": "refusal", "refusal": "I can't help with that."}], refusal="I can't help with that.") == refused
    assert turn(content="I can't help with that.") == {"role": "assistant", "content": "I can't help with that."}  # text is not a refusal
    assert turn(content="Partly: ", refusal="no more.") == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Partly: "}, {"type": "refusal", "text": "no more."}],
    }
    assert turn(content=None, refusal="") == {"role": "assistant", "content": ""}  # an empty refusal is no refusal


def test_a_served_refusal_sent_back_matches_the_recorded_history() -> None:
    """Record: the provider's refusal, sent back in the next request; replay: ours, sent back the same way."""
    ids = CallIds()
    request = openai_chat.decode_request(json.dumps({"model": "m", "messages": [{"role": "user", "content": "Help?"}]}).encode(), ids)
    served = openai_chat.encode_response(
        {"type": "final_answer", "text": "I can't.", "stop": "refusal"}, request=request, ids=ids, created_ms=1_000
    )
    message = served["choices"][0]["message"]
    follow = {"model": "m", "messages": [{"role": "user", "content": "Help?"}, {k: message[k] for k in ("role", "content", "refusal")}]}
    assert openai_chat.decode_request(json.dumps(follow).encode(), ids).model_input["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "refusal", "text": "I can't."}],
    }
