"""Hosted tools on the Responses API: ``web_search``, ``file_search``, ``code_interpreter``, ``image_generation``.

What OpenAI ran is model output: a ``web_search_call`` (``file_search_call``,
``code_interpreter_call``, ``image_generation_call``) item is recorded as a
``server_tool_call`` part (``cassette/server_parts.py``) whose ``toolName`` is the
item's type and whose ``toolInput`` is the item without its id and type (the
action, status, code, outputs, results...). Its ``ws_…`` id maps to ``call-N``
like a function call's; a replay serves the item back with an id of our own
(``ws_bb<N>``) at its place among the answer's messages and calls, and
``annotations`` (url, file and container file citations, any type, as data) and
``logprobs`` on output text with it: both are part of the answer, kept on its text
part (the logprobs as ``tokenLogprobs``), served back and not compared. In the history the
agent sends back, the same items are the same parts. A ``computer_call`` is an
ordinary tool call among them (the ``computer`` module); the ``mcp`` tool's
``mcp_list_tools`` and ``mcp_call`` items are hosted calls and its
``mcp_approval_request`` a tool call (the ``mcp`` module).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from blackbox_mitm.cassette.payloads import (
    AnswerPart,
    ModelOutput,
    ServerToolCallPart,
    ToolCall,
    ToolDefinition,
    answer_parts_of,
    builtin_tool,
    tool_calls_of,
)
from blackbox_mitm.codecs.base import STOP_LENGTH, CallIds
from blackbox_mitm.codecs.openai_responses import REFUSALS, mcp

__all__ = [
    "SERVED_ITEMS",
    "SERVED_TOOLS",
    "decode_hosted_tool",
    "history_part",
    "is_rich",
    "rich_items",
    "rich_output",
]

#: Hosted tools recorded as provider-defined tool definitions.
SERVED_TOOLS = frozenset(
    {
        "web_search",
        "web_search_preview",
        "web_search_preview_2025_03_11",
        "web_search_2025_08_26",
        "file_search",
        "code_interpreter",
        "image_generation",
    }
)
#: Their call items, and the prefix of the ids a replay gives them.
SERVED_ITEMS: dict[str, str] = {
    "web_search_call": "ws_",
    "file_search_call": "fs_",
    "code_interpreter_call": "ci_",
    "image_generation_call": "ig_",
    "mcp_list_tools": "mcpl_",  # the mcp tool (the mcp module)
    "mcp_call": "mcp_",
}


def decode_hosted_tool(tool: dict[str, Any]) -> ToolDefinition:
    """A hosted tool (``{"type": "web_search", ...}``): named by its type, its options kept."""
    return cast(ToolDefinition, builtin_tool(str(tool["type"]), tool))


def _part(item: dict[str, Any], call_id: str, ids: CallIds) -> ServerToolCallPart:
    rest = mcp.neutral_refs({k: v for k, v in item.items() if k not in ("id", "type")}, ids)
    return {"type": "server_tool_call", "toolCallId": call_id, "toolName": str(item["type"]), "toolInput": rest}


def history_part(item: dict[str, Any], ids: CallIds) -> ServerToolCallPart:
    """A hosted call item the agent sent back; an item without an id gets the run's next call-N."""
    native = item.get("id")
    call_id = ids.neutral(native, str(item["type"])) if isinstance(native, str) and native else ids.assign(None, str(item["type"]))
    return _part(item, call_id, ids)


def is_rich(items: list[Any]) -> bool:
    """An answer with hosted call items, or text with annotations or logprobs: it is recorded item by item (``parts``)."""
    for item in items:
        kind = item.get("type") if isinstance(item, dict) else None
        if not isinstance(kind, str):
            continue  # the item loop names it
        if kind in SERVED_ITEMS:
            return True
        content = item.get("content") if kind == "message" else None
        if isinstance(content, list) and any(isinstance(p, dict) and (p.get("annotations") or p.get("logprobs")) for p in content):
            return True
    return False


