"""The Responses API's hosted ``mcp`` tool: what OpenAI ran on the MCP server is model output; approvals are tool rounds.

* The tool (``{"type": "mcp", server_label, server_url | connector_id, headers?,
  authorization?, allowed_tools, require_approval}``) is a provider-defined tool named
  ``mcp:<server_label>``. Its ``authorization`` is dropped and its ``headers`` are kept
  by name only (``["X-Api-Key"]``): credentials never enter a cassette, and a replay
  compares the rest.
* ``mcp_list_tools`` and ``mcp_call`` items (the provider listed the server's tools,
  called one and got its output) are ``server_tool_call`` parts like a web search's
  (``hosted_tools``); an ``mcp_call``'s ``approval_request_id`` is the approval's
  ``call-N``.
* An ``mcp_approval_request`` (the provider asks the client before calling) is a
  neutral tool call named after the server's tool (``mcp:<server_label>``) whose
  ``toolInput`` is ``{"name", "arguments"}`` (the arguments as the JSON text sent);
  its ``mcpr_…`` id maps to ``call-N`` and a replay serves ``mcpr_bb<N>``. The
  client's ``mcp_approval_response`` is its tool result: ``{"approve", "reason"?}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from blackbox_mitm.cassette.payloads import ToolDefinition, builtin_tool
from blackbox_mitm.codecs.base import CallIds
from blackbox_mitm.codecs.openai_responses import REFUSALS

__all__ = ["ANSWER", "APPROVAL", "TOOL", "answer_result", "approval_input", "approval_item", "decode_tool", "tool_name"]

TOOL: Final = "mcp"
APPROVAL: Final = "mcp_approval_request"
ANSWER: Final = "mcp_approval_response"
_SECRET = ("authorization", "headers")


def tool_name(label: Any) -> str:
    return f"mcp:{label}"


def decode_tool(tool: Mapping[str, Any], where: str) -> ToolDefinition:
    """An mcp tool: named by its server label; authorization dropped, headers by name only."""
    label = tool.get("server_label")
    if not isinstance(label, str) or not label:
        REFUSALS.malformed(f"{where}.server_label", "an mcp tool without a server_label")
    kept: dict[str, Any] = {k: v for k, v in tool.items() if k not in _SECRET}
    headers = tool.get("headers")
    if isinstance(headers, dict) and headers:
        kept["headers"] = sorted(str(name) for name in headers)
    return builtin_tool(tool_name(label), kept)  # type: ignore[return-value]


def approval_input(item: Mapping[str, Any], where: str) -> tuple[str, str, dict[str, Any]]:
    """(native id, neutral tool name, toolInput) of an mcp_approval_request."""
    native, label, name = item.get("id"), item.get("server_label"), item.get("name")
    if not isinstance(native, str) or not native:
        REFUSALS.malformed(f"{where}.id", "an mcp_approval_request without an id")
    if not isinstance(label, str) or not isinstance(name, str):
        REFUSALS.malformed(f"{where}.name", "an mcp_approval_request without a server_label and name")
    arguments = item.get("arguments")
    return native, tool_name(label), {"name": name, "arguments": arguments if isinstance(arguments, str) else ""}


def approval_item(served: str, tool: str, tool_input: Mapping[str, Any]) -> dict[str, Any]:
    """The mcp_approval_request a replay serves, with our id."""
    label = tool.removeprefix("mcp:")
    item = {"id": served, "type": APPROVAL, "server_label": label, "name": tool_input.get("name"), "arguments": tool_input.get("arguments")}
    return item


def answer_result(item: Mapping[str, Any], where: str) -> tuple[str, dict[str, Any]]:
    """(native approval id, result) of an mcp_approval_response."""
    native = item.get("approval_request_id")
    if not isinstance(native, str) or not native:
        REFUSALS.malformed(f"{where}.approval_request_id", "an mcp_approval_response without an approval_request_id")
    if not isinstance(item.get("approve"), bool):
        REFUSALS.malformed(f"{where}.approve", "an mcp_approval_response without a boolean approve")
    result: dict[str, Any] = {"approve": item["approve"]}
    if isinstance(item.get("reason"), str):
        result["reason"] = item["reason"]
    return native, result


def neutral_refs(rest: dict[str, Any], ids: CallIds) -> dict[str, Any]:
    """An mcp_call's ``approval_request_id`` as the approval's call-N (recorded side)."""
    ref = rest.get("approval_request_id")
    if isinstance(ref, str) and ref:
        rest["approval_request_id"] = ids.neutral(ref)
    return rest


def served_refs(given: dict[str, Any], ids: CallIds) -> dict[str, Any]:
    """An mcp_call's ``approval_request_id`` as the id the replay served the approval with."""
    ref = given.get("approval_request_id")
    if isinstance(ref, str) and ref:
        return {**given, "approval_request_id": ids.served_id(ref, "mcpr_")}
    return given
