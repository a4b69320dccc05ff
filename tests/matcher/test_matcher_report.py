"""The end-of-replay verdict and its one-screen report, rendered from the status alone."""

from __future__ import annotations

import json
from typing import Any

import pytest
from matcher_runs import calls_trace, first_request, plain_request, second_request, weather_trace

from blackbox_mitm.matcher import RecordedCalls, render_report, verdict


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({}, "ok"),
        ({"divergences": 1, "exhausted_calls": 1, "incomplete": [4]}, "diverged"),
        ({"exhausted_calls": 1, "incomplete": [4]}, "overran"),
        ({"incomplete": [4]}, "incomplete"),
        ({"past_cut_calls": 3}, "ok"),
        ({"out_of_order": 2}, "ok"),
    ],
)
def test_verdict(status: dict[str, Any], expected: str) -> None:
    assert verdict(status) == expected


def test_report_of_a_clean_replay() -> None:
    rc = RecordedCalls(weather_trace())
    rc.match(first_request())
    rc.match(second_request())
    assert rc.report() == (
        "replay of recorded run weather-7: ok — the agent made exactly the recorded model calls\n"
        "  model calls served: 2 of 2 (6 of 6 steps)\n"
        "  exhausted calls: 0\n"
        "  incomplete: none\n"
        "  divergences: 0"
    )


def test_report_of_a_divergence() -> None:
    rc = RecordedCalls(weather_trace())
    rc.match(first_request("Lyon"))
    assert rc.report() == (
        "replay of recorded run weather-7: diverged — the agent left the recorded path\n"
        "  model calls served: 0 of 2 (0 of 6 steps)\n"
        "  exhausted calls: 0\n"
        "  incomplete: 2 recorded calls never asked for (model_input step 0, 4)\n"
        "  divergences: 1\n"
        "\n"
        "the agent diverged from recorded run weather-7 at step 0:\n"
        "  message 1 (user): content differs at character 22\n"
        '    recorded: "What\'s the weather in Paris?"\n'
        '    got:      "What\'s the weather in Lyon?"\n'
        "  (the recording's request has 2 messages, the agent's 2)"
    )


def test_report_of_an_overrun_with_calls_out_of_order() -> None:
    rc = RecordedCalls(calls_trace([plain_request("a"), plain_request("b")], run_id="r-1"))
    rc.match(plain_request("b"))
    rc.match(plain_request("a"))
    rc.match(plain_request("c"))
    assert rc.report() == (
        "replay of recorded run r-1: overran — the agent made more model calls than the recording holds\n"
        "  model calls served: 2 of 2 (4 of 4 steps)\n"
        "  exhausted calls: 1 (asked for after every recorded call had been served)\n"
        "  incomplete: none\n"
        "  served out of recorded order (matched by content): 1\n"
        "  divergences: 0"
    )


def test_report_of_a_run_stopped_early_lists_at_most_ten_steps() -> None:
    rc = RecordedCalls(calls_trace([plain_request(f"q{i}") for i in range(13)], run_id="r-2"))
    rc.match(plain_request("q0"))
    lines = rc.report().splitlines()
    assert lines[0] == "replay of recorded run r-2: incomplete — the agent stopped before making every recorded model call"
    assert lines[3] == "  incomplete: 12 recorded calls never asked for (model_input step 2, 4, 6, 8, 10, 12, 14, 16, 18, 20 and 2 more)"


def test_report_of_a_fork_prefix() -> None:
    rc = RecordedCalls(weather_trace(), upto=3)
    rc.match(first_request())
    rc.match(second_request())
    assert rc.report().splitlines()[:3] == [
        "replay of recorded run weather-7: ok — the agent made exactly the recorded model calls",
        "  model calls served: 1 of 1 (2 of 2 steps)",
        "  served up to step 3; calls past the cut: 1",
    ]


def test_report_renders_the_same_from_a_json_file() -> None:
    rc = RecordedCalls(weather_trace())
    rc.match(first_request())
    rc.match(second_request({"forecast": "sun"}))
    status = rc.status()
    assert render_report(json.loads(json.dumps(status))) == rc.report()