def rich_output(
    items: list[dict[str, Any]], ids: CallIds, length: bool, call_of: Callable[[dict[str, Any], str, str], tuple[str | None, str, Any]]
) -> ModelOutput:
    """The answer's messages, calls and hosted calls in order; ids handed out once every item was read."""
    read: list[tuple[str, dict[str, Any], Any]] = []
    for k, item in enumerate(items):
        at, kind = f"output[{k}]", item["type"]
        if kind == "message":
            read.append(("text", item, _annotated_text(item, at)))
        elif kind in ("function_call", "custom_tool_call", "computer_call", mcp.APPROVAL):
            read.append(("call", item, call_of(item, kind, at)))
        elif kind in SERVED_ITEMS:
            read.append(("server", item, None))
    texts: list[str] = []
    calls: list[ToolCall] = []
    parts: list[AnswerPart] = []
    for what, item, value in read:
        if what == "text":
            texts.append(value["text"])
            parts.append(value)
        elif what == "call":
            native, name, args = value
            call: ToolCall = {"toolCallId": ids.assign(native, name), "toolName": name, "toolInput": args}
            calls.append(call)
            parts.append({"type": "tool_use", "toolCallId": call["toolCallId"]})
        else:
            native = item.get("id")
            parts.append(dict(_part(item, ids.assign(native if isinstance(native, str) else None, str(item["type"])), ids)))
    text = "".join(texts)
    out: ModelOutput = {"type": "final_answer", "text": text}
    if calls:
        out = {"type": "tool_calls", "calls": calls}
        if text:
            out["text"] = text
    out["parts"] = parts
    if length:
        out["stop"] = STOP_LENGTH
    return out


def _annotated_text(item: dict[str, Any], at: str) -> AnswerPart:
    content = item.get("content")
    if not isinstance(content, list) or len(content) != 1 or not isinstance(content[0], dict):
        REFUSALS.refuse("openai.responses.output_layout", f"{at}.content")
    part = content[0]
    if part.get("type") != "output_text" or not isinstance(part.get("text"), str):
        REFUSALS.refuse("openai.responses.output_layout", f"{at}.content[0]")
    out: AnswerPart = {"type": "text", "text": part["text"]}
    if part.get("annotations"):  # the provider's, as data (not compared)
        out["annotations"] = part["annotations"]
    if part.get("logprobs"):  # under a neutral name: ``logprobs`` is a provider response field verify flags
        out["tokenLogprobs"] = part["logprobs"]
    return out


def rich_items(
    output: Mapping[str, Any], ids: CallIds, message_id: Callable[[int], str], call_item: Callable[[dict[str, Any]], dict[str, Any]]
) -> list[dict[str, Any]]:
    """The recorded parts as output items, in order, with our ids."""
    calls = {str(c.get("toolCallId")): c for c in tool_calls_of(output)}
    status = "incomplete" if output.get("stop") == STOP_LENGTH else "completed"
    items: list[dict[str, Any]] = []
    messages = 0
    for part in answer_parts_of(output):
        kind, call_id = part.get("type"), str(part.get("toolCallId"))
        if kind == "text":
            text = {
                "type": "output_text",
                "annotations": part.get("annotations") or [],
                "logprobs": part.get("tokenLogprobs") or [],
                "text": str(part.get("text", "")),
            }
            items.append({"id": message_id(messages), "type": "message", "status": status, "content": [text], "role": "assistant"})
            messages += 1
        elif kind == "tool_use" and call_id in calls:
            items.append(call_item(calls[call_id]))
        elif kind == "server_tool_call":
            name = str(part.get("toolName"))
            given = part.get("toolInput")
            served = ids.served_id(call_id, SERVED_ITEMS.get(name, "ws_"))
            items.append({"id": served, "type": name, **(mcp.served_refs(given, ids) if isinstance(given, dict) else {})})
    return items
