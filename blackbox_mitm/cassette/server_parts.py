"""Blackbox's extension for server-side tools (docs/cassette.md): what the provider ran is part of the answer.

A server-side tool (Anthropic's web search, web fetch and code execution, the
Responses API's hosted tools, Gemini's Google Search grounding) runs at the
provider, inside one model call: its call and its result come back in the
answer, and the agent sends them back in its history. They are model output, so
the cassette keeps them and a replay gives them back; nothing runs again.

* A **tool definition** of a provider-defined tool is ``{"name", "builtin"}``:
  ``builtin`` holds the provider's tool object without its name (its ``type`` and
  options such as ``max_uses``), compared as a whole; it has no ``inputSchema``.
* ``server_tool_call`` (a message or answer part): ``toolCallId`` (a ``call-N``,
  the provider's id mapped like a client tool call's), ``toolName``, ``toolInput``.
* ``server_tool_result``: ``toolCallId``, ``kind`` (the provider's block type, such
  as ``web_search_tool_result``) and ``result`` (the provider's content, as data).
* An answer that holds them keeps its blocks in order in ``parts`` (text parts may
  carry the provider's ``citations`` or ``annotations``, a ``tool_use`` part points
  at its call in ``calls`` by ``toolCallId``); ``text`` and ``calls`` still hold all
  of the answer's text and client tool calls, which is what a reader that predates
  the extension sees. ``container`` (``expiresAt``) and ``serverToolUse`` (requests
  per tool: ``{"web_search": 2}``) are Anthropic's answer fields; ``grounding`` is a
  Gemini candidate's ``groundingMetadata``.

Each is written only when the answer carries it: an answer without server tools
is the payload, and hash, it was before the extension existed.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "AnswerPart",
    "Container",
    "ServerToolCallPart",
    "ServerToolResultPart",
    "answer_parts_of",
    "builtin_tool",
]


class ServerToolCallPart(TypedDict):
    type: Literal["server_tool_call"]
    toolCallId: str
    toolName: str
    toolInput: Any  # JSON, as the provider sent it


class ServerToolResultPart(TypedDict):
    type: Literal["server_tool_result"]
    toolCallId: str
    kind: str  # the provider's block type: web_search_tool_result, code_execution_tool_result, ...
    result: Any  # the provider's content, as data


class Container(TypedDict):
    expiresAt: NotRequired[str]


#: One part of an answer kept in order: text (with ``citations`` / ``annotations``), a
#: pointer to a client call (``{"type": "tool_use", "toolCallId"}``), a server call or result.
AnswerPart = dict[str, Any]


def builtin_tool(name: str, definition: dict[str, Any]) -> dict[str, Any]:
    """The neutral definition of a provider-defined tool: its name, and the rest of the provider's object."""
    return {"name": name, "builtin": {k: v for k, v in definition.items() if k != "name"}}


def answer_parts_of(output: Any) -> list[dict[str, Any]]:
    """The ordered parts a model_output keeps (empty when the answer has no server-side tools)."""
    parts = output.get("parts") if isinstance(output, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
