"""The `show` timeline: one readable line per step, a header with lineage and outcome."""

from __future__ import annotations

from typing import Any

import pytest
from cassette_builders import CASSETTES, weather_trace

from blackbox_mitm.cassette import TraceStep, load_trace
from blackbox_mitm.cassette.timeline import build_timeline, format_offset, render_timeline, summarize_step


def _step(step_type: str, payload: Any) -> TraceStep:
    return TraceStep("r:0", 0, step_type, 0, payload, None, "0" * 64)


@pytest.mark.parametrize(
    ("step_type", "payload", "summary"),
    [
        (
            "model_input",
            {"messages": [{"role": "user", "content": "What's the weather in Paris?"}], "tools": [], "model": "gpt-4o"},
            'gpt-4o · 1 message · user: "What\'s the weather in Paris?"',
        ),
        (
            "model_input",
            {
                "model": "claude-sonnet-4",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "Weather in"}, {"type": "text", "text": "Paris?"}]},
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "toolCallId": "call-0", "toolName": "get_weather", "toolInput": {}}],
                    },
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather", "error": "timeout"}],
                    },
                ],
            },
            'claude-sonnet-4 · 3 messages · user: "Weather in Paris?" · then get_weather error',
        ),
        ("model_input", {"messages": []}, "0 messages · no user text"),
        (
            "model_output",
            {"type": "tool_calls", "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}}]},
            'calls get_weather({"city":"Paris"})',
        ),
        (
            "model_output",
            {
                "type": "tool_calls",
                "text": "Checking both.",
                "calls": [
                    {"toolCallId": "call-0", "toolName": "a", "toolInput": {}},
                    {"toolCallId": "call-1", "toolName": "b", "toolInput": [1]},
                ],
            },
            '"Checking both." then calls a({}), b([1])',
        ),
        (
            "model_output",
            {"type": "tool_call", "toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Oslo"}},
            'calls get_weather({"city":"Oslo"})',
        ),
        ("model_output", {"type": "final_answer", "text": "It is raining."}, 'answer: "It is raining."'),
        ("model_output", {"type": "final_answer", "text": "It is rain", "stop": "length"}, '[cut off at max tokens] answer: "It is rain"'),
        (
            "model_output",
            {"type": "final_answer", "text": "I can't help with that.", "stop": "refusal"},
            'refused: "I can\'t help with that."',
        ),
        ("tool_call", {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}}, 'get_weather({"city":"Paris"})'),
        (
            "tool_result",
            {"toolCallId": "call-0", "toolName": "get_weather", "result": {"forecast": "rain", "celsius": 12}},
            'get_weather → {"forecast":"rain","celsius":12}',
        ),
        (
            "tool_result",
            {"toolCallId": "call-0", "toolName": "get_weather", "error": "city not found"},
            "get_weather → error: city not found",
        ),
        ("metadata", {"event": "run_completed", "status": "success", "result": "It is raining."}, 'run completed: "It is raining."'),
        (
            "metadata",
            {"event": "run_failed", "status": "error", "reason": "process_exit", "exitCode": 3},
            "run failed: process_exit (exit code 3)",
        ),
        (
            "metadata",
            {"event": "run_failed", "status": "error", "reason": "calls_in_flight", "exitCode": 1, "inFlight": 2},
            "run failed: calls_in_flight (exit code 1, 2 calls in flight)",
        ),
        (
            "metadata",
            {"event": "run_failed", "status": "error", "reason": "max_steps_exceeded", "maxSteps": 10},
            "run failed: max_steps_exceeded (limit 10 steps)",
        ),
        (
            "metadata",
            {"event": "run_failed", "status": "error", "reason": "unknown_tool", "toolName": "fly"},
            "run failed: unknown_tool (tool fly)",
        ),
        (
            "metadata",
            {"event": "run_failed", "status": "error", "reason": "recording_interrupted", "message": "proxy stopped"},
            'run failed: recording_interrupted: "proxy stopped"',
        ),
        ("metadata", {"event": "checkpoint", "n": 1}, 'checkpoint {"n":1}'),
    ],
)
def test_summaries(step_type: str, payload: Any, summary: str) -> None:
    assert summarize_step(_step(step_type, payload)) == summary


