"""The Responses API's computer use: the tool, ``computer_call`` answers and ``computer_call_output`` screenshots."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest

from blackbox_mitm.codecs import openai_responses
from blackbox_mitm.codecs.base import CallIds
from blackbox_mitm.codecs.sse import parse_sse
from blackbox_mitm.errors import BlackboxUnsupportedError

CREATED_MS = 1_764_580_000_123
TOOL = {"type": "computer_use_preview", "display_width": 1024, "display_height": 768, "environment": "browser"}
PNG = b"\x89PNG\r\n\x1a\nscreen"
SHOT = "data:image/png;base64," + base64.b64encode(PNG).decode()
CHECK = {"id": "cu_sc_native1", "code": "malicious_instructions", "message": "Careful."}
CALL = {
    "id": "cu_native1",
    "type": "computer_call",
    "call_id": "call_native1",
    "status": "completed",
    "action": {"type": "click", "button": "left", "x": 10, "y": 20},
    "pending_safety_checks": [CHECK],
}


def body(value: Any) -> bytes:
    return json.dumps(value).encode()


def _answer(ids: CallIds) -> tuple[Any, dict[str, Any]]:
    request = openai_responses.decode_request(body({"model": "computer-use-preview", "tools": [TOOL], "input": "Open it."}), ids)
    resp = {"id": "resp_native1", "object": "response", "status": "completed", "output": [CALL]}
    out: dict[str, Any] = dict(openai_responses.decode_response(body(resp), ids, request))
    return request, out


def test_the_computer_tool_is_a_provider_defined_tool_with_its_options() -> None:
    request, _ = _answer(CallIds())
    assert request.model_input["tools"] == [{"name": "computer_use_preview", "builtin": TOOL}]


def test_a_computer_call_is_a_neutral_tool_call_without_provider_ids() -> None:
    _, out = _answer(CallIds())
    assert out == {
        "type": "tool_calls",
        "calls": [
            {
                "toolCallId": "call-0",
                "toolName": "computer",
                "toolInput": {
                    "action": CALL["action"],
                    "pending_safety_checks": [{"code": "malicious_instructions", "message": "Careful."}],
                },
            }
        ],
    }
    assert "native" not in json.dumps(out)


def test_the_screenshot_output_is_a_tool_result_with_a_media_part_and_the_checks_without_ids() -> None:
    ids = CallIds()
    _answer(ids)
    output: dict[str, Any] = {"type": "computer_call_output", "call_id": "call_native1", "acknowledged_safety_checks": [CHECK]}
    output["output"] = {"type": "computer_screenshot", "image_url": SHOT}
    req = {"model": "computer-use-preview", "tools": [TOOL], "input": [{"role": "user", "content": "Open it."}, CALL, output]}
    messages: Any = openai_responses.decode_request(body(req), ids).model_input["messages"]
    assert messages[1]["content"][0]["toolName"] == "computer"
    [result] = messages[2]["content"]
    assert result["toolCallId"] == "call-0" and result["toolName"] == "computer"
    assert result["result"] == [{"type": "image", "mediaType": "image/png", "sha256": hashlib.sha256(PNG).hexdigest(), "size": len(PNG)}]
    assert result["safetyChecks"] == [{"code": "malicious_instructions", "message": "Careful."}]
    assert "native" not in json.dumps(messages)


def test_a_screenshot_by_file_id_is_kept_as_the_reference() -> None:
    output = {"type": "computer_call_output", "call_id": "c", "output": {"type": "computer_screenshot", "file_id": "file-abc"}}
    req = {"model": "m", "tools": [TOOL], "input": [{**CALL, "call_id": "c"}, output]}
    messages: Any = openai_responses.decode_request(body(req), CallIds()).model_input["messages"]
    [result] = messages[1]["content"]
    assert result["result"] == [{"type": "image", "file": "file-abc"}]


def test_a_replay_serves_a_computer_call_with_our_ids_and_the_agents_echo_maps_back() -> None:
    ids = CallIds()
    request, out = _answer(ids)
    replay = CallIds()
    replay.register_calls(out)
    served = openai_responses.encode_response(out, request=request, ids=replay, created_ms=CREATED_MS)
    [item] = served["output"]
    assert item["type"] == "computer_call" and item["call_id"] == "call_bb0" and item["id"] == "cu_bb0"
    assert item["action"] == CALL["action"]
    assert item["pending_safety_checks"] == [{"id": "cu_sc_bb0_0", "code": "malicious_instructions", "message": "Careful."}]
    echo = {**item, "id": "cu_bb0"}
    ack = {"type": "computer_call_output", "call_id": item["call_id"], "output": {"type": "computer_screenshot", "image_url": SHOT}}
    ack["acknowledged_safety_checks"] = item["pending_safety_checks"]
    follow = {"model": "computer-use-preview", "tools": [TOOL], "input": [{"role": "user", "content": "Open it."}, echo, ack]}
    recorded = {
        **follow,
        "input": [{"role": "user", "content": "Open it."}, CALL, {**ack, "call_id": "call_native1", "acknowledged_safety_checks": [CHECK]}],
    }
    assert (
        openai_responses.decode_request(body(follow), replay).model_input
        == openai_responses.decode_request(body(recorded), ids).model_input
    )


def test_a_streamed_computer_call_aggregates_to_the_same_answer_and_streams_back_whole() -> None:
    ids = CallIds()
    request, out = _answer(ids)
    events = parse_sse(openai_responses.encode_stream(out, request=request, ids=CallIds(), created_ms=CREATED_MS))
    kinds = [json.loads(e.data)["type"] for e in events]
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
    ]
    again: Any = openai_responses.decode_response(openai_responses.aggregate_stream(events), CallIds(), request)
    assert again["calls"][0]["toolInput"] == out["calls"][0]["toolInput"]


def test_without_a_computer_tool_in_the_request_a_call_named_computer_is_a_function_call() -> None:
    ids = CallIds()
    _, out = _answer(ids)
    plain = openai_responses.decode_request(body({"model": "m", "input": "hi"}), CallIds())
    [item] = openai_responses.encode_response(out, request=plain, ids=CallIds(), created_ms=CREATED_MS)["output"]
    assert item["type"] == "function_call" and item["name"] == "computer"


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({**CALL, "action": None}, "output[0].action"),
        ({**CALL, "pending_safety_checks": "x"}, "output[0].pending_safety_checks"),
    ],
)
def test_a_malformed_computer_call_names_the_field(item: dict[str, Any], field: str) -> None:
    request = openai_responses.decode_request(body({"model": "m", "tools": [TOOL], "input": "x"}), CallIds())
    with pytest.raises(BlackboxUnsupportedError) as err:
        openai_responses.decode_response(body({"status": "completed", "output": [item]}), CallIds(), request)
    assert field in str(err.value)


def test_a_screenshot_that_is_not_one_names_the_field() -> None:
    output = {"type": "computer_call_output", "call_id": "c", "output": {"type": "input_text", "text": "no"}}
    with pytest.raises(BlackboxUnsupportedError, match=r"input\[1\]\.output"):
        openai_responses.decode_request(body({"model": "m", "input": [{**CALL, "call_id": "c"}, output]}), CallIds())
