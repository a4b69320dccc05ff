"""Server-side tools on the Messages API: typed tools, ``server_tool_use`` / ``*_tool_result`` blocks, citations.

What the provider ran (web search, web fetch, code execution, tool search) is
model output: the blocks are recorded as ``server_tool_call`` and
``server_tool_result`` parts (``cassette/server_parts.py``), the ``srvtoolu_``
ids mapped to ``call-N`` like a client call's, and served back in the same order
with served ids (``srvtoolu_bb<N>``). Citations on the answer's text, its
``container`` (the expiry; the id is served as our own) and
``usage.server_tool_use`` are kept with the answer.

The MCP connector is the same: the provider calls the MCP server. An
``mcp_tool_use`` block is a ``server_tool_call`` with ``serverName`` (served back
with an ``mcptoolu_bb<N>`` id), an ``mcp_tool_result`` a ``server_tool_result`` of
that kind with ``isError: true`` when it failed. The ``mcp_servers`` of a request
are tool definitions (``mcp_server_definitions``): ``mcp_server:<name>`` with the
server's object, its URL kept as the reference, WITHOUT ``authorization_token``
(a credential never enters the cassette; the agent's live request carries its own).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from blackbox_mitm.cassette.payloads import (
    AnswerPart,
    ServerToolCallPart,
    ServerToolResultPart,
    ToolCall,
    ToolDefinition,
    answer_parts_of,
    builtin_tool,
    tool_calls_of,
)
from blackbox_mitm.cassette.server_parts import result_of, result_part
from blackbox_mitm.codecs.anthropic_messages import PROVIDER, THINKING
from blackbox_mitm.codecs.base import CallIds
from blackbox_mitm.codecs.common.ids import digest
from blackbox_mitm.errors import BlackboxUnsupportedError

__all__ = [
    "answer_blocks",
    "caller_of",
    "client_tool_use",
    "container_upload_of",
    "decode_answer_parts",
    "decode_history_block",
    "decode_typed_tool",
    "is_rich_answer",
    "mcp_server_definitions",
    "served_container",
    "server_tool_use_of",
    "server_usage",
]

SERVED_PREFIX = "srvtoolu_"
MCP_PREFIX = "mcptoolu_"
CALL_BLOCKS = frozenset({"server_tool_use", "mcp_tool_use"})
MCP_SECRET_KEYS = frozenset({"authorization_token"})


def decode_typed_tool(tool: dict[str, Any], where: str) -> ToolDefinition:
    """A provider-defined tool (``{"type": "web_search_20250305", "name": "web_search", ...}``) as a neutral definition.

    An ``mcp_toolset`` (the MCP connector's tools of one server) is named ``mcp_toolset:<server name>``.
    """
    if tool.get("type") == "mcp_toolset" and isinstance(tool.get("mcp_server_name"), str):
        return cast(ToolDefinition, builtin_tool(f"mcp_toolset:{tool['mcp_server_name']}", tool))
    name = tool.get("name")
    if not isinstance(name, str):
        raise BlackboxUnsupportedError(f"{where}.name", "a typed tool needs a string name", provider=PROVIDER)
    return cast(ToolDefinition, builtin_tool(name, tool))


def mcp_server_definitions(servers: Any) -> list[ToolDefinition]:
    """``mcp_servers`` -> tool definitions ``mcp_server:<name>`` (compared), the URL kept, the authorization token dropped."""
    if not isinstance(servers, list):
        raise BlackboxUnsupportedError("mcp_servers", "expected a list of MCP server definitions", provider=PROVIDER)
    out: list[ToolDefinition] = []
    for i, server in enumerate(servers):
        if not isinstance(server, dict) or not isinstance(server.get("name"), str) or not isinstance(server.get("url"), str):
            raise BlackboxUnsupportedError(f"mcp_servers[{i}]", "an MCP server definition needs a string name and url", provider=PROVIDER)
        kept = {k: v for k, v in server.items() if k not in MCP_SECRET_KEYS and v is not None}
        out.append(cast(ToolDefinition, builtin_tool(f"mcp_server:{server['name']}", kept)))
    return out


def is_server_result(kind: str | None) -> bool:
    return isinstance(kind, str) and kind.endswith("_tool_result") and kind != "tool_result"


def _call_part(block: dict[str, Any], where: str, call_id: str) -> ServerToolCallPart:
    part: ServerToolCallPart = {
        "type": "server_tool_call",
        "toolCallId": call_id,
        "toolName": str(block["name"]),
        "toolInput": block.get("input"),
    }
    if block["type"] == "mcp_tool_use":
        part["serverName"] = str(block["server_name"])
    return part


def _check_call(block: dict[str, Any], where: str) -> None:
    if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
        raise BlackboxUnsupportedError(where, f"a {block['type']} block needs a string id and name", provider=PROVIDER)
    if block["type"] == "mcp_tool_use" and not isinstance(block.get("server_name"), str):
        raise BlackboxUnsupportedError(f"{where}.server_name", "an mcp_tool_use block needs a string server_name", provider=PROVIDER)


def _result_part(block: dict[str, Any], where: str, call_id: str) -> ServerToolResultPart:
    part = result_part(call_id, str(block["type"]), block.get("content"))
    if block["type"] == "mcp_tool_result" and block.get("is_error") is True:
        part["isError"] = True
    return part


def _check_result(block: dict[str, Any], where: str) -> str:
    native = block.get("tool_use_id")
    if not isinstance(native, str):
        raise BlackboxUnsupportedError(f"{where}.tool_use_id", f"a {block['type']} block needs a string tool_use_id", provider=PROVIDER)
    return native


def decode_history_block(block: dict[str, Any], kind: str, where: str, ids: CallIds) -> ServerToolCallPart | ServerToolResultPart:
    """A server block the agent sent back in its history (a server tool's or the MCP connector's call or result)."""
    if kind in CALL_BLOCKS:
        _check_call(block, where)
        return _call_part(block, where, ids.neutral(block["id"], block["name"]))
    if is_server_result(kind):
        return _result_part(block, where, ids.neutral(_check_result(block, where)))
    raise BlackboxUnsupportedError(where, f"a server block of type {kind!r} Blackbox does not read", provider=PROVIDER)


def is_rich_answer(content: list[Any]) -> bool:
    """An answer that holds server blocks or citations: it is recorded block by block (``parts``)."""
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in CALL_BLOCKS or kind == "container_upload" or is_server_result(kind) or (kind == "text" and block.get("citations")):
            return True
    return False


def decode_answer_parts(content: list[dict[str, Any]], ids: CallIds, new_call: Any) -> tuple[str, list[ToolCall], list[AnswerPart]]:
    """(all the text, the client calls, the blocks in order) of an answer with server blocks.

    Checked first, then ids handed out in block order (nothing is assigned when a block is refused).
    """
    for i, block in enumerate(content):
        kind = block["type"]
        if kind in CALL_BLOCKS:
            _check_call(block, f"content[{i}]")
        elif is_server_result(kind):
            _check_result(block, f"content[{i}]")
        elif kind == "container_upload":
            container_upload_of(block, f"content[{i}]")
        elif kind == "text" and block.get("citations") is not None and not isinstance(block["citations"], list):
            raise BlackboxUnsupportedError(f"content[{i}].citations", "citations must be a list", provider=PROVIDER)
    texts: list[str] = []
    calls: list[ToolCall] = []
    parts: list[AnswerPart] = []
    for i, block in enumerate(content):
        kind = block["type"]
        if kind == "text":
            part: AnswerPart = {"type": "text", "text": str(block.get("text", ""))}
            if block.get("citations"):
                part["citations"] = block["citations"]
            texts.append(part["text"])
            parts.append(part)
        elif kind == "tool_use":
            call = new_call(block, block["name"], block.get("input"), ids)
            calls.append(call)
            parts.append({"type": "tool_use", "toolCallId": call["toolCallId"]})
        elif kind == "container_upload":
            parts.append(dict(container_upload_of(block, f"content[{i}]")))
        elif kind in CALL_BLOCKS:
            parts.append(dict(_call_part(block, f"content[{i}]", ids.assign(block["id"], block["name"]))))
        elif kind not in THINKING:
            parts.append(dict(_result_part(block, f"content[{i}]", ids.neutral(block["tool_use_id"]))))
    return "".join(texts), calls, parts


def answer_blocks(output: Mapping[str, Any], ids: CallIds) -> list[dict[str, Any]]:
    """The recorded parts as Messages blocks, in order, with served ids."""
    calls = {str(c.get("toolCallId")): c for c in tool_calls_of(output)}
    blocks: list[dict[str, Any]] = []
    for part in answer_parts_of(output):
        kind = part.get("type")
        call_id = str(part.get("toolCallId"))
        if kind == "text":
            block: dict[str, Any] = {"type": "text", "text": str(part.get("text", ""))}
            if part.get("citations"):
                block["citations"] = part["citations"]
            blocks.append(block)
        elif kind == "tool_use" and call_id in calls:
            call = calls[call_id]
            blocks.append(client_tool_use(call, ids))
        elif kind == "container_upload":
            blocks.append({"type": "container_upload", "file_id": part.get("file")})
        elif kind == "server_tool_call" and "serverName" in part:
            served = ids.served_id(call_id, MCP_PREFIX)
            blocks.append(
                {
                    "type": "mcp_tool_use",
                    "id": served,
                    "name": part.get("toolName"),
                    "server_name": part["serverName"],
                    "input": part.get("toolInput"),
                }
            )
        elif kind == "server_tool_call":
            served = ids.served_id(call_id, SERVED_PREFIX)
            blocks.append({"type": "server_tool_use", "id": served, "name": part.get("toolName"), "input": part.get("toolInput")})
        elif kind == "server_tool_result" and part.get("kind") == "mcp_tool_result":
            served = ids.served_id(call_id, MCP_PREFIX)
            block = {"type": "mcp_tool_result", "tool_use_id": served, "is_error": part.get("isError") is True}
            blocks.append({**block, "content": result_of(part)})
        elif kind == "server_tool_result":
            served = ids.served_id(call_id, SERVED_PREFIX)
            blocks.append({"type": str(part.get("kind")), "tool_use_id": served, "content": result_of(part)})
    return blocks


def container_upload_of(block: dict[str, Any], where: str) -> dict[str, str]:
    """A ``container_upload`` block (a file the provider's container reads) -> ``{"type": "container_upload", "file"}``:
    the file id is the reference, as a ``file`` media source's is (Blackbox never sees the bytes)."""
    if not isinstance(block.get("file_id"), str):
        raise BlackboxUnsupportedError(f"{where}.file_id", "a container_upload block needs a string file_id", provider=PROVIDER)
    return {"type": "container_upload", "file": block["file_id"]}


def caller_of(block: dict[str, Any], ids: CallIds) -> dict[str, str] | None:
    """A ``tool_use``'s ``caller`` when the provider's code made the call (programmatic tool calling), neutral:
    ``{"type", "toolCallId"}``, the server tool's id mapped to its call-N. None for a direct call (no caller)."""
    caller = block.get("caller")
    if not isinstance(caller, dict) or caller.get("type") in (None, "direct"):
        return None
    if not isinstance(caller.get("type"), str) or not isinstance(caller.get("tool_id"), str):
        raise BlackboxUnsupportedError("caller", "a tool_use's caller needs a string type and tool_id", provider=PROVIDER)
    return {"type": caller["type"], "toolCallId": ids.neutral(caller["tool_id"])}


def client_tool_use(call: Mapping[str, Any], ids: CallIds) -> dict[str, Any]:
    """A recorded client tool call as a ``tool_use`` block with a served id (and its caller, served, when it has one)."""
    call_id = str(call.get("toolCallId"))
    block = {"type": "tool_use", "id": ids.served_id(call_id, "toolu_"), "name": call.get("toolName"), "input": call.get("toolInput")}
    caller = call.get("caller")
    if isinstance(caller, dict):
        block["caller"] = {"type": caller.get("type"), "tool_id": ids.served_id(str(caller.get("toolCallId")), SERVED_PREFIX)}
    return block


def server_tool_use_of(usage: Any) -> dict[str, int] | None:
    """``usage.server_tool_use`` (``{"web_search_requests": 2}``) -> ``{"web_search": 2}``; None when all are 0."""
    counts = usage.get("server_tool_use") if isinstance(usage, dict) else None
    if not isinstance(counts, dict):
        return None
    out = {
        key.removesuffix("_requests"): n
        for key, n in counts.items()
        if isinstance(key, str) and isinstance(n, int) and not isinstance(n, bool) and n > 0
    }
    return out or None


def server_usage(output: Mapping[str, Any]) -> dict[str, int] | None:
    """The recorded ``serverToolUse`` as ``usage.server_tool_use`` (the SDKs' model needs both counts); None when none."""
    counts = output.get("serverToolUse")
    if not isinstance(counts, dict) or not counts:
        return None
    return {"web_search_requests": 0, "web_fetch_requests": 0, **{f"{key}_requests": n for key, n in counts.items()}}


def served_container(output: Mapping[str, Any], message_id: str) -> dict[str, Any] | None:
    """The answer's container with an id of our own (the provider's never enters the cassette)."""
    container = output.get("container")
    if not isinstance(container, dict):
        return None
    return {"id": f"container_bb{digest(message_id, 20)}", "expires_at": container.get("expiresAt", "")}