def test_long_text_is_cut_and_kept_on_one_line() -> None:
    text = "line one\n\nline two\t" + "x" * 500
    summary = summarize_step(_step("model_output", {"type": "final_answer", "text": text}), limit=80)
    assert "\n" not in summary and "\t" not in summary
    assert summary.startswith('answer: "line one line two xxx')
    assert len(summary) <= 80 and "…" in summary


def test_a_lone_surrogate_is_printable() -> None:
    summary = summarize_step(_step("tool_result", {"toolCallId": "call-0", "toolName": "t", "result": "cut \ud83d"}))
    summary.encode("utf-8")  # would raise on a lone surrogate
    assert "\\ud83d" in summary


def test_odd_payloads_do_not_break_the_summary() -> None:
    assert summarize_step(_step("tool_call", ["not", "an", "object"])) == '["not","an","object"]'
    assert summarize_step(_step("model_output", {"type": "tool_calls", "calls": "nope"})) == "calls no tool calls"


@pytest.mark.parametrize(
    ("ms", "text"), [(0, "+0.00s"), (410, "+0.41s"), (59_994, "+59.99s"), (125_000, "+2m05s"), (3_720_000, "+1h02m"), (-200, "-0.20s")]
)
def test_format_offset(ms: int, text: str) -> None:
    assert format_offset(ms) == text


def test_a_run_reads_at_a_glance() -> None:
    text = render_timeline(build_timeline(weather_trace("weather-1")))
    lines = text.splitlines()
    assert lines[0] == "run weather-1"
    assert lines[1] == "recorded 2024-11-30 15:40:00 UTC · 7 steps over 1.10s · ended: run completed"
    assert "what happened" in lines[3]
    assert lines[4].split()[:3] == ["0", "model_input", "+0.01s"]
    assert 'calls get_weather({"city":"Paris"})' in lines[5]
    assert lines[6].split()[:3] == ["2", "tool_call", "+0.41s"]
    assert 'get_weather → {"forecast":"rain","celsius":12}' in lines[7]
    assert lines[10].endswith('run completed: "It is raining in Paris, 12 °C."')
    assert "forked" not in text


def test_a_fork_shows_its_lineage_and_cut() -> None:
    child = load_trace(CASSETTES / "js_weather_sunny.json", recover=False)
    timeline = build_timeline(child)
    assert (timeline.parent_id, timeline.fork_step) == ("js-weather", 3)
    text = render_timeline(timeline)
    assert "forked from js-weather at step 3 (js-weather:3)" in text
    lines = text.splitlines()
    cut = next(n for n, line in enumerate(lines) if "forked here" in line)
    assert lines[cut + 1].split()[:2] == ["3", "tool_result"]
    # The copied prefix keeps the parent's timestamps, which predate the child's createdAt.
    assert [r.offset_ms for r in timeline.rows[:4]] == [0, 402, 403, 510]


def test_the_timeline_as_data() -> None:
    trace = weather_trace()
    data = build_timeline(trace).to_json()
    assert data["run"] == "weather-1" and data["steps"] == 7 and data["created"] == "2024-11-30T15:40:00.000Z"
    assert data["terminal"] is not None
    assert data["terminal"]["event"] == "run_completed" and data["outcome"] == "ended: run completed"
    assert data["parentId"] is None and data["forkStep"] is None
    assert [r["summary"] for r in data["timeline"]] == [summarize_step(s) for s in trace.steps]
    assert data["timeline"][1] == {
        "index": 1,
        "type": "model_output",
        "timestamp": trace.steps[1].timestamp,
        "offsetMs": 410,
        "offset": "+0.41s",
        "summary": 'calls get_weather({"city":"Paris"})',
    }


def test_a_run_without_an_end_says_so() -> None:
    trace = weather_trace()
    del trace.steps[-1]
    assert build_timeline(trace).outcome.startswith("no end marker")
