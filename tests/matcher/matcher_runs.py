"""Recorded runs for the matcher tests, written step by step the way the recorder writes them.

Imported by the test modules (pytest puts this folder on sys.path); the name is
distinct so that it cannot shadow another folder's helpers.
"""

from __future__ import annotations

import copy
from typing import Any, cast

from blackbox_mitm.cassette import Trace
from blackbox_mitm.cassette.payloads import ModelInput, ToolDefinition

WEATHER_TOOL: ToolDefinition = {
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def first_request(city: str = "Paris") -> ModelInput:
    """Step 0 of weather-7: two messages, the question in message 1."""
    return {
        "model": "gpt-4o-mini",
        "systemPrompt": "You are a weather assistant.",
        "messages": [
            {"role": "assistant", "content": "Hello! Which city?"},
            {"role": "user", "content": f"What's the weather in {city}?"},
        ],
        "tools": [copy.deepcopy(WEATHER_TOOL)],
        "params": {"temperature": 0.2, "maxTokens": 256},
    }


def second_request(result: Any = None) -> ModelInput:
    """Step 4 of weather-7: the tool round carried as tool_use / tool_result parts."""
    req = first_request()
    req["messages"] += [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "toolCallId": "call-0",
                    "toolName": "get_weather",
                    "result": {"forecast": "rain", "celsius": 12} if result is None else result,
                }
            ],
        },
    ]
    return req


def weather_trace() -> Trace:
    """weather-7: model call (0, 1), tool round (2, 3), model call (4, 5), run_completed (6)."""
    t = Trace.new("weather-7", created_at=1_000)
    call = {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}}
    t.append("model_input", first_request(), timestamp=1_001)
    t.append("model_output", {"type": "tool_calls", "calls": [call]}, timestamp=1_002)
    t.append("tool_call", dict(call), timestamp=1_003)
    t.append(
        "tool_result", {"toolCallId": "call-0", "toolName": "get_weather", "result": {"forecast": "rain", "celsius": 12}}, timestamp=1_004
    )
    t.append("model_input", second_request(), timestamp=1_005)
    t.append("model_output", {"type": "final_answer", "text": "It is raining in Paris, 12°C."}, timestamp=1_006)
    t.append("metadata", {"event": "run_completed", "status": "success", "result": "It is raining in Paris, 12°C."}, timestamp=1_007)
    return t


def plain_request(text: str) -> ModelInput:
    return {"model": "m", "messages": [{"role": "user", "content": text}], "tools": []}


def calls_trace(inputs: list[ModelInput], run_id: str = "calls-1") -> Trace:
    """One model_input / model_output pair per input; output i answers ``answer <i>``."""
    t = Trace.new(run_id, created_at=0)
    for i, model_input in enumerate(inputs):
        t.append("model_input", model_input, timestamp=2 * i + 1)
        t.append("model_output", {"type": "final_answer", "text": f"answer {i}"}, timestamp=2 * i + 2)
    return t


def json_of(request: ModelInput) -> dict[str, Any]:
    """The same request, typed as the plain JSON it is: for a test that edits it in place (any key, any depth)."""
    return cast(dict[str, Any], request)
