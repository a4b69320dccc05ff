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
  A result whose canonical JSON is over ``RESULT_INLINE_MAX`` bytes (a web fetch of
  a long page) has ``resultMedia`` instead: a ``document`` media part
  (``application/json``, the SHA-256 and size of that canonical JSON), whose bytes
  are kept once in the run's media file like an image's (``cassette/media.py``),
  however often the history sends the result back. ``result_part`` makes either
  form and ``result_of`` gives the content back.
* An answer that holds them keeps its blocks in order in ``parts`` (text parts may
  carry the provider's ``citations`` or ``annotations``, a ``tool_use`` part points
  at its call in ``calls`` by ``toolCallId``); ``text`` and ``calls`` still hold all
  of the answer's text and client tool calls, which is what a reader that predates
  the extension sees. ``container`` (``expiresAt``) and ``serverToolUse`` (requests
  per tool: ``{"web_search": 2}``) are Anthropic's answer fields; ``grounding`` is a
  Gemini candidate's ``groundingMetadata``.

* Anthropic's MCP connector: ``serverName`` on a ``server_tool_call`` (the MCP
  server called), ``isError: true`` on a failed ``mcp_tool_result``. A client
  call the provider's code made (programmatic tool calling) has ``caller``
  (``Caller``: the server tool's type and its call's ``call-N``).

Each is written only when the answer carries it: an answer without server tools
is the payload, and hash, it was before the extension existed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict

from blackbox_mitm.cassette.canonical import canonical_bytes
from blackbox_mitm.cassette.extensions import MediaPart, media_part
from blackbox_mitm.cassette.media_bytes import bytes_for
from blackbox_mitm.cassette.records import JSONObject

__all__ = [
    "RESULT_INLINE_MAX",
    "AnswerPart",
    "Caller",
    "Container",
    "ServerToolCallPart",
    "ServerToolResultPart",
    "answer_parts_of",
    "builtin_tool",
    "result_of",
    "result_part",
]

#: A server tool's result larger than this (its canonical JSON, in bytes) is kept in the run's media file.
RESULT_INLINE_MAX = 64 * 1024
RESULT_MEDIA_TYPE = "application/json"


class Caller(TypedDict):
    """Who made a client tool call when not the model directly: the provider's code (programmatic tool calling)."""

    type: str  # the provider's server tool type, e.g. code_execution_20250825
    toolCallId: str  # the call-N of that server tool's call


class ServerToolCallPart(TypedDict):
    type: Literal["server_tool_call"]
    toolCallId: str
    toolName: str
    toolInput: Any  # JSON, as the provider sent it
    serverName: NotRequired[str]  # the MCP server the provider called (Anthropic's MCP connector)


class ServerToolResultPart(TypedDict):
    type: Literal["server_tool_result"]
    toolCallId: str
    kind: str  # the provider's block type: web_search_tool_result, code_execution_tool_result, ...
    result: NotRequired[Any]  # the provider's content, as data
    resultMedia: NotRequired[MediaPart]  # instead of result, when it is large: its canonical JSON in the media file
    isError: NotRequired[bool]  # an MCP connector result that failed (written only when true)


class Container(TypedDict):
    expiresAt: NotRequired[str]


#: One part of an answer kept in order: text (with ``citations`` / ``annotations``), a
#: pointer to a client call (``{"type": "tool_use", "toolCallId"}``), a server call or result.
AnswerPart = dict[str, Any]


def builtin_tool(name: str, definition: JSONObject) -> JSONObject:
    """The neutral definition of a provider-defined tool: its name, and the rest of the provider's object."""
    return {"name": name, "builtin": {k: v for k, v in definition.items() if k != "name"}}


def answer_parts_of(output: Any) -> list[JSONObject]:
    """The ordered parts a model_output keeps (empty when the answer has no server-side tools)."""
    parts = output.get("parts") if isinstance(output, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def result_part(call_id: str, kind: str, result: Any) -> ServerToolResultPart:
    """The neutral part of a server tool's result: inline, or over ``RESULT_INLINE_MAX`` by digest (bytes noted)."""
    data = canonical_bytes(result)
    if len(data) <= RESULT_INLINE_MAX:
        return {"type": "server_tool_result", "toolCallId": call_id, "kind": kind, "result": result}
    return {
        "type": "server_tool_result",
        "toolCallId": call_id,
        "kind": kind,
        "resultMedia": media_part("document", RESULT_MEDIA_TYPE, data),
    }


def result_of(part: Mapping[str, Any]) -> Any:
    """A server tool result's content: inline, or read back from the run's media (``MissingMedia`` when not kept)."""
    ref = part.get("resultMedia")
    if isinstance(ref, Mapping):
        return json.loads(bytes_for(ref))
    return part.get("result")
