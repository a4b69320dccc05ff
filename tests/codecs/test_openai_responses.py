"""The Responses API codec: recorded bodies -> neutral steps, chains, custom tools, streams, and every refusal row."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from neutral_parts import listed, output_calls, tool_result

from blackbox_mitm.codecs import codec_for, openai_responses
from blackbox_mitm.codecs.base import CallIds, DecodedRequest, SseEvent, StreamIncomplete
from blackbox_mitm.codecs.sse import parse_sse
from blackbox_mitm.errors import BlackboxUnsupportedError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "openai-responses"
CREATED_MS = 1_764_580_000_123
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"],
    "additionalProperties": False,
}
WEATHER = {"name": "get_weather", "description": "Current weather for a city", "inputSchema": WEATHER_SCHEMA}
PROVIDER_ID = re.compile(r'"(resp_|msg_|fc_|ctc_|call_|rs_)[A-Za-z0-9]')


def body(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


def calls_of(name: str) -> list[dict[str, Any]]:
    data = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    calls: list[dict[str, Any]] = data.get("calls", [data])
    return calls


# Every fixture's answer reports this usage (input_tokens 74, output_tokens 19, no cached or reasoning tokens).
FIXTURE_TOKENS = {"input": 74, "output": 19}


def run(name: str, ids: CallIds | None = None) -> list[tuple[DecodedRequest, dict[str, Any]]]:
    """Decode a fixture's calls in order with one run's CallIds: (request, model_output without its tokens) per call.

    Each answer's ``tokens`` are checked here (``FIXTURE_TOKENS``), so the tests below look at the rest.
    """
    ids = ids or CallIds()
    out = []
    for call in calls_of(name):
        request = openai_responses.decode_request(body(call["request"]), ids)
        raw = openai_responses.aggregate_stream(parse_sse(call["stream"].encode())) if "stream" in call else body(call["response"])
        output = dict(openai_responses.decode_response(raw, ids, request))
        assert output.pop("tokens") == FIXTURE_TOKENS
        out.append((request, output))
    return out


def test_the_codec_answers_responses_posts_only() -> None:
    assert codec_for("POST", "/v1/responses") is openai_responses
    assert codec_for("POST", "/backend-api/codex/responses") is openai_responses
    assert codec_for("GET", "/v1/responses") is None  # a WebSocket upgrade is the transport's business
    assert codec_for("POST", "/v1/responses/resp_1/cancel") is None
    assert openai_responses.speaks_for("/v1/responses/resp_1/input_items") and not openai_responses.speaks_for("/v1/messages")


def test_plain_text_with_instructions_and_controls() -> None:
    [(request, output)] = run("plain_text")
    assert request.model_input == {
        "messages": [{"role": "user", "content": "What is the capital of France?"}],
        "tools": [],
        "systemPrompt": "You are a terse assistant.",
        "model": "gpt-4.1",
        "params": {"maxTokens": 256, "temperature": 0.2},
    }
    assert output == {"type": "final_answer", "text": "Paris."}


TOOL_ROUND = [
    {"role": "user", "content": "What's the weather in Oslo, in celsius?"},
    {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Oslo", "unit": "celsius"}}
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather", "result": '{"temp_c": 4, "sky": "overcast"}'}
        ],
    },
]


def test_a_chained_round_and_a_whole_history_give_the_same_transcript() -> None:
    (first, call), (second, answer) = run("tool_round_chained")
    assert call == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Oslo", "unit": "celsius"}}],
    }
    assert first.model_input["tools"] == [{**WEATHER, "strict": True}]  # the fixture's tool says strict: true
    assert second.model_input["messages"] == TOOL_ROUND
    assert answer == {"type": "final_answer", "text": "It is 4 °C and overcast in Oslo."}

    (_, _), (whole, _) = run("tool_round_full_history")  # store: false, reasoning items echoed with encrypted_content
    assert whole.model_input["messages"] == TOOL_ROUND
    assert whole.model_input["systemPrompt"] == "You are a weather agent."
    assert whole.model_input["params"] == {"reasoningEffort": "low"}  # include, store, stream: false are not compared


def test_custom_tools_from_an_additional_tools_item_record_as_ordinary_rounds() -> None:
    (first, call), (second, answer) = run("codex_custom_exec")
    exec_tool = {
        "name": "exec",
        "description": "Runs a shell command and returns its output.",
        "inputSchema": {"type": "string", "format": {"type": "grammar", "syntax": "lark", "definition": "start: COMMAND\nCOMMAND: /.+/s"}},
    }
    assert first.model_input["tools"] == [exec_tool]
    assert first.model_input["systemPrompt"] == "You are Codex, a coding agent.\n\n<permissions>sandbox: workspace-write</permissions>"
    assert first.model_input["params"] == {"toolChoice": "auto", "parallelToolCalls": False, "reasoningEffort": "medium", "stream": True}
    assert call == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "exec", "toolInput": "ls -1 | wc -l"}],
        # Codex's reasoning item, kept with its encrypted_content so a fork --live continuation can send it back.
        "reasoning": [{"type": "thinking", "signature": "gAAAAABo_codex_blob=="}],
    }
    assert second.model_input["messages"][-2:] == [
        {"role": "assistant", "content": [{"type": "tool_use", "toolCallId": "call-0", "toolName": "exec", "toolInput": "ls -1 | wc -l"}]},
        {"role": "user", "content": [{"type": "tool_result", "toolCallId": "call-0", "toolName": "exec", "result": "3\n"}]},
    ]
    assert answer == {"type": "final_answer", "text": "There are 3 files here."}


def test_a_replayed_custom_call_is_a_custom_tool_call_again() -> None:
    (first, call), _ = run("codex_custom_exec")
    [reasoning, item] = openai_responses.encode_response(call, request=first, ids=CallIds(), created_ms=CREATED_MS)["output"]
    assert item["type"] == "custom_tool_call" and item["input"] == "ls -1 | wc -l" and item["call_id"] == "call_bb0"
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"] == "gAAAAABo_codex_blob=="
    assert reasoning["id"].startswith("rs_bb") and reasoning["summary"] == []


def test_namespaced_tools_and_their_calls() -> None:
    tools = [{"type": "namespace", "name": "functions", "description": "Local tools", "tools": [{"type": "custom", "name": "exec"}]}]
    req = {"model": "m", "input": [{"type": "additional_tools", "role": "developer", "tools": tools}, {"role": "user", "content": "go"}]}
    ids = CallIds()
    request = openai_responses.decode_request(body(req), ids)
    assert request.model_input["tools"] == [{"name": "functions.exec", "inputSchema": {"type": "string", "format": {"type": "text"}}}]
    resp = {
        "id": "resp_1",
        "status": "completed",
        "output": [{"type": "custom_tool_call", "call_id": "call_x", "namespace": "functions", "name": "exec", "input": "ls"}],
    }
    output = openai_responses.decode_response(body(resp), ids, request)
    assert output_calls(output)[0]["toolName"] == "functions.exec"
    [item] = openai_responses.encode_response(output, request=request, ids=CallIds(), created_ms=CREATED_MS)["output"]
    assert (item["namespace"], item["name"], item["type"]) == ("functions", "exec", "custom_tool_call")


def test_streams_aggregate_to_the_same_answer_as_whole_bodies() -> None:
    [(request, output)] = run("stream_parallel_calls")
    assert request.stream and request.model_input["params"] == {"parallelToolCalls": True, "stream": True}
    assert output == {
        "type": "tool_calls",
        "calls": [
            {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Oslo", "unit": "celsius"}},
            {"toolCallId": "call-1", "toolName": "get_weather", "toolInput": {"city": "Lima", "unit": "celsius"}},
        ],
        "text": "Let me check both cities.",
    }
    [(unicode_request, unicode_output)] = run("stream_text_unicode")
    assert unicode_request.model_input["systemPrompt"] == "Answer in French."
    assert unicode_request.model_input["params"] == {"verbosity": "low", "stream": True}
    assert unicode_output == {"type": "final_answer", "text": "Bonjour ! 👋 « Ça va ? » — 日本語もOK."}


def test_length_stop_and_refusal() -> None:
    [(_, length)] = run("length_stop")
    assert length == {"type": "final_answer", "text": "The sea, the endless grey-green sea, rolls", "stop": "length"}
    [(request, refusal)] = run("refusal")
    assert refusal == {"type": "final_answer", "text": "I can't help with that.", "stop": "refusal"}
    served = openai_responses.encode_response(length, request=request, ids=CallIds(), created_ms=CREATED_MS)
    assert served["status"] == "incomplete" and served["incomplete_details"] == {"reason": "max_output_tokens"}


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.json")))
def test_no_provider_id_or_noise_reaches_a_neutral_payload(name: str) -> None:
    for request, output in run(name):
        text = json.dumps([request.model_input, output])
        assert not PROVIDER_ID.search(text), text
        assert "obfuscation" not in text and "encrypted_content" not in text and "sequence_number" not in text


def test_fields_that_are_not_compared_do_not_change_the_input() -> None:
    base = {"model": "m", "input": [{"role": "user", "content": "hi"}]}
    noisy = {
        **base,
        "input": [
            {"type": "message", "id": "msg_1", "status": "completed", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
        ],
        **{k: "x" for k in ("user", "prompt_cache_key", "safety_identifier", "service_tier", "truncation")},
        "store": False,
        "metadata": {"a": "b"},
        "include": ["reasoning.encrypted_content"],
        "stream_options": {"include_obfuscation": False},
        "client_metadata": {"session": "s"},
        "max_tool_calls": 3,
    }
    decode = openai_responses.decode_request
    assert decode(body(noisy), CallIds()).model_input == decode(body(base), CallIds()).model_input


def test_strict_is_recorded_as_this_apis_default_and_codex_configuration_updates_are_not_messages() -> None:
    """A function tool is strict unless it says ``strict: false`` (what Codex sends); Codex restates its settings in a configuration_update item."""
    tool = {"type": "function", "name": "f", "parameters": {"type": "object", "properties": {}}}
    decode = openai_responses.decode_request
    inputs = [
        decode(body({"model": "m", "input": "hi", "tools": [{**tool, **strict}]}), CallIds()).model_input
        for strict in ({}, {"strict": True}, {"strict": None}, {"strict": False})
    ]
    assert inputs[0] == inputs[1] == inputs[2] != inputs[3]
    assert inputs[0]["tools"][0]["strict"] is True
    assert "strict" not in inputs[3]["tools"][0]
    updated: dict[str, Any] = {"model": "m", "input": ["hi", {"type": "configuration_update", "reasoning": {"effort": "low"}}]}
    updated["input"][0] = {"role": "user", "content": "hi"}
    assert decode(body(updated), CallIds()).model_input == decode(body({"model": "m", "input": "hi"}), CallIds()).model_input


def test_a_later_developer_message_stays_in_the_transcript_as_system() -> None:
    req = {
        "model": "m",
        "input": [{"role": "user", "content": "a"}, {"role": "developer", "content": "b"}, {"role": "system", "content": "c"}],
    }
    assert openai_responses.decode_request(body(req), CallIds()).model_input["messages"] == [
        {"role": "user", "content": "a"},
        {"role": "system", "content": "b"},
        {"role": "system", "content": "c"},
    ]


def test_images_and_files_in_system_and_developer_messages_are_system_messages_of_parts() -> None:
    """The API takes input_image / input_file there as in a user message: a "system" message of parts, compared by digest."""
    import base64
    import hashlib

    png = b"\x89PNG\r\n\x1a\nstyle-guide"
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    developer = {
        "role": "developer",
        "content": [{"type": "input_text", "text": "Match this style:"}, {"type": "input_image", "image_url": url}],
    }
    req = {
        "model": "m",
        "instructions": "Be brief.",
        "input": [{"role": "system", "content": "Lead."}, developer, {"role": "user", "content": "Go."}],
    }
    mi = openai_responses.decode_request(body(req), CallIds()).model_input
    assert mi["systemPrompt"] == "Be brief.\n\nLead."  # the text-only leading messages, as before
    image = {"type": "image", "mediaType": "image/png", "sha256": hashlib.sha256(png).hexdigest(), "size": len(png)}
    assert mi["messages"] == [
        {"role": "system", "content": [{"type": "text", "text": "Match this style:"}, image]},
        {"role": "user", "content": "Go."},
    ]
    later = {"role": "system", "content": [{"type": "input_file", "file_id": "file-abc", "filename": "spec.pdf"}]}
    req2 = {"model": "m", "input": [{"role": "user", "content": "a"}, later]}
    assert openai_responses.decode_request(body(req2), CallIds()).model_input["messages"][1] == {
        "role": "system",
        "content": [{"type": "document", "file": "file-abc", "name": "spec.pdf"}],
    }
    other = dict(developer, content=[developer["content"][0], {"type": "input_image", "image_url": url[:-8] + "AAAAAAA="}])
    changed = openai_responses.decode_request(body({**req, "input": [req["input"][0], other, req["input"][2]]}), CallIds()).model_input
    assert changed["messages"][0] != mi["messages"][0]  # another image, another digest


def test_served_responses_continue_a_chain_in_replay() -> None:
    """A replay's response ids are ours and resolved from the run's store, as the recorded ones were."""
    (first, call), (second, _) = run("tool_round_chained")
    ids = CallIds()
    ids.register_calls(call)
    served = openai_responses.encode_response(call, request=first, ids=ids, created_ms=CREATED_MS)
    assert served["id"].startswith("resp_bb") and served["output"][0]["call_id"] == "call_bb0"
    follow = {
        "model": "gpt-4.1",
        "previous_response_id": served["id"],
        "input": [{"type": "function_call_output", "call_id": "call_bb0", "output": '{"temp_c": 4, "sky": "overcast"}'}],
        "tools": calls_of("tool_round_chained")[0]["request"]["tools"],
    }
    assert openai_responses.decode_request(body(follow), ids).model_input == second.model_input


def test_a_stream_served_by_us_is_put_in_the_store_too() -> None:
    [(request, output)] = run("stream_text_unicode")
    ids = CallIds()
    events = parse_sse(openai_responses.encode_stream(output, request=request, ids=ids, created_ms=CREATED_MS))
    rid = json.loads(events[0].data)["response"]["id"]
    follow = openai_responses.decode_request(body({"model": "m", "previous_response_id": rid, "input": "merci"}), ids)
    assert follow.model_input["messages"][-2:] == [{"role": "assistant", "content": output["text"]}, {"role": "user", "content": "merci"}]


def test_the_synthesized_stream_is_the_full_event_sequence() -> None:
    [(request, output)] = run("stream_parallel_calls")
    events = parse_sse(openai_responses.encode_stream(output, request=request, ids=CallIds(), created_ms=CREATED_MS))
    data = [json.loads(e.data) for e in events]
    assert [e.event for e in events] == [d["type"] for d in data]
    assert [d["sequence_number"] for d in data] == list(range(len(data)))
    kinds = [d["type"] for d in data]
    assert kinds[:6] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
    ]
    assert kinds.count("response.function_call_arguments.done") == 2 and kinds.count("response.output_item.done") == 3
    assert kinds[-1] == "response.completed" and data[-1]["response"]["usage"]["total_tokens"] == 0  # no tokens recorded: zero


def test_a_final_event_without_output_takes_the_done_items() -> None:
    events = parse_sse(calls_of("stream_parallel_calls")[0]["stream"].encode())
    last = json.loads(events[-1].data)
    last["response"]["output"] = None
    events[-1] = SseEvent(events[-1].event, json.dumps(last))
    ids = CallIds()
    request = openai_responses.decode_request(body(calls_of("stream_parallel_calls")[0]["request"]), ids)
    got = openai_responses.decode_response(openai_responses.aggregate_stream(events), ids, request)
    assert got == {**run("stream_parallel_calls")[0][1], "tokens": FIXTURE_TOKENS}


@pytest.mark.parametrize(
    ("what", "mutate", "match"),
    [
        ("cut off", lambda evs: evs[:-1], "before response.completed"),
        (
            "error event",
            lambda evs: [*evs[:3], SseEvent("error", '{"type":"error","message":"overloaded","code":"server_error"}')],
            "overloaded",
        ),
        (
            "failed",
            lambda evs: [*evs[:3], SseEvent("response.failed", '{"type":"response.failed","response":{"error":{"message":"boom"}}}')],
            "boom",
        ),
        ("unknown type", lambda evs: [*evs[:3], SseEvent("response.brand_new", '{"type":"response.brand_new"}')], "does not define"),
        ("not json", lambda evs: [*evs[:3], SseEvent("response.output_text.delta", "{oops")], "not JSON"),
    ],
)
def test_a_stream_that_did_not_complete_is_not_a_step(what: str, mutate: Callable[[list[SseEvent]], list[SseEvent]], match: str) -> None:
    events = parse_sse(calls_of("stream_text_unicode")[0]["stream"].encode())
    with pytest.raises(StreamIncomplete, match=match):
        openai_responses.aggregate_stream(mutate(events))


def test_is_stream_end_reads_the_event_name_or_the_data_type() -> None:
    assert openai_responses.is_stream_end(SseEvent("response.completed", "{}"))
    assert openai_responses.is_stream_end(SseEvent(None, '{"type":"response.incomplete"}'))  # a WebSocket frame has no event line
    assert not openai_responses.is_stream_end(SseEvent("response.output_text.delta", "{}"))


def test_the_in_stream_error_names_the_message() -> None:
    [event] = parse_sse(openai_responses.encode_stream_error("blackbox: diverged"))
    data = json.loads(event.data)
    assert event.event == "error" and data["message"] == "blackbox: diverged" and data["error"]["message"] == "blackbox: diverged"


# --- fork edits and user-written answers ------------------------------------------------------


def test_rewrite_tool_result_replaces_what_the_model_sees() -> None:
    ids = CallIds()
    run("tool_round_full_history", ids)
    raw = calls_of("tool_round_full_history")[1]["request"]
    edited = openai_responses.rewrite_tool_result(body(raw), ids, "call-0", "sunny")
    assert edited is not None
    assert json.loads(edited)["input"][-1]["output"] == "sunny"
    assert openai_responses.rewrite_tool_result(body(raw), ids, "call-7", "sunny") is None


def test_a_continuation_of_a_served_response_is_inlined_for_the_provider() -> None:
    (first, call), (_second, _) = run("tool_round_chained")
    ids = CallIds()
    served = openai_responses.encode_response(call, request=first, ids=ids, created_ms=CREATED_MS)
    follow = {
        "model": "gpt-4.1",
        "previous_response_id": served["id"],
        "input": [{"type": "function_call_output", "call_id": "call_bb0", "output": "x"}],
    }
    inlined = json.loads(openai_responses.forward_body(body(follow), ids) or b"null")
    assert "previous_response_id" not in inlined
    assert [i.get("type") or "message" for i in inlined["input"]] == ["message", "function_call", "function_call_output"]
    assert all("id" not in i for i in inlined["input"])
    assert openai_responses.forward_body(body({"model": "m", "input": "hi"}), ids) is None


def test_a_served_chain_that_began_with_a_developer_image_goes_upstream_with_the_same_bytes() -> None:
    """After a fork's cut the chain is written out in full: the developer message's image is the agent's, byte for byte."""
    import base64

    url = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256))).decode()
    developer = {"role": "developer", "content": [{"type": "input_text", "text": "Style:"}, {"type": "input_image", "image_url": url}]}
    ids = CallIds()
    first = openai_responses.decode_request(body({"model": "m", "input": [developer, {"role": "user", "content": "Go."}]}), ids)
    served = openai_responses.encode_response({"type": "final_answer", "text": "Done."}, request=first, ids=ids, created_ms=CREATED_MS)
    follow = {"model": "m", "previous_response_id": served["id"], "input": "Again."}
    inlined = json.loads(openai_responses.forward_body(body(follow), ids) or b"null")
    assert inlined["input"][0] == developer
    again = openai_responses.decode_request(body(inlined), CallIds()).model_input
    assert again["messages"][0] == first.model_input["messages"][0]


