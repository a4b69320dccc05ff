"""The first divergence between two runs: its step, kind, the differing field, and both tails."""

from __future__ import annotations

import copy

import pytest
from cassette_builders import CASSETTES, weather_trace

from blackbox_mitm.cassette import Trace, load_trace
from blackbox_mitm.cassette.diff import first_difference, first_divergence
from blackbox_mitm.cassette.timeline import summarize_step


def _fork(parent: Trace, at: int, child_id: str = "child") -> Trace:
    """A child holding parent's steps before ``at``, copied verbatim (as the fork policy says)."""
    child = Trace.new(child_id, parent_id=parent.id, forked_from_step_id=f"{parent.id}:{at}")
    for step in parent.steps[:at]:
        child.adopt(step)
    return child


def _continue(child: Trace, parent: Trace, start: int) -> None:
    for step in parent.steps[start:]:
        child.append(step.type, copy.deepcopy(step.payload), timestamp=step.timestamp)


def test_identical_runs_have_no_divergence() -> None:
    assert first_divergence(weather_trace("a"), weather_trace("b")) is None  # ids are not hashed


def test_a_fork_from_javascript_diverges_exactly_at_its_cut() -> None:
    parent = load_trace(CASSETTES / "js_weather.json", recover=False)
    child = load_trace(CASSETTES / "js_weather_sunny.json", recover=False)
    d = first_divergence(parent, child)
    assert d is not None
    assert (d.index, d.kind, d.field) == (3, "input", "payload.result")
    assert d.explanation.startswith("step 3 (tool_result get_weather): different input: payload.result differs")
    assert [t.index for t in d.tail_a] == [3, 4, 5, 6] and [t.index for t in d.tail_b] == [3, 4, 5, 6]
    assert d.tail_b[0].summary == summarize_step(child.steps[3])
    assert d.tail_a[-1].summary == summarize_step(parent.steps[6])


def test_a_tool_result_fork_names_the_nested_field() -> None:
    parent = weather_trace("parent")
    child = _fork(parent, 3)
    child.append(
        "tool_result",
        {"toolCallId": "call-0", "toolName": "get_weather", "result": {"forecast": "rain", "celsius": 24}},
        timestamp=parent.steps[3].timestamp,
    )
    d = first_divergence(parent, child)
    assert d is not None and (d.index, d.kind, d.field) == (3, "input", "payload.result.celsius")
    assert "payload.result.celsius differs: 12 in a, 24 in b" in d.explanation


def test_a_different_answer_is_a_decision() -> None:
    parent = weather_trace("parent")
    child = _fork(parent, 5)
    child.append("model_output", {"type": "final_answer", "text": "It is sunny in Paris."}, timestamp=parent.steps[5].timestamp)
    d = first_divergence(parent, child)
    assert d is not None and (d.index, d.kind, d.field) == (5, "decision", "payload.text")
    assert d.explanation.startswith("step 5 (model_output): same input, different output: payload.text differs at character 6")
    assert [t.index for t in d.tail_a] == [5, 6] and [t.index for t in d.tail_b] == [5]


def test_a_different_tool_call_is_a_decision() -> None:
    a = weather_trace()
    b = _fork(a, 1)
    output = copy.deepcopy(a.steps[1].payload)
    output["calls"][0]["toolInput"] = {"city": "Lyon"}
    b.append("model_output", output, timestamp=a.steps[1].timestamp)
    d = first_divergence(a, b)
    assert d is not None and (d.index, d.kind, d.field) == (1, "decision", "payload.calls[0].toolInput.city")
    assert d.tail_b[0].summary == 'calls get_weather({"city":"Lyon"})'


def test_a_different_prompt_is_an_input_difference() -> None:
    a = weather_trace()
    b = Trace.new("b", created_at=a.createdAt)
    payload = copy.deepcopy(a.steps[0].payload)
    payload["messages"][0]["content"] = "What's the weather in Lyon?"
    b.append("model_input", payload, timestamp=a.steps[0].timestamp)
    d = first_divergence(a, b)
    assert d is not None and (d.index, d.kind, d.field) == (0, "input", "payload.messages[0].content")
    assert 'differs at character 22: "…eather in Paris?" in a, "…eather in Lyon?" in b' in d.explanation


def test_a_different_step_type_is_an_input_difference() -> None:
    a = weather_trace()
    b = _fork(a, 2)
    b.append(
        "metadata", {"event": "run_failed", "status": "error", "reason": "process_exit", "exitCode": 1}, timestamp=a.steps[2].timestamp
    )
    d = first_divergence(a, b)
    assert d is not None and (d.index, d.kind, d.field) == (2, "input", "type")
    assert "step 2 is a tool_call get_weather in a and a metadata in b" in d.explanation


@pytest.mark.parametrize("shorter", ["a", "b"])
def test_a_run_that_ends_first_is_a_length_divergence(shorter: str) -> None:
    full = weather_trace()
    cut = _fork(full, 4)
    a, b = (cut, full) if shorter == "a" else (full, cut)
    d = first_divergence(a, b)
    assert d is not None and (d.index, d.kind, d.field) == (4, "length", None)
    assert d.explanation.startswith(f"{shorter} ended after 4 steps")
    assert "3 more steps, from step 4 (model_input)" in d.explanation
    longer_tail = d.tail_b if shorter == "a" else d.tail_a
    assert [t.index for t in longer_tail] == [4, 5, 6]
    assert d.to_json()["a" if shorter == "a" else "b"] is None


def test_a_re_recording_at_another_time_says_so_and_where_the_content_parts() -> None:
    a = weather_trace()
    b = weather_trace(t0=a.createdAt + 60_000, answer="Rain in Paris.")
    d = first_divergence(a, b)
    assert d is not None and (d.index, d.kind, d.field) == (0, "input", "timestamp")
    assert "recorded at a different time" in d.explanation
    assert "Ignoring time, the runs first differ at step 5 (model_output)" in d.explanation


def test_the_divergence_as_data() -> None:
    parent = load_trace(CASSETTES / "js_weather.json", recover=False)
    child = load_trace(CASSETTES / "js_weather_sunny.json", recover=False)
    d = first_divergence(parent, child)
    assert d is not None
    data = d.to_json()
    assert {k: data[k] for k in ("index", "a", "b", "kind", "field")} == {
        "index": 3,
        "a": 3,
        "b": 3,
        "kind": "input",
        "field": "payload.result",
    }
    assert data["steps"] == {"a": 7, "b": 7}
    assert data["tails"]["b"][0] == {"index": 3, "type": "tool_result", "summary": 'get_weather → {"forecast":"sun","celsius":24}'}


@pytest.mark.parametrize(
    ("x", "y", "expected"),
    [
        ({"a": 1}, {"a": 1.0}, None),
        ({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1}, None),
        ({"a": True}, {"a": 1}, ("$.a", "$.a is a boolean in a and a number in b (true / 1)")),
        ([1, 2], [1, 2, 3], ("$", "$ has 2 items in a and 3 in b")),
        ([1, {"k": "v"}], [1, {"k": "w"}], ("$[1].k", '$[1].k differs at character 0: "v" in a, "w" in b')),
        ({"a": 1}, {"b": 1}, ("$", "$ differs (only in a: a; only in b: b)")),
        ({"odd key": None}, {"odd key": 0}, ('$["odd key"]', '$["odd key"] is null in a and a number in b (null / 0)')),
        (2**53 + 1, 2**53, None),  # the same double in JavaScript, the same canonical JSON
    ],
)
def test_first_difference(x: object, y: object, expected: tuple[str, str] | None) -> None:
    assert first_difference(x, y) == expected
