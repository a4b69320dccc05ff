"""What the Responses request and answer sides share: tools, the rules of the transcript, and the run's response store.

The transcript itself (items -> neutral messages) is built at the bottom of ``request.py``, by these rules;
``response_head`` is the head of every Response served, plain or streamed, with the request's settings echoed.

The rules, so that the same conversation gives the same ``model_input`` whether
it was sent whole, continued with ``previous_response_id``, over HTTP or over a
WebSocket:

* Items are read in order. Leading ``system``/``developer`` messages (before any
  other message or call) join ``instructions`` in ``systemPrompt``; later ones stay
  in ``messages`` as role ``"system"``. A system or developer message with images,
  files or audio (the API takes the same input parts there as in a user message) is a
  ``"system"`` message of text and media parts in ``messages``, never in the
  ``systemPrompt`` string, and ends the leading run. ``reasoning`` items are dropped (like
  thinking blocks: not stored, not compared), and so are ``configuration_update``
  items (Codex restates the request's own settings in one); ``additional_tools``
  items add their tools after the request's ``tools``. Codex's ``compaction_trigger``
  and ``compaction`` items are parts of their own (the ``compaction`` module).
* An assistant message's ``refusal`` parts are ``{"type": "refusal", "text"}`` parts
  of its turn, in order with its text; input media there is refused (the API takes
  only ``output_text`` and ``refusal`` parts in an assistant message).
* Consecutive assistant-side items (assistant messages, ``function_call``,
  ``custom_tool_call``) are one assistant turn: its text, then its ``tool_use``
  parts in order, as the chat codec writes an assistant message with tool calls.
  Consecutive ``function_call_output`` / ``custom_tool_call_output`` items are one
  user turn of ``tool_result`` parts. Text parts are joined with ``""``; a turn
  left with text alone is a string.
* A function call's ``toolInput`` is its parsed ``arguments``; a custom (freeform)
  call's is its ``input`` string. A custom tool's ``inputSchema`` is ``{"type":
  "string", "format": F}``, F its ``format`` (``{"type": "text"}`` when absent). A tool
  inside a ``namespace`` tool is named ``"<namespace>.<name>"`` (a dot cannot occur
  in a tool name); the namespace's own description is not compared.
* The store (``ids.codec_state("openai-responses")``): response id -> the request's
  own input items, its parent response id and the response's output items. A
  ``previous_response_id`` is resolved by walking parents, so each entry holds only
  what its request added. Nothing in it is written to a cassette.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from blackbox_mitm.cassette.payloads import (
    ToolDefinition,
    tool_definition,
)
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.codecs.openai_responses import EMPTY_SCHEMA, NAME, PROVIDER, REFUSALS, TEXT_FORMAT, computer, hosted_tools, mcp
from blackbox_mitm.errors import BlackboxUnsupportedError

__all__ = [
    "LOCAL_ITEMS",
    "LOCAL_TOOLS",
    "ResponsesRequest",
    "chain_items",
    "decode_tools",
    "given",
    "is_custom",
    "remember",
    "response_head",
]

LOCAL_TOOLS = frozenset({"local_shell", "shell", "apply_patch", "tool_search"})
LOCAL_ITEMS = frozenset(
    {
        "local_shell_call",
        "local_shell_call_output",
        "shell_call",
        "shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "tool_search_call",
        "tool_search_output",
    }
)


@dataclass(slots=True)
class ResponsesRequest(DecodedRequest):
    """A decoded Responses request, with what its answer needs: the parent response id, the request's
    own input items (for the store) and the settings the API echoes in its Response object."""

    previous: str | None = None
    items: list[Any] = field(default_factory=list)
    echo: dict[str, Any] = field(default_factory=dict)


def given(obj: dict[str, Any], key: str) -> bool:
    return obj.get(key) is not None


def decode_tools(raw: Any, path: str, prefix: str = "") -> list[ToolDefinition]:
    """Tool definitions -> neutral ``{"name", "description"?, "inputSchema"}`` (hosted tools refused)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        REFUSALS.malformed(path, "tools is not a list")
    out: list[ToolDefinition] = []
    for i, tool in enumerate(raw):
        where = f"{path}[{i}]"
        if not isinstance(tool, dict):
            REFUSALS.malformed(where, "a tool is not an object")
        kind = tool.get("type")
        if not isinstance(kind, str):
            REFUSALS.malformed(f"{where}.type", "a tool's type is not a string")
        if kind in hosted_tools.SERVED_TOOLS or kind in computer.TOOLS:
            out.append(hosted_tools.decode_hosted_tool(tool))
            continue
        if kind == mcp.TOOL:
            out.append(mcp.decode_tool(tool, where))
            continue
        if kind in LOCAL_TOOLS:
            REFUSALS.refuse("openai.responses.local_tool", f"{where}.type", kind)
        if kind not in ("function", "custom", "namespace"):
            REFUSALS.malformed(f"{where}.type", f"unknown tool type {kind!r}")
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            REFUSALS.malformed(f"{where}.name", f"a {kind} tool without a name")
        if kind == "namespace":
            out.extend(decode_tools(tool.get("tools"), f"{where}.tools", prefix=f"{prefix}{name}."))
            continue
        if kind == "function":
            schema = tool["parameters"] if given(tool, "parameters") else dict(EMPTY_SCHEMA)
        else:
            schema = {"type": "string", "format": tool["format"] if given(tool, "format") else dict(TEXT_FORMAT)}
        out.append(tool_definition(prefix + name, schema, tool.get("description"), strict=_strict(tool)))
    return out