def test_normalize_answer_accepts_responses_shapes_only() -> None:
    ids = CallIds()
    ids.register("call-4")
    call = {"type": "function_call", "call_id": "c", "name": "get_weather", "arguments": '{"city": "Rome"}'}
    assert openai_responses.normalize_answer({"output": [call]}, ids) == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-5", "toolName": "get_weather", "toolInput": {"city": "Rome"}}],
    }
    text = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sunny."}]}
    assert openai_responses.normalize_answer(text, ids) == {"type": "final_answer", "text": "Sunny."}
    assert openai_responses.normalize_answer({"content": "chat shape"}, ids) is None
    with pytest.raises(ValueError, match="neither"):
        openai_responses.normalize_answer({"output": []}, ids)


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("req", "field"),
    [
        ({"model": "m", "input": 3}, "input"),
        ({"model": "m", "input": ["hi"]}, "input[0]"),
        ({"model": "m", "input": [{"type": "brand_new_item"}]}, "input[0].type"),
        ({"model": "m", "input": [{"role": "tool", "content": "x"}]}, "input[0].role"),
        ({"model": "m", "input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}, "input[0].call_id"),
        ({"model": "m", "input": [{"type": "function_call_output", "call_id": "c", "output": 3}]}, "input[0].output"),
        ({"model": "m", "input": "hi", "tools": [{"type": "brand_new_tool", "name": "t"}]}, "tools[0].type"),
        ({"model": "m", "input": "hi", "instructions": ["x"]}, "instructions"),
    ],
)
def test_malformed_requests_name_the_field(req: dict[str, Any], field: str) -> None:
    with pytest.raises(BlackboxUnsupportedError) as err:
        openai_responses.decode_request(body(req), CallIds())
    assert err.value.field == field


# --- every refusal row -------------------------------------------------------------------------

BASE_REQUEST: dict[str, Any] = {
    "model": "gpt-4.1",
    "input": [
        {"role": "user", "content": "Weather in Oslo?"},
        {"type": "function_call", "call_id": "call_A", "name": "get_weather", "arguments": '{"city":"Oslo","unit":"celsius"}'},
        {"type": "function_call_output", "call_id": "call_A", "output": "4C"},
    ],
    "tools": [{"type": "function", "name": "get_weather", "parameters": WEATHER_SCHEMA}],
}
BASE_RESPONSE: dict[str, Any] = {
    "id": "resp_base",
    "object": "response",
    "status": "completed",
    "output": [
        {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "4 C.", "annotations": []}]}
    ],
}
FC = {"id": "fc_1", "type": "function_call", "call_id": "call_B", "name": "get_weather", "arguments": "{}"}
TEXT = BASE_RESPONSE["output"][0]


