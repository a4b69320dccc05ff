"""The compared view and request_digest: what is compared, and what is not."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from typing import Any

import pytest
from matcher_runs import first_request, json_of, second_request

from blackbox_mitm.cassette import canonical_bytes
from blackbox_mitm.cassette.payloads import ModelInput
from blackbox_mitm.matcher import compared_view, request_digest


def test_digest_is_sha256_of_the_canonical_compared_view() -> None:
    req = first_request()
    expected = hashlib.sha256(
        canonical_bytes(
            {
                "model": req["model"],
                "systemPrompt": req["systemPrompt"],
                "messages": req["messages"],
                "tools": req["tools"],
                "params": req["params"],
            }
        )
    ).hexdigest()
    assert request_digest(req) == expected
    assert len(expected) == 64


def test_absent_keys_stay_absent() -> None:
    assert compared_view({"messages": [], "tools": []}) == {"messages": [], "tools": []}


def test_view_is_idempotent_and_leaves_the_input_alone() -> None:
    req = second_request()
    before = copy.deepcopy(req)
    view = compared_view(req)
    assert compared_view(view) == view
    assert req == before


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(req: dict[str, Any]) -> None:
        target: Any = req
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _delete(key: str) -> Callable[[dict[str, Any]], None]:
    def mutate(req: dict[str, Any]) -> None:
        del req[key]

    return mutate


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(_set(("metadata",), {"user_id": "u-1"}), id="other request field"),
        pytest.param(_set(("messages", 1, "name"), "bob"), id="other message key"),
        pytest.param(_set(("tools", 0, "cache_control"), {"type": "ephemeral"}), id="other tool key"),
        pytest.param(_set(("params", "temperature"), 0.20), id="same number written differently"),
        pytest.param(_set(("params", "maxTokens"), 256.0), id="integer as float"),
        pytest.param(_set(("messages", 1, "content"), [{"type": "text", "text": "What's the weather in Paris?"}]), id="one text part"),
        pytest.param(_set(("tools", 0, "description"), "Get the current weather for a city."), id="same description"),
        pytest.param(
            _set(("messages", 1, "content"), [{"type": "text", "text": "What's the weather "}, {"type": "text", "text": "in Paris?"}]),
            id="text split in parts",
        ),
    ],
)
def test_not_compared(mutate: Callable[[dict[str, Any]], None]) -> None:
    req = first_request()
    mutate(json_of(req))
    assert request_digest(req) == request_digest(first_request())


def test_none_and_empty_params_are_absent() -> None:
    bare = {"messages": [{"role": "user", "content": "hi"}], "tools": []}
    assert request_digest(bare) == request_digest({**bare, "model": None, "systemPrompt": None, "params": None})
    assert request_digest(bare) == request_digest({**bare, "params": {}})
    assert request_digest(bare) == request_digest({"messages": bare["messages"]})  # tools absent is []


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(_set(("model",), "gpt-4o"), id="model"),
        pytest.param(_set(("systemPrompt",), "You are terse."), id="system"),
        pytest.param(_delete("systemPrompt"), id="system removed"),
        pytest.param(_set(("messages", 1, "role"), "assistant"), id="role"),
        pytest.param(_set(("messages", 1, "content"), "What's the weather in Lyon?"), id="text"),
        pytest.param(_set(("tools", 0, "description"), "Weather."), id="tool description"),
        pytest.param(_set(("tools", 0, "inputSchema", "required"), []), id="tool schema"),
        pytest.param(_set(("params", "temperature"), 0.7), id="temperature"),
        pytest.param(_set(("params", "stream"), True), id="stream"),
        pytest.param(_set(("params", "maxTokens"), True), id="true is not 1"),
        pytest.param(_set(("messages", 1, "content"), "What's the weather in  Paris?"), id="one more space"),
    ],
)
def test_compared(mutate: Callable[[dict[str, Any]], None]) -> None:
    req = first_request()
    mutate(json_of(req))
    assert request_digest(req) != request_digest(first_request())


def test_tool_results_and_calls_are_compared() -> None:
    changed_result = second_request({"forecast": "sun", "celsius": 24})
    changed_input = second_request()
    json_of(changed_input)["messages"][2]["content"][0]["toolInput"] = {"city": "Lyon"}
    digests = {request_digest(second_request()), request_digest(changed_result), request_digest(changed_input)}
    assert len(digests) == 3


def test_adjacent_text_parts_beside_tool_calls_are_joined() -> None:
    call = {"type": "tool_use", "toolCallId": "call-0", "toolName": "t", "toolInput": {}}
    split = {
        "messages": [{"role": "assistant", "content": [{"type": "text", "text": "Let me "}, {"type": "text", "text": "check."}, call]}]
    }
    whole = {"messages": [{"role": "assistant", "content": [{"type": "text", "text": "Let me check."}, call]}]}
    assert compared_view(split) == compared_view(whole)
    assert request_digest(split) == request_digest(whole)
    reordered = {"messages": [{"role": "assistant", "content": [call, {"type": "text", "text": "Let me check."}]}]}
    assert request_digest(reordered) != request_digest(whole)


def _tools(*names: str) -> ModelInput:
    schema = {"type": "object", "properties": {}}
    return {"messages": [{"role": "user", "content": "hi"}], "tools": [{"name": n, "inputSchema": schema} for n in names]}


def test_a_vanished_or_new_tool_is_named_not_its_neighbour() -> None:
    from blackbox_mitm.matcher.difference import first_difference

    gone = first_difference(_tools("Read", "mcp__db__query", "Monitor"), _tools("Read", "Monitor"))
    assert gone is not None and gone.headline() == "tool 1 (mcp__db__query): missing from the agent's request"
    added = first_difference(_tools("Read", "Monitor"), _tools("Read", "WebFetch", "Monitor"))
    assert added is not None and added.headline() == "tool 1 (WebFetch): extra, not in the recording's request"
    changed = first_difference(
        _tools("Read", "Monitor"), {**_tools("Read"), "tools": [*_tools("Read")["tools"], {"name": "Monitor", "inputSchema": {}}]}
    )
    assert changed is not None and changed.headline().startswith("tool 1 (Monitor): definition differs")


def test_strict_on_a_tool_is_compared() -> None:
    from blackbox_mitm.matcher.difference import first_difference

    strict = _tools("f")
    strict["tools"][0]["strict"] = True
    found = first_difference(strict, _tools("f"))
    assert found is not None and found.headline().startswith("tool 0 (f): definition differs")


def test_a_divergence_right_after_a_high_usage_answer_says_so() -> None:
    from blackbox_mitm.cassette import Trace
    from blackbox_mitm.matcher.outcomes import Divergence, Served
    from blackbox_mitm.matcher.recorded import RecordedCalls

    trace = Trace.new("long-1", created_at=1)
    first = _tools("Read")
    second: ModelInput = {**_tools("Read"), "messages": [{"role": "user", "content": "go on"}]}
    trace.append("model_input", first, timestamp=2)
    trace.append("model_output", {"type": "final_answer", "text": "ok", "tokens": {"input": 190_000, "output": 900}}, timestamp=3)
    trace.append("model_input", second, timestamp=4)
    trace.append("model_output", {"type": "final_answer", "text": "done"}, timestamp=5)
    calls = RecordedCalls(trace)
    assert isinstance(calls.match(first), Served)
    compacted: ModelInput = {**second, "messages": [{"role": "user", "content": "<summary of the conversation>"}]}
    divergence = calls.match(compacted)
    assert isinstance(divergence, Divergence) and divergence.difference is not None
    assert "reported high usage (190,000 input and 900 output tokens)" in (divergence.difference.note or "")
    assert "note: the recorded answer just before (step 1)" in divergence.human()


def test_masked_diff_of_two_recordings_leaves_out_tokens_and_reasoning() -> None:
    from blackbox_mitm.cassette import Trace
    from blackbox_mitm.matcher.compare_runs import masked_divergence
    from blackbox_mitm.matcher.masks import CompareRules

    def run(run_id: str, tokens: int, signature: str, text: str = "ok") -> Trace:
        trace = Trace.new(run_id, created_at=1)
        trace.append("model_input", _tools("Read"), timestamp=2)
        answer = {"type": "final_answer", "text": text, "tokens": {"input": tokens, "output": 3}}
        trace.append("model_output", {**answer, "reasoning": [{"type": "thinking", "text": "t", "signature": signature}]}, timestamp=3)
        return trace

    rules = CompareRules.build()
    assert masked_divergence(run("a-1", 100, "EqA"), run("b-1", 120, "EqB"), rules) is None
    found = masked_divergence(run("a-1", 100, "EqA"), run("b-1", 100, "EqA", text="other"), rules)
    assert found is not None and found.index == 1
