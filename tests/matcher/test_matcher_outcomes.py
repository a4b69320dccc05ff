"""How divergences and exhausted recordings read: to_json() and human(), every variant written out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from matcher_runs import first_request, json_of, second_request

from blackbox_mitm.matcher import Divergence, Exhausted, first_difference, request_digest


def divergence(recorded: Mapping[str, Any], got: Mapping[str, Any], step: int = 0) -> Divergence:
    return Divergence("weather-7", step, first_difference(recorded, got), request_digest(recorded), request_digest(got))


def small(**fields: Any) -> dict[str, Any]:
    req: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "systemPrompt": "You are a weather assistant.",
        "messages": [{"role": "assistant", "content": "Hello! Which city?"}, {"role": "user", "content": "What's the weather in Paris?"}],
        "tools": [{"name": "t", "description": "abc", "inputSchema": {}}],
        "params": {"temperature": 0.2},
    }
    req.update(fields)
    return req


def test_spec_example_json() -> None:
    d = divergence(first_request("Paris"), first_request("Lyon"))
    body = d.to_json()
    assert body == {
        "type": "replay_divergence",
        "run": "weather-7",
        "step": 0,
        "difference": {
            "message": 1,
            "role": "user",
            "field": "content",
            "at_char": 22,
            "recorded": "What's the weather in Paris?",
            "got": "What's the weather in Lyon?",
            "recorded_messages": 2,
            "got_messages": 2,
        },
        "expected_digest": request_digest(first_request("Paris")),
        "got_digest": request_digest(first_request("Lyon")),
        "message": "this request's messages do not match recorded step 0: message 1 (user): content differs at character 22",
    }


def test_spec_example_human() -> None:
    assert divergence(first_request("Paris"), first_request("Lyon")).human() == (
        "the agent diverged from recorded run weather-7 at step 0:\n"
        "  message 1 (user): content differs at character 22\n"
        '    recorded: "What\'s the weather in Paris?"\n'
        '    got:      "What\'s the weather in Lyon?"\n'
        "  (the recording's request has 2 messages, the agent's 2)"
    )


MESSAGES_2 = "  (the recording's request has 2 messages, the agent's 2)"

HUMAN_CASES: list[Any] = [
    pytest.param(
        small(model="gpt-4o"),
        ["  model differs at character 6", '    recorded: "gpt-4o-mini"', '    got:      "gpt-4o"', MESSAGES_2],
        "this request's model does not match recorded step 0: model differs at character 6",
        id="model",
    ),
    pytest.param(
        small(systemPrompt=None),
        [
            "  system prompt: absent from the agent's request",
            '    recorded: "You are a weather assistant."',
            "    got:      (absent)",
            MESSAGES_2,
        ],
        "this request's system prompt does not match recorded step 0: system prompt: absent from the agent's request",
        id="system absent",
    ),
    pytest.param(
        small(systemPrompt="You are a travel assistant."),
        [
            "  system prompt differs at character 10",
            '    recorded: "You are a weather assistant."',
            '    got:      "You are a travel assistant."',
            MESSAGES_2,
        ],
        "this request's system prompt does not match recorded step 0: system prompt differs at character 10",
        id="system",
    ),
    pytest.param(
        small(tools=[{"name": "t", "description": "abd", "inputSchema": {}}]),
        [
            "  tool 0 (t): definition differs at character 18",
            '    recorded: "{"description":"abc","inputSchema":{},"name":"t"}"',
            '    got:      "{"description":"abd","inputSchema":{},"name":"t"}"',
            MESSAGES_2,
        ],
        "this request's tools do not match recorded step 0: tool 0 (t): definition differs at character 18",
        id="tool changed",
    ),
    pytest.param(
        small(tools=[]),
        [
            "  tool 0 (t): missing from the agent's request",
            '    recorded: "{"description":"abc","inputSchema":{},"name":"t"}"',
            "    got:      (absent)",
            MESSAGES_2,
        ],
        "this request's tools do not match recorded step 0: tool 0 (t): missing from the agent's request",
        id="tool missing",
    ),
    pytest.param(
        small(tools=[{"name": "t", "description": "abc", "inputSchema": {}}, {"name": "u", "inputSchema": {}}]),
        [
            "  tool 1 (u): extra, not in the recording's request",
            "    recorded: (absent)",
            '    got:      "{"inputSchema":{},"name":"u"}"',
            MESSAGES_2,
        ],
        "this request's tools do not match recorded step 0: tool 1 (u): extra, not in the recording's request",
        id="tool extra",
    ),
    pytest.param(
        small(params={"temperature": 0.7}),
        ["  params.temperature differs at character 2", '    recorded: "0.2"', '    got:      "0.7"', MESSAGES_2],
        "this request's params do not match recorded step 0: params.temperature differs at character 2",
        id="temperature",
    ),
    pytest.param(
        small(params={"temperature": 0.2, "stream": True}),
        ["  params.stream: absent from the recording's request", "    recorded: (absent)", '    got:      "true"', MESSAGES_2],
        "this request's params do not match recorded step 0: params.stream: absent from the recording's request",
        id="stream",
    ),
    pytest.param(
        small(messages=[{"role": "assistant", "content": "Hello! Which city?"}]),
        [
            "  message 1 (user): missing from the agent's request",
            '    recorded: "What\'s the weather in Paris?"',
            "    got:      (absent)",
            "  (the recording's request has 2 messages, the agent's 1)",
        ],
        "this request's messages do not match recorded step 0: message 1 (user): missing from the agent's request",
        id="missing",
    ),
    pytest.param(
        small(
            messages=[
                {"role": "assistant", "content": "Hello! Which city?"},
                {"role": "user", "content": "What's the weather in Paris?"},
                {"role": "user", "content": "And tomorrow?"},
            ]
        ),
        [
            "  message 2 (user): extra, the recording's request ends before it",
            "    recorded: (absent)",
            '    got:      "And tomorrow?"',
            "  (the recording's request has 2 messages, the agent's 3)",
        ],
        "this request's messages do not match recorded step 0: message 2 (user): extra, the recording's request ends before it",
        id="extra",
    ),
    pytest.param(
        small(
            messages=[{"role": "assistant", "content": "Hello! Which city?"}, {"role": "user", "content": "What's the weather\nin Paris?"}]
        ),
        [
            "  message 1 (user): content differs at character 18",
            '    recorded: "What\'s the weather in Paris?"',
            '    got:      "What\'s the weather\\nin Paris?"',
            MESSAGES_2,
        ],
        "this request's messages do not match recorded step 0: message 1 (user): content differs at character 18",
        id="control characters escaped",
    ),
]


@pytest.mark.parametrize(("got", "lines", "message"), HUMAN_CASES)
def test_human_variants(got: dict[str, Any], lines: list[str], message: str) -> None:
    d = divergence(small(), got)
    assert d.human() == "\n".join(["the agent diverged from recorded run weather-7 at step 0:", *lines])
    assert d.to_json()["message"] == message


def test_human_tool_calls_at_a_later_step() -> None:
    got = second_request()
    json_of(got)["messages"][2]["content"][0]["toolInput"] = {"city": "Lyon"}
    assert divergence(second_request(), got, step=4).human() == (
        "the agent diverged from recorded run weather-7 at step 4:\n"
        "  message 2 (assistant): tool_calls differs at character 21\n"
        '    recorded: "get_weather({"city":"Paris"})"\n'
        '    got:      "get_weather({"city":"Lyon"})"\n'
        "  (the recording's request has 4 messages, the agent's 4)"
    )


def test_human_long_quote_marks_the_cut() -> None:
    recorded = small(messages=[{"role": "user", "content": "x" * 100 + "Paris" + "y" * 200}])
    got = small(messages=[{"role": "user", "content": "x" * 100 + "Lyon" + "y" * 200}])
    text = divergence(recorded, got).human()
    assert text.splitlines()[1:] == [
        "  message 0 (user): content differs at character 100",
        '    recorded: "…' + "x" * 40 + "Paris" + "y" * 75 + '"',
        '    got:      "…' + "x" * 40 + "Lyon" + "y" * 76 + '"',
        "  (the recording's request has 1 message, the agent's 1)",
    ]


def test_human_without_a_difference() -> None:
    d = Divergence("weather-7", 0, None, "a" * 64, "b" * 64)
    assert d.human() == (
        "the agent diverged from recorded run weather-7 at step 0:\n"
        "  the request differs from the recording; no difference could be computed\n"
        f"    recorded digest: {'a' * 64}\n"
        f"    got digest:      {'b' * 64}"
    )
    assert d.to_json()["difference"] is None


def test_divergence_from_json_round_trip() -> None:
    d = divergence(first_request("Paris"), first_request("Lyon"))
    assert Divergence.from_json(d.to_json()) == d


def test_exhausted() -> None:
    e = Exhausted("weather-7", served=2, recorded=2)
    assert not e.past_cut
    assert e.human() == "the agent overran recorded run weather-7: every recorded model call (2) was served, and it asked for another"
    assert e.to_json() == {"type": "replay_exhausted", "run": "weather-7", "served": 2, "recorded": 2, "message": e.human()}


def test_exhausted_past_a_cut() -> None:
    e = Exhausted("weather-7", served=1, recorded=1, upto=3)
    assert e.past_cut
    assert e.human() == "recorded run weather-7 is served up to step 3 (1 model call); this call is past the cut"
    assert e.to_json()["past_cut"] is True and e.to_json()["upto"] == 3