def _strict(tool: Mapping[str, Any]) -> bool:
    """Whether a function tool is strict: this API's default is true (``strict`` absent or null)."""
    return tool.get("type") == "function" and tool.get("strict") is not False


def is_custom(tool: Mapping[str, Any]) -> bool:
    schema = tool.get("inputSchema")
    return isinstance(schema, dict) and schema.get("type") == "string" and isinstance(schema.get("format"), dict)


# --- the store ------------------------------------------------------------------------------


def remember(ids: CallIds, response_id: str, request: DecodedRequest, output_items: list[Any], *, served: bool = False) -> None:
    """Keep a response (what its request added, its parent, its output) for a later ``previous_response_id``.

    ``served``: the response is ours (a replay's), so the provider never saw it.
    """
    if not response_id:
        return
    store = ids.codec_state(NAME)
    parent, own = (request.previous, request.items) if isinstance(request, ResponsesRequest) else (None, [])
    entry = {"parent": parent, "input": own, "output": list(output_items), "served": served}
    store[response_id] = entry


def chain_items(ids: CallIds, response_id: str) -> list[tuple[str, Any]] | None:
    """Every item of the conversation up to and including ``response_id``'s output, with where each came from."""
    store = ids.codec_state(NAME)
    chain: list[tuple[str, dict[str, Any]]] = []
    current: str | None = response_id
    seen: set[str] = set()
    while current is not None:
        entry = store.get(current)
        if entry is None or current in seen:
            return None if not chain else _broken(current)
        seen.add(current)
        chain.append((current, entry))
        current = entry["parent"]
    items: list[tuple[str, Any]] = []
    for rid, entry in reversed(chain):
        items.extend((f"(input of the request answered by {rid})[{k}]", item) for k, item in enumerate(entry["input"]))
        items.extend((f"(output of {rid})[{k}]", item) for k, item in enumerate(entry["output"]))
    return items


def _broken(rid: str) -> NoReturn:  # pragma: no cover - entries are only written with known parents
    raise BlackboxUnsupportedError("previous_response_id", f"the chain of responses is broken at {rid}", provider=PROVIDER)


# --- the request's settings, echoed in the Response ------------------------------------------

# Request fields the API echoes in its Response object, and what it says when they were not sent.
_ECHOED: tuple[tuple[str, Any], ...] = (
    ("instructions", None),
    ("max_output_tokens", None),
    ("max_tool_calls", None),
    ("parallel_tool_calls", True),
    ("previous_response_id", None),
    ("prompt_cache_key", None),
    ("reasoning", {"effort": None, "summary": None}),
    ("safety_identifier", None),
    ("store", True),
    ("temperature", 1.0),
    ("text", {"format": {"type": "text"}, "verbosity": "medium"}),
    ("tool_choice", "auto"),
    ("tools", []),
    ("top_logprobs", 0),
    ("top_p", 1.0),
    ("truncation", "disabled"),
    ("user", None),
    ("metadata", {}),
)


def response_head(request: DecodedRequest, response_id: str, created_ms: int, status: str) -> dict[str, Any]:
    """A Response object's head, its output and usage still empty: our id, the status, the request's settings echoed."""
    echo = request.echo if isinstance(request, ResponsesRequest) else {}
    head: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": created_ms // 1000,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "model": request.model or "",
        "output": [],
    }
    for key, default in _ECHOED:
        value = echo.get(key)
        head[key] = default if value is None else value
    head["usage"] = None
    return head
