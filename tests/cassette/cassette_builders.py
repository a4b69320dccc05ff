"""Builders shared by the cassette tests: a small recorded weather run, and raw-file edits."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from blackbox_mitm.cassette import Trace, save_trace

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASSETTES = FIXTURES / "cassettes"
T0 = 1_732_981_200_000

QUESTION = "What's the weather in Paris?"
TOOLS = [
    {
        "name": "get_weather",
        "description": "Weather by city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]
CALL = {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}}


def weather_trace(
    trace_id: str = "weather-1",
    *,
    result: Any = None,
    answer: str = "It is raining in Paris, 12 °C.",
    t0: int | float = T0,
) -> Trace:
    """model_input, model_output (tool call), tool_call, tool_result, model_input, final answer, run_completed."""
    result = {"forecast": "rain", "celsius": 12} if result is None else result
    call = copy.deepcopy(CALL)  # every payload its own objects: tests edit them
    trace = Trace.new(trace_id, created_at=t0)
    trace.append(
        "model_input", {"messages": [{"role": "user", "content": QUESTION}], "tools": TOOLS, "model": "gpt-4o-mini"}, timestamp=t0 + 10
    )
    trace.append("model_output", {"type": "tool_calls", "calls": [call]}, timestamp=t0 + 410)
    trace.append("tool_call", copy.deepcopy(call), timestamp=t0 + 411)
    trace.append("tool_result", {"toolCallId": "call-0", "toolName": "get_weather", "result": result}, timestamp=t0 + 520)
    history = [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": [{"type": "tool_use", **copy.deepcopy(call)}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather", "result": copy.deepcopy(result)}],
        },
    ]
    trace.append("model_input", {"messages": history, "tools": TOOLS, "model": "gpt-4o-mini"}, timestamp=t0 + 521)
    trace.append("model_output", {"type": "final_answer", "text": answer}, timestamp=t0 + 1100)
    trace.append("metadata", {"event": "run_completed", "status": "success", "result": answer}, timestamp=t0 + 1101)
    return trace


def save(trace: Trace, path: Path) -> Path:
    save_trace(trace, path)
    return path


def edit_file(path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """Change a cassette's JSON in place, without recomputing anything (tampering)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path
