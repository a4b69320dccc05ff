"""first_difference: the first of model, system, messages, tools, params that differs, and its quotes."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from matcher_runs import first_request, json_of, second_request

from blackbox_mitm.matcher import Difference, first_difference, request_digest
from blackbox_mitm.matcher.difference import QUOTE_CHARS, QUOTE_CONTEXT, ROLE_CHARS

Mutation = Callable[[dict[str, Any]], None]


def test_spec_example() -> None:
    d = first_difference(first_request("Paris"), first_request("Lyon"))
    assert d is not None
    assert d.to_json() == {
        "message": 1,
        "role": "user",
        "field": "content",
        "at_char": 22,
        "recorded": "What's the weather in Paris?",
        "got": "What's the weather in Lyon?",
        "recorded_messages": 2,
        "got_messages": 2,
    }


def test_identical_requests_have_no_difference() -> None:
    assert first_difference(second_request(), second_request()) is None


def _model(req: dict[str, Any]) -> None:
    req["model"] = "gpt-4o"
    req["messages"][1]["content"] = "changed too, but model comes first"


def _system(req: dict[str, Any]) -> None:
    req["systemPrompt"] = "You are a travel assistant."


def _no_system(req: dict[str, Any]) -> None:
    del req["systemPrompt"]


def _role(req: dict[str, Any]) -> None:
    req["messages"][1]["role"] = "system"


def _tool_result(req: dict[str, Any]) -> None:
    req["messages"][3]["content"][0]["result"] = {"forecast": "sun", "celsius": 24}


def _tool_error(req: dict[str, Any]) -> None:
    part = req["messages"][3]["content"][0]
    del part["result"]
    part["error"] = "timeout"


def _result_id(req: dict[str, Any]) -> None:
    req["messages"][3]["content"][0]["toolCallId"] = "call-1"


def _tool_input(req: dict[str, Any]) -> None:
    req["messages"][2]["content"][0]["toolInput"] = {"city": "Lyon"}


def _tool_name(req: dict[str, Any]) -> None:
    req["messages"][2]["content"][0]["toolName"] = "get_forecast"


def _missing(req: dict[str, Any]) -> None:
    del req["messages"][2:]


def _extra(req: dict[str, Any]) -> None:
    req["messages"].append({"role": "user", "content": "And tomorrow?"})


def _tool_description(req: dict[str, Any]) -> None:
    req["tools"][0]["description"] = "Get the weather."


def _tool_added(req: dict[str, Any]) -> None:
    req["tools"].append({"name": "get_time", "inputSchema": {}})


def _tool_removed(req: dict[str, Any]) -> None:
    req["tools"].clear()


def _temperature(req: dict[str, Any]) -> None:
    req["params"]["temperature"] = 0.7


def _stream(req: dict[str, Any]) -> None:
    req["params"]["stream"] = True


def _no_max_tokens(req: dict[str, Any]) -> None:
    del req["params"]["maxTokens"]


RECORDED_RESULT = '{"celsius":12,"forecast":"rain"}'
TOOL_JSON = (
    '{"description":"Get the current weather for a city.",'
    '"inputSchema":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"},"name":"get_weather"}'
)

CASES: list[Any] = [
    pytest.param(_model, dict(field="model", at_char=6, recorded="gpt-4o-mini", got="gpt-4o"), id="model"),
    pytest.param(
        _system, dict(field="system", at_char=10, recorded="You are a weather assistant.", got="You are a travel assistant."), id="system"
    ),
    pytest.param(_no_system, dict(field="system", at_char=None, recorded="You are a weather assistant.", got=None), id="system absent"),
    pytest.param(_role, dict(field="role", message=1, role="system", at_char=0, recorded="user", got="system"), id="role"),
    pytest.param(
        _tool_result,
        dict(field="content", message=3, role="user", at_char=11, recorded=RECORDED_RESULT, got='{"celsius":24,"forecast":"sun"}'),
        id="tool result",
    ),
    pytest.param(
        _tool_error,
        dict(field="content", message=3, role="user", at_char=0, recorded=RECORDED_RESULT, got="error: timeout"),
        id="tool error",
    ),
    pytest.param(
        _result_id, dict(field="tool_call_id", message=3, role="user", at_char=5, recorded="call-0", got="call-1"), id="tool_call_id"
    ),
    pytest.param(
        _tool_input,
        dict(
            field="tool_calls",
            message=2,
            role="assistant",
            at_char=21,
            recorded='get_weather({"city":"Paris"})',
            got='get_weather({"city":"Lyon"})',
        ),
        id="tool call input",
    ),
    pytest.param(
        _tool_name,
        dict(
            field="tool_calls",
            message=2,
            role="assistant",
            at_char=4,
            recorded='get_weather({"city":"Paris"})',
            got='get_forecast({"city":"Paris"})',
        ),
        id="tool call name",
    ),
    pytest.param(
        _missing,
        dict(field="missing", message=2, role="assistant", at_char=None, recorded="", got=None, got_messages=2),
        id="missing",
    ),
    pytest.param(
        _extra, dict(field="extra", message=4, role="user", at_char=None, recorded=None, got="And tomorrow?", got_messages=5), id="extra"
    ),
    pytest.param(
        _tool_description,
        dict(field="tools", message=0, role="get_weather", at_char=24, recorded=TOOL_JSON[:QUOTE_CHARS]),
        id="tool definition",
    ),
    pytest.param(
        _tool_added,
        dict(field="tools", message=1, role="get_time", at_char=None, recorded=None, got='{"inputSchema":{},"name":"get_time"}'),
        id="tool added",
    ),
    pytest.param(
        _tool_removed,
        dict(field="tools", message=0, role="get_weather", at_char=None, recorded=TOOL_JSON[:QUOTE_CHARS], got=None),
        id="tool removed",
    ),
    pytest.param(_temperature, dict(field="params.temperature", at_char=2, recorded="0.2", got="0.7"), id="temperature"),
    pytest.param(_stream, dict(field="params.stream", at_char=None, recorded=None, got="true"), id="stream"),
    pytest.param(_no_max_tokens, dict(field="params.maxTokens", at_char=None, recorded="256", got=None), id="param removed"),
]


@pytest.mark.parametrize(("mutate", "expected"), CASES)
def test_first_difference(mutate: Mutation, expected: dict[str, Any]) -> None:
    recorded = second_request()
    got = second_request()
    mutate(json_of(got))
    d = first_difference(recorded, got)
    assert d is not None
    expected = {"message": None, "role": None, "recorded_messages": 4, "got_messages": 4, **expected}
    actual: dict[str, Any] = dict(d.to_json())
    assert {k: actual[k] for k in expected} == expected
    assert set(actual) == {"message", "role", "field", "at_char", "recorded", "got", "recorded_messages", "got_messages"}
    # The digest and the comparison agree on whether there is a difference.
    assert request_digest(recorded) != request_digest(got)


def test_structure_only_difference_is_reported_as_content_json() -> None:
    recorded = second_request()
    got = second_request()
    json_of(got)["messages"][3]["content"][0]["toolName"] = "get_forecast"  # texts, ids and calls agree
    d = first_difference(recorded, got)
    assert d is not None
    assert (d.field, d.message, d.role) == ("content", 3, "user")
    assert d.recorded is not None and d.got is not None and d.at_char is not None
    full = '[{"result":{"celsius":12,"forecast":"rain"},"toolCallId":"call-0","toolName":"get_weather","type":"tool_result"}]'
    assert d.at_char == full.index("get_weather") + len("get_")
    assert d.recorded == full[d.at_char - QUOTE_CONTEXT :]
    assert d.recorded[QUOTE_CONTEXT:].startswith("weather")
    assert d.got[QUOTE_CONTEXT:].startswith("forecast")


def test_string_and_number_results_differ() -> None:
    recorded = second_request("1")
    got = second_request(1)
    d = first_difference(recorded, got)
    assert d is not None
    assert d.field == "content"
    assert d.recorded is not None and d.got is not None and d.at_char is not None
    assert d.recorded[d.at_char :].startswith('"1"')
    assert d.got[d.at_char :].startswith("1,")


def test_only_the_first_difference_is_reported() -> None:
    recorded = second_request()
    got = second_request({"forecast": "sun"})
    got["messages"][1]["content"] = "What's the weather in Lyon?"
    got["params"]["temperature"] = 1
    d = first_difference(recorded, got)
    assert d is not None
    assert (d.field, d.message) == ("content", 1)


def test_quotes_start_before_the_difference_and_hold_at_most_120_characters() -> None:
    recorded = first_request()
    got = first_request()
    recorded["messages"][1]["content"] = "a" * 500 + "X" + "b" * 300
    got["messages"][1]["content"] = "a" * 500 + "Y" + "b" * 300
    d = first_difference(recorded, got)
    assert d is not None and d.recorded is not None and d.got is not None
    assert d.at_char == 500
    assert len(d.recorded) == len(d.got) == QUOTE_CHARS
    assert d.recorded[QUOTE_CONTEXT] == "X" and d.got[QUOTE_CONTEXT] == "Y"
    assert d.recorded == ("a" * QUOTE_CONTEXT + "X" + "b" * 300)[:QUOTE_CHARS]


def test_a_difference_past_a_long_equal_prefix_is_found_exactly() -> None:
    base = "0123456789" * 1000
    for at in (0, 1023, 1024, 1025, 5000, 9999):
        changed = base[:at] + "#" + base[at + 1 :]
        d = first_difference({"messages": [{"role": "user", "content": base}]}, {"messages": [{"role": "user", "content": changed}]})
        assert d is not None and d.at_char == at
    d = first_difference({"messages": [{"role": "user", "content": base}]}, {"messages": [{"role": "user", "content": base + "!"}]})
    assert d is not None and d.at_char == len(base)


def test_roles_are_cut_to_32_characters() -> None:
    long_role = "r" * 100
    d = first_difference(
        {"messages": [{"role": long_role, "content": "a"}]},
        {"messages": [{"role": long_role, "content": "b"}]},
    )
    assert d is not None
    assert d.role == "r" * ROLE_CHARS


def test_from_json_round_trip() -> None:
    d = first_difference(first_request("Paris"), first_request("Lyon"))
    assert d is not None
    assert Difference.from_json(d.to_json()) == d


def _random_edit(value: Any, rng: random.Random) -> Any:
    """A copy of ``value`` with one random leaf changed, key dropped or list item moved."""
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        out = dict(value)
        if rng.random() < 0.15:
            del out[key]
        else:
            out[key] = _random_edit(value[key], rng)
        return out
    if isinstance(value, list) and value:
        out_list = list(value)
        if len(out_list) > 1 and rng.random() < 0.15:
            out_list.append(out_list.pop(0))
        else:
            i = rng.randrange(len(out_list))
            out_list[i] = _random_edit(out_list[i], rng)
        return out_list
    return rng.choice(["", "x", "call-0", 0, 1, 1.5, True, None, {"k": 1}, [1], str(value) + "!"])


@pytest.mark.parametrize("seed", range(5))
def test_a_difference_is_found_exactly_when_the_digests_differ(seed: int) -> None:
    rng = random.Random(seed)
    recorded = second_request()
    recorded["params"]["stop"] = ["\n\n"]
    for _ in range(300):
        got = recorded
        for _ in range(rng.randint(1, 3)):
            got = _random_edit(got, rng)
        d = first_difference(recorded, got)
        assert (d is None) == (request_digest(recorded) == request_digest(got)), got
        if d is not None and d.at_char is not None:
            assert d.recorded is not None and d.got is not None
