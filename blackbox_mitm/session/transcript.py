"""Tool results in call order: the spec's rule for a parallel tool round, applied to any provider's transcript.

A parallel round is "one assistant turn holding every tool_use part …, then one
user turn holding every tool_result part, in call order" (spec: Structured
Transcript). An agent that runs its tools concurrently sends the results in
the order they *finished*, which changes from run to run. ``order_tool_results``
puts the tool_result parts of each user turn back in the order of the
tool_use parts of the assistant turn they answer, so the recording stores them
in call order and strict comparison compares them in that order.

The rule, on a neutral model_input (``{"messages": [...]}``, parts as the
codecs write them):

* a turn's tool_result parts are sorted by the position of their ``toolCallId``
  among the tool_use parts of the nearest earlier assistant turn that has any;
* only the slots that hold tool_result parts are refilled: text and other parts
  keep their places;
* a result whose id that turn did not call keeps its relative place after the
  ones it did (a stable sort); nothing is dropped or added.

Pure and provider-neutral; the input is never modified, and a transcript that
is already in call order is returned as the same object.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["order_tool_results"]


def _parts(message: Any) -> list[Any] | None:
    if not isinstance(message, Mapping):
        return None
    content = message.get("content")
    return content if isinstance(content, list) else None


def _is(part: Any, kind: str) -> bool:
    return isinstance(part, Mapping) and part.get("type") == kind


def _id(part: Mapping[str, Any]) -> str | None:
    call_id = part.get("toolCallId")
    return call_id if isinstance(call_id, str) else None


def _ordered(parts: list[Any], calls: Mapping[str | None, int]) -> list[Any] | None:
    """The parts with their tool_result slots refilled in call order; None when nothing moves."""
    slots = [i for i, p in enumerate(parts) if _is(p, "tool_result")]
    if len(slots) < 2:
        return None
    results = [parts[i] for i in slots]
    unknown = len(calls)
    ranked = sorted(results, key=lambda p: calls.get(_id(p), unknown))
    if all(a is b for a, b in zip(ranked, results, strict=True)):
        return None
    out = list(parts)
    for slot, part in zip(slots, ranked, strict=True):
        out[slot] = part
    return out


def order_tool_results(model_input: Mapping[str, Any]) -> Mapping[str, Any]:
    """``model_input`` with each turn's tool results in the order of the calls they answer (see the module docstring)."""
    messages = model_input.get("messages")
    if not isinstance(messages, Sequence) or isinstance(messages, str):
        return model_input
    calls: dict[str | None, int] = {}
    changed: dict[int, dict[str, Any]] = {}
    for index, message in enumerate(messages):
        parts = _parts(message)
        if parts is None:
            continue
        uses = [_id(p) for p in parts if _is(p, "tool_use")]
        if uses and isinstance(message, Mapping) and message.get("role") == "assistant":
            calls = {call_id: n for n, call_id in reversed(list(enumerate(uses))) if call_id is not None}
            continue
        ordered = _ordered(parts, calls)
        if ordered is not None:
            changed[index] = {**message, "content": ordered}
    if not changed:
        return model_input
    out = dict(model_input)
    out["messages"] = [changed.get(i, m) for i, m in enumerate(messages)]
    return out
