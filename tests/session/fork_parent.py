"""The parent run of the fork tests: the weather agent's recording, built in memory (no proxy)."""

from __future__ import annotations

from pathlib import Path

from blackbox_mitm.cassette.store import save_trace
from blackbox_mitm.cassette.trace import Trace

T0 = 1_732_981_200_000
QUESTION = "What's the weather in Paris?"
TOOLS = [{"name": "get_weather", "description": "Weather by city.", "inputSchema": {"type": "object", "properties": {}}}]
CALL = {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}}
SUN = {"forecast": "sun", "celsius": 24}


def weather_parent() -> Trace:
    trace = Trace.new("weather-1", created_at=T0)
    trace.append("model_input", {"messages": [{"role": "user", "content": QUESTION}], "tools": TOOLS}, timestamp=T0 + 1)
    trace.append("model_output", {"type": "tool_calls", "calls": [dict(CALL)]}, timestamp=T0 + 2)
    trace.append("tool_call", dict(CALL), timestamp=T0 + 3)
    trace.append("tool_result", {"toolCallId": "call-0", "toolName": "get_weather", "result": '{"forecast":"cloudy"}'}, timestamp=T0 + 4)
    history = [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": [{"type": "tool_use", **CALL}]},
        {"role": "user", "content": [{"type": "tool_result", "toolCallId": "call-0", "toolName": "get_weather", "result": "cloudy"}]},
    ]
    trace.append("model_input", {"messages": history, "tools": TOOLS}, timestamp=T0 + 5)
    trace.append("model_output", {"type": "final_answer", "text": "Cloudy in Paris."}, timestamp=T0 + 6)
    trace.append("metadata", {"event": "run_completed", "status": "success", "result": "Cloudy in Paris."}, timestamp=T0 + 7)
    return trace


def weather_cassette(path: Path) -> Path:
    """The same run saved as a (verifying) cassette file."""
    return save_trace(weather_parent(), path)
