"""The Converse codec's own rules: what a request keeps and drops, each refusal row with a case, fork edits."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from blackbox_mitm.codecs import bedrock_converse as converse
from blackbox_mitm.codecs.base import CallIds, StreamIncomplete
from blackbox_mitm.codecs.common.eventstream import EventStreamParser
from blackbox_mitm.errors import BlackboxUnsupportedError

PATH = "/model/us.anthropic.claude-sonnet-4-6-v1%3A0/converse"
USE = {"toolUse": {"toolUseId": "tooluse_a1", "name": "get_weather", "input": {"city": "Paris"}}}
REQUEST: dict[str, Any] = {
    "system": [{"text": "Be "}, {"text": "brief."}, {"cachePoint": {"type": "default"}}],
    "messages": [
        {"role": "user", "content": [{"text": "Weather?"}, {"cachePoint": {"type": "default"}}]},
        {"role": "assistant", "content": [{"reasoningContent": {"reasoningText": {"text": "hm", "signature": "s"}}}, USE]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_a1", "content": [{"json": {"c": 18}}], "status": "error"}}]},
    ],
    "inferenceConfig": {"maxTokens": 100, "temperature": 0.5},
    "toolConfig": {
        "tools": [{"toolSpec": {"name": "get_weather", "inputSchema": {"json": {"type": "object"}}}}],
        "toolChoice": {"any": {}},
    },
    "requestMetadata": {"team": "a"},
}
RESPONSE: dict[str, Any] = {"output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}}, "stopReason": "end_turn"}


def _decode(body: dict[str, Any], path: str = PATH) -> Any:
    return converse.decode_request(json.dumps(body).encode(), CallIds(), path=path)


def test_a_request_keeps_what_the_model_sees_and_drops_cache_points_reasoning_and_metadata() -> None:
    decoded = _decode(REQUEST)
    assert decoded.model_input == {
        "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": [{"type": "tool_use", "toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather", "error": '{"c":18}'}]},
        ],
        "tools": [{"name": "get_weather", "inputSchema": {"type": "object"}}],
        "systemPrompt": "Be brief.",
        "model": "us.anthropic.claude-sonnet-4-6-v1:0",
        "params": {"maxTokens": 100, "temperature": 0.5, "toolChoice": {"any": {}}},
    }  # fmt: skip
    assert decoded.model == "us.anthropic.claude-sonnet-4-6-v1:0" and decoded.stream is False
    assert _decode(REQUEST, PATH.replace("/converse", "/converse-stream")).model_input["params"]["stream"] is True


def _set(path: str, value: Any) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        keys = path.replace("[", ".").replace("]", "").split(".")
        target: Any = doc
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        last = keys[-1]
        target[int(last) if isinstance(target, list) else last] = value

    return edit


# (row, side, edit, field)
CASES: list[tuple[str, str, Any, str]] = [
    ("bedrock-converse.media", "request", _set("messages[0].content[0]", {"image": {"format": "png", "source": {"bytes": "AA=="}}}), "messages[0].content[0]"),
    ("bedrock-converse.media", "request", _set("messages[2].content[0].toolResult.content[0]", {"document": {}}), "messages[2].content[0].toolResult.content[0]"),
    ("bedrock-converse.guardrail", "request", _set("guardrailConfig", {"guardrailIdentifier": "g", "guardrailVersion": "1"}), "guardrailConfig"),
    ("bedrock-converse.prompt_variables", "request", _set("promptVariables", {"x": {"text": "y"}}), "promptVariables"),
    ("bedrock-converse.stop_reason", "response", _set("stopReason", "guardrail_intervened"), "stopReason"),
    ("bedrock-converse.text_after_tool", "response", _set("output.message.content", [USE, {"text": "after"}]), "output.message.content[1]"),
    ("bedrock-converse.tool_use_stop", "response", _set("output.message.content", [USE]), "stopReason"),
    ("bedrock-converse.unknown_block", "response", _set("output.message.content[0]", {"citationsContent": {}}), "output.message.content[0]"),
]  # fmt: skip


@pytest.mark.parametrize(("row", "side", "edit", "field"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_refusal(row: str, side: str, edit: Any, field: str) -> None:
    doc = copy.deepcopy(REQUEST if side == "request" else RESPONSE)
    edit(doc)
    with pytest.raises(BlackboxUnsupportedError) as err:
        if side == "request":
            _decode(doc)
        else:
            converse.decode_response(json.dumps(doc).encode(), CallIds(), _decode(REQUEST))
    assert err.value.field == field
    assert err.value.reason == converse.REFUSALS.row(row).reason


def test_every_converse_row_has_a_case() -> None:
    assert {c[0] for c in CASES} == {r.id for r in converse.REFUSALS}


def test_a_fork_rewrites_the_tool_result_the_model_sees() -> None:
    ids = CallIds()
    body = json.dumps(REQUEST).encode()
    converse.decode_request(body, ids, path=PATH)
    rewritten = converse.rewrite_tool_result(body, ids, "call-0", "sunny")
    assert rewritten is not None
    result = json.loads(rewritten)["messages"][2]["content"][0]["toolResult"]
    assert result == {"toolUseId": "tooluse_a1", "content": [{"text": "sunny"}]}
    assert converse.rewrite_tool_result(body, ids, "call-9", "x") is None


def test_a_user_written_answer_in_converse_shape() -> None:
    answer = {"role": "assistant", "content": [{"text": "Checking."}, USE]}
    assert converse.normalize_answer(answer, CallIds()) == {
        "type": "tool_calls", "text": "Checking.", "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}}],
    }  # fmt: skip
    assert converse.normalize_answer({"choices": []}, CallIds()) is None


def test_a_stream_that_throttles_is_an_incomplete_call() -> None:
    request = _decode(REQUEST, PATH + "-stream")
    body = converse.encode_stream({"type": "final_answer", "text": "hi"}, request=request, ids=CallIds(), created_ms=0)
    events = EventStreamParser().feed(body)
    error = EventStreamParser().feed(converse.encode_stream_error("slow down"))
    with pytest.raises(StreamIncomplete, match="validationException"):
        converse.aggregate_stream([*events[:-2], *error])


def test_the_aws_transport_facts_are_stated_once_for_both_bedrock_codecs() -> None:
    """InvokeModel and Converse share one runtime host and one signing: common/aws.py states those facts, both name them."""
    from blackbox_mitm.codecs import bedrock
    from blackbox_mitm.codecs.common import aws, eventstream

    shared = ("DEFAULT_HOSTS", "CREDENTIAL_HEADERS", "CREDENTIAL_QUERY", "KEY_ENV_VARS", "STREAM_CONTENT_TYPE")
    for name in shared:
        assert getattr(bedrock, name) is getattr(converse, name) is getattr(aws, name), name
    assert bedrock.TOKEN_HOSTS is aws.TOKEN_HOSTS and aws.STREAM_CONTENT_TYPE == eventstream.CONTENT_TYPE
    assert "authorization" in aws.CREDENTIAL_HEADERS and aws.KEY_ENV_VARS[0] == "AWS_BEARER_TOKEN_BEDROCK"
    assert converse.encode_stream_error("no") == bedrock.encode_stream_error("no")
