"""Typed reads of a decoded request's message parts and of a model_output, for the codec tests.

A neutral message's ``content`` is a string or a list of parts of several kinds, and a
model_output is one of three shapes: a test that knows which it has says so here, and the
helper checks it (an assert) before handing back the narrower type. The name is distinct so
that it cannot shadow another folder's helpers (pytest puts this folder on sys.path).
"""

from __future__ import annotations

from blackbox_mitm.cassette.payloads import (
    MessagePart,
    ModelOutput,
    ServerToolCallPart,
    ToolCall,
    ToolResultPart,
    ToolUsePart,
)


def listed(content: str | list[MessagePart]) -> list[MessagePart]:
    """A message's content that the test expects as parts, not a plain string."""
    assert isinstance(content, list), content
    return content


def tool_use(part: MessagePart) -> ToolUsePart:
    assert part["type"] == "tool_use", part
    return part


def tool_result(part: MessagePart) -> ToolResultPart:
    assert part["type"] == "tool_result", part
    return part


def server_tool_call(part: MessagePart) -> ServerToolCallPart:
    assert part["type"] == "server_tool_call", part
    return part


def output_calls(output: ModelOutput) -> list[ToolCall]:
    """A ``tool_calls`` output's calls."""
    assert output["type"] == "tool_calls", output
    return output["calls"]