def put(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit setting ``path`` (``a.b[0].c``) to ``value``."""
    keys = [int(k) if k.isdigit() else k for k in re.findall(r"[^.\[\]]+", path)]

    def edit(doc: dict[str, Any]) -> None:
        target: Any = doc
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return edit


@dataclass(frozen=True)
class Case:
    row: str
    name: str
    side: str  # "request" | "response" | "stream"
    edit: Callable[[dict[str, Any]], None]
    field: str


CASES = [
    Case("openai.responses.local_tool", "tool", "request", put("tools[0]", {"type": "local_shell"}), "tools[0].type"),
    Case("openai.responses.local_tool", "call", "response", put("output[0]", {"type": "apply_patch_call", "call_id": "c"}), "output[0].type"),
    Case("openai.responses.background", "flag", "request", put("background", True), "background"),
    Case("openai.responses.conversation", "field", "request", put("conversation", "conv_123"), "conversation"),
    Case("openai.responses.previous_response_id", "unknown", "request", put("previous_response_id", "resp_never_seen"), "previous_response_id"),
    Case("openai.responses.prompt", "field", "request", put("prompt", {"id": "pmpt_1"}), "prompt"),
    Case("openai.responses.item_reference", "item", "request", put("input[1]", {"type": "item_reference", "id": "fc_1"}), "input[1].type"),
    Case("openai.responses.non_text", "assistant_image", "request", put("input[0]", {"role": "assistant", "content": [{"type": "input_image", "image_url": "https://x/y.png"}]}), "input[0].content[0].type"),
    Case("openai.responses.tool_arguments", "history", "request", put("input[1].arguments", '{"city": '), "input[1].arguments"),
    Case("openai.responses.tool_arguments", "response", "response", put("output[0]", {**FC, "arguments": "not json"}), "output[0].arguments"),
    Case("openai.responses.refusal_mixed", "with_calls", "response", put("output", [{**TEXT, "content": [{"type": "refusal", "refusal": "No."}]}, FC]), "output"),
    Case("openai.responses.output_layout", "two_messages", "response", put("output", [TEXT, TEXT]), "output[1]"),
    Case("openai.responses.output_layout", "text_after_call", "stream", put("output", [FC, TEXT]), "output[1]"),
    Case("openai.responses.output_layout", "two_parts", "response", put("output[0].content", [TEXT["content"][0], TEXT["content"][0]]), "output[0].content"),
    Case("openai.responses.status", "failed", "response", put("status", "failed"), "status"),
    Case("openai.responses.status", "content_filter", "response", lambda d: d.update(status="incomplete", incomplete_details={"reason": "content_filter"}), "incomplete_details.reason"),
    Case("openai.responses.status", "error", "response", put("error", {"code": "server_error", "message": "x"}), "error"),
    Case("openai.responses.unknown_item", "item", "response", put("output[0]", {"type": "telepathy_call", "id": "tp_1"}), "output[0].type"),
]  # fmt: skip


def to_stream(response: dict[str, Any]) -> list[SseEvent]:
    """A whole response as the smallest stream the API sends for it."""
    start = {**response, "status": "in_progress", "output": []}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": start}]
    events += [{"type": "response.output_item.done", "output_index": i, "item": item} for i, item in enumerate(response["output"])]
    events.append({"type": "response.completed", "response": response})
    return [SseEvent(e["type"], json.dumps({**e, "sequence_number": n})) for n, e in enumerate(events)]


def run_case(side: str, doc: dict[str, Any]) -> Any:
    ids = CallIds()
    if side == "request":
        return openai_responses.decode_request(body(doc), ids)
    request = openai_responses.decode_request(body(BASE_REQUEST), ids)
    raw = openai_responses.aggregate_stream(to_stream(doc)) if side == "stream" else body(doc)
    return openai_responses.decode_response(raw, ids, request)


def test_the_base_bodies_are_accepted() -> None:
    for side in ("request", "response", "stream"):
        run_case(side, copy.deepcopy(BASE_REQUEST if side == "request" else BASE_RESPONSE))


def test_every_row_has_a_case() -> None:
    assert {r.id for r in openai_responses.REFUSALS} == {case.row for case in CASES}
    assert all(r.id.startswith("openai.responses.") for r in openai_responses.REFUSALS)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.row}-{c.name}" for c in CASES])
def test_refusal(case: Case) -> None:
    doc = copy.deepcopy(BASE_REQUEST if case.side == "request" else BASE_RESPONSE)
    case.edit(doc)
    with pytest.raises(BlackboxUnsupportedError) as err:
        run_case(case.side, doc)
    assert err.value.field == case.field
    assert err.value.reason == next(r.reason for r in openai_responses.REFUSALS if r.id == case.row)


def test_reasoning_items_are_kept_served_back_and_sent_upstream_after_a_cut() -> None:
    """Summaries and encrypted_content are recorded with the answer, replayed (whole and streamed), and forwarded."""
    ids = CallIds()
    request = openai_responses.decode_request(body({"model": "m", "input": "hi", "stream": True}), ids)
    item = {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "**Plan** look first."}],
        "encrypted_content": "gAAAA_secret_state==",
    }
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}
    output = openai_responses.decode_response(body({"id": "resp_1", "status": "completed", "output": [item, message]}), ids, request)
    assert output["reasoning"] == [{"type": "thinking", "summary": ["**Plan** look first."], "signature": "gAAAA_secret_state=="}]
    served = openai_responses.encode_response(output, request=request, ids=ids, created_ms=CREATED_MS)
    assert [i["type"] for i in served["output"]] == ["reasoning", "message"]
    assert served["output"][0]["encrypted_content"] == "gAAAA_secret_state=="
    events = parse_sse(openai_responses.encode_stream(output, request=request, ids=CallIds(), created_ms=CREATED_MS))
    assert openai_responses.decode_response(openai_responses.aggregate_stream(events), CallIds(), request) == output
    kinds = [json.loads(e.data)["type"] for e in events]
    assert "response.reasoning_summary_text.delta" in kinds
    # Live after the cut: the chain of the served response is inlined with its reasoning item.
    upstream = openai_responses.forward_body(body({"model": "m", "previous_response_id": served["id"], "input": "next"}), ids)
    assert upstream is not None
    sent = json.loads(upstream)["input"]
    [sent_reasoning] = [i for i in sent if i.get("type") == "reasoning"]
    assert sent_reasoning["encrypted_content"] == "gAAAA_secret_state==" and "id" not in sent_reasoning


def test_images_files_and_audio_in_user_messages_and_tool_outputs_are_content_addressed() -> None:
    """Codex --image (input_image in a user message) and view_image (input_image in a function_call_output)."""
    import base64
    import hashlib

    png = b"\x89PNG\r\n\x1a\nCodex"
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    digest = hashlib.sha256(png).hexdigest()
    req = {
        "model": "m",
        "input": [
            {
                "role": "user",
                "content": [{"type": "input_text", "text": "What is this?"}, {"type": "input_image", "image_url": url, "detail": "auto"}],
            },
            {"type": "function_call", "call_id": "call_v", "name": "view_image", "arguments": '{"path": "a.png"}'},
            {"type": "function_call_output", "call_id": "call_v", "output": [{"type": "input_image", "image_url": url}]},
            {
                "role": "user",
                "content": [{"type": "input_file", "filename": "r.pdf", "file_data": "data:application/pdf;base64,JVBERi0xLjQ="}],
            },
        ],
    }
    mi = openai_responses.decode_request(body(req), CallIds()).model_input
    assert mi["messages"][0]["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "mediaType": "image/png", "sha256": digest, "size": len(png), "detail": "auto"},
    ]
    assert tool_result(listed(mi["messages"][2]["content"])[0])["result"] == [
        {"type": "image", "mediaType": "image/png", "sha256": digest, "size": len(png)}
    ]
    assert mi["messages"][3]["content"] == [
        {"type": "document", "mediaType": "application/pdf", "sha256": hashlib.sha256(b"%PDF-1.4").hexdigest(), "size": 8, "name": "r.pdf"}
    ]


# --- annotations of every kind and logprobs on output text ------------------------------------

LOGPROBS = [
    {"token": "See", "logprob": -0.01, "bytes": [83, 101, 101], "top_logprobs": []},
    {"token": " the", "logprob": -0.2, "bytes": [32, 116, 104, 101], "top_logprobs": [{"token": " a", "logprob": -2.1, "bytes": [32, 97]}]},
    {"token": " spec.", "logprob": -0.4, "bytes": [32, 115, 112, 101, 99, 46], "top_logprobs": []},
]
CITATIONS = [
    {"type": "file_citation", "file_id": "file-9Ab", "filename": "spec.pdf", "index": 8},
    {
        "type": "container_file_citation",
        "container_id": "cntr_1",
        "file_id": "cfile_2",
        "filename": "out.csv",
        "start_index": 0,
        "end_index": 3,
    },
    {"type": "url_citation", "url": "https://example.com/spec", "title": "Spec", "start_index": 4, "end_index": 8},
]


def _cited(text: str = "See the spec.", logprobs: list[Any] | None = None) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": CITATIONS, "logprobs": LOGPROBS if logprobs is None else logprobs}
    return {**BASE_RESPONSE, "output": [{**TEXT, "content": [part]}]}


def test_file_citations_and_logprobs_are_kept_with_the_answer_and_served_back_whole() -> None:
    request = openai_responses.decode_request(body({"model": "m", "input": "Where?"}), CallIds())
    output = openai_responses.decode_response(body(_cited()), CallIds(), request)
    assert output["text"] == "See the spec."
    assert output["parts"] == [{"type": "text", "text": "See the spec.", "annotations": CITATIONS, "tokenLogprobs": LOGPROBS}]
    served = openai_responses.encode_response(output, request=request, ids=CallIds(), created_ms=CREATED_MS)
    [part] = served["output"][0]["content"]
    assert part == {"type": "output_text", "annotations": CITATIONS, "logprobs": LOGPROBS, "text": "See the spec."}
    again = openai_responses.decode_response(body(served), CallIds(), request)
    assert again == output  # a replay's answer records as the recorded one


def test_logprobs_alone_make_the_answer_kept_part_by_part() -> None:
    request = openai_responses.decode_request(body({"model": "m", "input": "Where?"}), CallIds())
    resp = _cited()
    resp["output"][0]["content"][0]["annotations"] = []
    output = openai_responses.decode_response(body(resp), CallIds(), request)
    assert output["parts"] == [{"type": "text", "text": "See the spec.", "tokenLogprobs": LOGPROBS}]


def test_a_stream_serves_one_delta_per_recorded_token_with_its_logprob() -> None:
    request = openai_responses.decode_request(body({"model": "m", "input": "Where?", "stream": True}), CallIds())
    output = openai_responses.decode_response(body(_cited()), CallIds(), request)
    events = parse_sse(openai_responses.encode_stream(output, request=request, ids=CallIds(), created_ms=CREATED_MS))
    data = [json.loads(e.data) for e in events]
    deltas = [d for d in data if d["type"] == "response.output_text.delta"]
    assert [(d["delta"], d["logprobs"]) for d in deltas] == [(lp["token"], [lp]) for lp in LOGPROBS]
    added = [d["annotation"] for d in data if d["type"] == "response.output_text.annotation.added"]
    assert added == CITATIONS
    assert next(d for d in data if d["type"] == "response.output_text.done")["logprobs"] == LOGPROBS
    assert openai_responses.decode_response(openai_responses.aggregate_stream(events), CallIds(), request) == output


def test_logprobs_that_do_not_spell_the_text_stream_on_the_done_event() -> None:
    request = openai_responses.decode_request(body({"model": "m", "input": "Where?", "stream": True}), CallIds())
    odd = [{"token": "x", "logprob": -1.0, "bytes": [120], "top_logprobs": []}]
    output = openai_responses.decode_response(body(_cited(logprobs=odd)), CallIds(), request)
    data = [
        json.loads(e.data) for e in parse_sse(openai_responses.encode_stream(output, request=request, ids=CallIds(), created_ms=CREATED_MS))
    ]
    assert all(d["logprobs"] == [] for d in data if d["type"] == "response.output_text.delta")
    assert "".join(d["delta"] for d in data if d["type"] == "response.output_text.delta") == "See the spec."
    assert next(d for d in data if d["type"] == "response.output_text.done")["logprobs"] == odd


def test_a_refusal_part_in_the_history_is_a_refusal_part_of_the_assistant_turn() -> None:
    refusal = {"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]}
    req = {"model": "m", "input": [{"role": "user", "content": "Help?"}, refusal, {"role": "user", "content": "Why?"}]}
    messages = openai_responses.decode_request(body(req), CallIds()).model_input["messages"]
    assert messages[1] == {"role": "assistant", "content": [{"type": "refusal", "text": "No."}]}
    text = {**req, "input": [req["input"][0], {"role": "assistant", "content": "No."}, req["input"][2]]}
    assert openai_responses.decode_request(body(text), CallIds()).model_input["messages"][1] == {"role": "assistant", "content": "No."}
    with pytest.raises(BlackboxUnsupportedError):  # a refusal is an assistant's
        openai_responses.decode_request(
            body({"model": "m", "input": [{"role": "user", "content": [{"type": "refusal", "refusal": "x"}]}]}), CallIds()
        )


def test_a_served_refusal_item_sent_back_is_the_same_history() -> None:
    ids = CallIds()
    first = openai_responses.decode_request(body({"model": "m", "input": "Help?"}), ids)
    served = openai_responses.encode_response(
        {"type": "final_answer", "text": "No.", "stop": "refusal"}, request=first, ids=ids, created_ms=CREATED_MS
    )
    follow = {"model": "m", "input": [{"role": "user", "content": "Help?"}, *served["output"], {"role": "user", "content": "Why?"}]}
    assert openai_responses.decode_request(body(follow), ids).model_input["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "refusal", "text": "No."}],
    }
