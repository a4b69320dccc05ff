"""Runs for the view tests: the weather run, a fork of it beside it, a run whose prompt is an injection attempt,
and a real replay report (``RecordedCalls.status()``) of a replay that left the recorded path."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

# The cassette tests' builders (weather_trace, save), shared here.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cassette"))

from cassette_builders import QUESTION, T0, TOOLS, save, weather_trace

from blackbox_mitm.cassette import Trace
from blackbox_mitm.matcher import RecordedCalls
from blackbox_mitm.matcher.report import ReplayStatus

__all__ = [
    "INJECTIONS",
    "QUESTION",
    "fork_of",
    "injection_trace",
    "make_runs",
    "overlapping_trace",
    "replay_report",
    "save",
    "weather_trace",
]

SUNNY = {"forecast": "sun", "celsius": 24}
INJECTIONS = (
    "</script><script>window.__pwned = 'script-close'</script>",
    "<script>window.__pwned = 'script'</script>",
    "<img src=x onerror=\"window.__pwned = 'img'\">",
)


def make_runs(tmp_path: Path) -> Path:
    """A folder with ``weather.json`` and its fork ``sunny.json`` (cut at step 3), and an unrelated JSON file."""
    folder = tmp_path / "runs"
    folder.mkdir()
    parent = weather_trace("weather-1")
    save(parent, folder / "weather.json")
    save(fork_of(parent), folder / "sunny.json")
    (folder / "notes.json").write_text(json.dumps({"not": "a cassette"}), encoding="utf-8")
    return folder


def fork_of(parent: Trace, at: int = 3, child_id: str = "sunny-1", result: Any = None) -> Trace:
    """A fork as `blackbox fork --at 3 --tool-result ...` writes it: the prefix copied, a new result, a new ending."""
    result = SUNNY if result is None else result
    child = Trace.new(child_id, created_at=T0 + 60_000, parent_id=parent.id, forked_from_step_id=f"{parent.id}:{at}")
    for step in parent.steps[:at]:
        child.adopt(step)
    cut = parent.steps[at]
    child.append("tool_result", {**copy.deepcopy(cut.payload), "result": result}, timestamp=cut.timestamp)
    answer = "It is sunny in Paris, 24 °C."
    history = copy.deepcopy(parent.steps[4].payload)
    history["messages"][2]["content"][0]["result"] = result
    child.append("model_input", history, timestamp=T0 + 60_100)
    child.append("model_output", {"type": "final_answer", "text": answer}, timestamp=T0 + 60_900)
    child.append("metadata", {"event": "run_completed", "status": "success", "result": answer}, timestamp=T0 + 60_901)
    return child


def injection_trace(trace_id: str = "inject-1") -> Trace:
    """A run whose question, tool result and answer hold markup that must be shown, never run."""
    text = " ".join(INJECTIONS)
    trace = Trace.new(trace_id, created_at=T0)
    trace.append("model_input", {"messages": [{"role": "user", "content": text}], "tools": TOOLS, "systemPrompt": text}, timestamp=T0 + 1)
    call = {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": text}}
    trace.append("model_output", {"type": "tool_calls", "calls": [call], "text": text}, timestamp=T0 + 50)
    trace.append("tool_call", call, timestamp=T0 + 51)
    trace.append("tool_result", {"toolCallId": "call-0", "toolName": "get_weather", "result": text}, timestamp=T0 + 60)
    trace.append("model_output", {"type": "final_answer", "text": text}, timestamp=T0 + 90)
    trace.append("metadata", {"event": "run_completed", "status": "success", "result": text}, timestamp=T0 + 91)
    return trace


def overlapping_trace(trace_id: str = "overlap-1") -> Trace:
    """A main call from +100 to +1100 ms, and a side call from +300 to +700 ms that finished first (recorded first)."""
    trace = Trace.new(trace_id, created_at=T0)
    side = {"messages": [{"role": "user", "content": "Title for: " + QUESTION}], "tools": [], "model": "small"}
    trace.append("model_input", side, timestamp=T0 + 300)
    trace.append("model_output", {"type": "final_answer", "text": "Paris weather"}, timestamp=T0 + 700)
    trace.append("model_input", {"messages": [{"role": "user", "content": QUESTION}], "tools": TOOLS, "model": "big"}, timestamp=T0 + 100)
    trace.append("model_output", {"type": "final_answer", "text": "Rain."}, timestamp=T0 + 1100)
    trace.append("metadata", {"event": "run_completed", "status": "success", "result": "Rain."}, timestamp=T0 + 1101)
    return trace


def replay_report(trace: Trace, question: str = "What's the weather in Lyon?") -> ReplayStatus:
    """The status of a strict replay whose agent asked another question: diverged at step 0."""
    recorded = RecordedCalls(trace)
    first = copy.deepcopy(trace.steps[0].payload)
    first["messages"][0]["content"] = question
    recorded.match(first)
    return recorded.status()
