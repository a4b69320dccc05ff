"""Readers for step payloads: the spec's ``toolCallsOf()`` and terminal-event helpers.

``model_output`` has two tool-call shapes — the built-in loop's single
``{"type": "tool_call", ...}`` and recorders' ``{"type": "tool_calls", "calls": [...]}``;
readers go through ``tool_calls_of`` and never branch on the shape themselves.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TERMINAL_EVENTS", "is_terminal", "json_kind", "output_text", "tool_calls_of"]

TERMINAL_EVENTS = ("run_completed", "run_failed")


def tool_calls_of(output: Any) -> list[dict[str, Any]]:
    """Every tool call a model_output payload requested, in order (empty for a final answer)."""
    if not isinstance(output, dict):
        return []
    kind = output.get("type")
    if kind == "tool_call":
        return [{"toolCallId": output.get("toolCallId"), "toolName": output.get("toolName"), "toolInput": output.get("toolInput")}]
    if kind == "tool_calls":
        calls = output.get("calls")
        return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
    return []


def output_text(output: Any) -> str | None:
    """The text a model_output carries: the final answer, or the narration beside tool calls."""
    if isinstance(output, dict):
        text = output.get("text")
        if isinstance(text, str):
            return text
    return None


def is_terminal(payload: Any) -> bool:
    return isinstance(payload, dict) and payload.get("event") in TERMINAL_EVENTS


def json_kind(v: Any) -> str:
    """A JSON value's kind in words, for error messages: "a string", "an object", "null", ..."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, (list, tuple)):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__
