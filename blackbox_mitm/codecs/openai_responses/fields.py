"""What the Responses request and answer sides share: items and tools -> the neutral transcript, and the run's response store.

The rules, so that the same conversation gives the same ``model_input`` whether
it was sent whole, continued with ``previous_response_id``, over HTTP or over a
WebSocket:
``previous_response_id``, over HTTP or over a WebSocket:

* Items are read in order. Leading ``system``/``developer`` messages (before any
  other message or call) join ``instructions`` in ``systemPrompt``; later ones stay
  in ``messages`` as role ``"system"``. ``reasoning`` items are dropped (like
  thinking blocks: not stored, not compared), and so are ``configuration_update``
  items (Codex restates the request's own settings in one); ``additional_tools``
  items add their tools after the request's ``tools``. Codex's ``compaction_trigger``
  and ``compaction`` items are parts of their own (the ``compaction`` module).
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

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from blackbox_mitm.cassette.payloads import (
    MediaPart,
    Message,
    MessagePart,
    ToolDefinition,
    data_url,
    joined_parts,
    media_part,
    tool_definition,
)
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.codecs.openai_responses import EMPTY_SCHEMA, NAME, PROVIDER, REFUSALS, TEXT_FORMAT, compaction, hosted_tools
from blackbox_mitm.errors import BlackboxUnsupportedError

__all__ = [
    "HOSTED_ITEMS",
    "HOSTED_TOOLS",
    "LOCAL_ITEMS",
    "LOCAL_TOOLS",
    "ResponsesRequest",
    "chain_items",
    "decode_tools",
    "given",
    "is_custom",
    "remember",
    "transcript",
]

HOSTED_TOOLS = frozenset(
    {
        "web_search",
        "web_search_preview",
        "web_search_preview_2025_03_11",
        "web_search_2025_08_26",
        "file_search",
        "code_interpreter",
        "computer",
        "computer_use",
        "computer_use_preview",
        "image_generation",
        "mcp",
    }
)
HOSTED_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "computer_call",
        "computer_call_output",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
    }
)
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
_CALLS = ("function_call", "custom_tool_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")


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
        if kind in hosted_tools.SERVED_TOOLS:
            out.append(hosted_tools.decode_hosted_tool(tool))
            continue
        if kind in HOSTED_TOOLS:
            REFUSALS.refuse("openai.responses.hosted_tool", f"{where}.type", kind)
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


# --- items -> transcript ------------------------------------------------------------------


def _text_of(content: Any, path: str, role: str) -> str:
    """A message's text: a string, or its text parts joined; non-text parts and history refusals are refused."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        REFUSALS.malformed(path, "content is neither a string nor a list of parts")
    texts: list[str] = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "refusal" and role == "assistant":
            REFUSALS.refuse("openai.responses.refusal_history", f"{path}[{j}].type")
        elif kind in ("input_image", "input_file", "input_audio"):
            REFUSALS.refuse("openai.responses.non_text", f"{path}[{j}].type", kind)
        else:
            REFUSALS.malformed(f"{path}[{j}]", f"a content part of type {kind!r}")
    return "".join(texts)


_MEDIA_INPUTS = ("input_image", "input_file", "input_audio")


def _content_of(content: Any, path: str, role: str) -> Any:
    """A user message's or tool output's content: text alone as one string; with media, the parts (content-addressed)."""
    if not isinstance(content, list) or not any(isinstance(p, dict) and p.get("type") in _MEDIA_INPUTS for p in content):
        return _text_of(content, path, role)
    parts: list[Any] = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in _MEDIA_INPUTS:
            parts.append(_media_of(part, f"{path}[{j}]"))
        else:
            parts.append({"type": "text", "text": _text_of([part], f"{path}[{j}]", role)})
    return joined_parts(parts)


def _media_of(part: dict[str, Any], where: str) -> MediaPart:
    kind = part["type"]
    name = part.get("filename") if isinstance(part.get("filename"), str) else None
    detail = part.get("detail") if isinstance(part.get("detail"), str) else None
    try:
        if kind == "input_audio" and isinstance(part.get("input_audio"), dict):
            audio = part["input_audio"]
            fmt = audio.get("format") if isinstance(audio.get("format"), str) else "wav"
            if isinstance(audio.get("data"), str):
                return media_part("audio", f"audio/{fmt}", audio["data"])
        url = part.get("image_url") if kind == "input_image" else part.get("file_data") or part.get("file_url")
        chosen: Any = "image" if kind == "input_image" else "document"
        if isinstance(url, str):
            inline = data_url(url)
            if inline is not None:
                return media_part(chosen, inline[0], inline[1], name=name, detail=detail)
            if kind == "input_file" and part.get("file_data") is not None:
                return media_part(chosen, None, url, name=name)  # bare base64 file_data
            return media_part(chosen, url=url, name=name, detail=detail)
        if isinstance(part.get("file_id"), str):
            return media_part(chosen, file=part["file_id"], name=name, detail=detail)
    except ValueError:
        REFUSALS.malformed(where, f"the {kind}'s data is not base64")
    REFUSALS.malformed(where, f"an {kind} without data, a URL or a file id")


def _output_text(output: Any, path: str) -> Any:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return _content_of(output, path, "tool")
    REFUSALS.malformed(path, "a tool output is neither a string nor a list of parts")


def _tool_input(item: dict[str, Any], kind: str, path: str) -> Any:
    if kind == "custom_tool_call":
        raw = item.get("input")
        if not isinstance(raw, str):
            REFUSALS.malformed(f"{path}.input", "a custom_tool_call without a string input")
        return raw
    raw = item.get("arguments")
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            pass
    REFUSALS.refuse("openai.responses.tool_arguments", f"{path}.arguments")


class _Transcript:
    """Builds the neutral messages from items, one at a time (see the module docstring)."""

    def __init__(self, ids: CallIds) -> None:
        self.ids = ids
        self.system: list[str] = []
        self.messages: list[Message] = []
        self.tools: list[ToolDefinition] = []
        self.names: dict[str, str] = {}
        self.leading = True
        self.turn: list[MessagePart] | None = None  # the open assistant turn's parts
        self.results: list[MessagePart] | None = None  # the open tool-result turn's parts

    def close(self) -> None:
        if self.turn is not None:
            parts: list[MessagePart] = []
            for part in self.turn:
                last = parts[-1] if parts else None
                if part["type"] == "text" and last is not None and last["type"] == "text":
                    parts[-1] = {"type": "text", "text": last["text"] + part["text"]}
                elif part["type"] != "text" or part["text"]:
                    parts.append(part)
            content: str | list[MessagePart] = parts
            first = parts[0] if parts else None
            if first is None:
                content = ""
            elif len(parts) == 1 and first["type"] == "text":
                content = first["text"]
            self.messages.append({"role": "assistant", "content": content})
        if self.results is not None:
            self.messages.append({"role": "user", "content": self.results})
        self.turn = self.results = None

    def message(self, item: dict[str, Any], path: str) -> None:
        role = item.get("role")
        if role not in ("user", "system", "developer", "assistant"):
            REFUSALS.malformed(f"{path}.role", f"unknown role {role!r}")
        text: Any = (
            _content_of(item.get("content"), f"{path}.content", role)
            if role == "user"
            else _text_of(item.get("content"), f"{path}.content", role)
        )
        if role in ("system", "developer") and self.leading:
            self.system.append(text)
            return
        self.leading = False
        if role == "assistant":
            if self.turn is None:
                self.close()
                self.turn = []
            self.turn.append({"type": "text", "text": text})
            return
        self.close()
        self.messages.append({"role": "user" if role == "user" else "system", "content": text})

    def call(self, item: dict[str, Any], kind: str, path: str) -> None:
        native, name = item.get("call_id"), item.get("name")
        if not isinstance(native, str) or not native:
            REFUSALS.malformed(f"{path}.call_id", f"a {kind} without a call_id")
        if not isinstance(name, str) or not name:
            REFUSALS.malformed(f"{path}.name", f"a {kind} without a name")
        if isinstance(item.get("namespace"), str) and item["namespace"]:
            name = f"{item['namespace']}.{name}"
        tool_input = _tool_input(item, kind, path)
        self.leading = False
        if self.turn is None:
            self.close()
            self.turn = []
        self.names[native] = name
        self.turn.append({"type": "tool_use", "toolCallId": self.ids.neutral(native, name), "toolName": name, "toolInput": tool_input})

    def hosted_call(self, item: dict[str, Any]) -> None:
        """A hosted tool's call item (web search...): a server_tool_call part of the assistant turn."""
        self.leading = False
        if self.turn is None:
            self.close()
            self.turn = []
        self.turn.append(hosted_tools.history_part(item, self.ids))

    def result(self, item: dict[str, Any], kind: str, path: str) -> None:
        native = item.get("call_id")
        if not isinstance(native, str) or not native:
            REFUSALS.malformed(f"{path}.call_id", f"a {kind} without a call_id")
        text = _output_text(item.get("output"), f"{path}.output")
        self.leading = False
        if self.results is None:
            self.close()
            self.results = []
        name = self.names.get(native)
        call_id = self.ids.neutral(native, name)
        name = name if name is not None else self.ids.name_of(call_id)
        self.results.append({"type": "tool_result", "toolCallId": call_id, "toolName": name or "", "result": text})

    def compaction(self, item: dict[str, Any], kind: str, path: str) -> None:
        """Codex's compaction (``compaction`` module): the trigger is a user turn, the compacted history the assistant's."""
        self.leading = False
        if kind == compaction.TRIGGER:
            self.close()
            self.messages.append({"role": "user", "content": [compaction.trigger_part()]})
            return
        if self.turn is None:
            self.close()
            self.turn = []
        self.turn.append(compaction.part_of_item(item, path))

    def item(self, item: Any, path: str) -> None:
        if not isinstance(item, dict):
            REFUSALS.malformed(path, "an input item is not an object")
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "message":
            self.message(item, path)
        elif kind in _CALLS:
            self.call(item, kind, path)
        elif kind in _OUTPUTS:
            self.result(item, kind, path)
        elif kind in ("reasoning", "configuration_update"):
            return  # a thinking block (not stored, not compared); Codex's restatement of the request's settings
        elif kind == "additional_tools":
            self.tools.extend(decode_tools(item.get("tools"), f"{path}.tools"))
        elif kind in hosted_tools.SERVED_ITEMS:
            self.hosted_call(item)
        elif kind in (compaction.TRIGGER, compaction.ITEM):
            self.compaction(item, kind, path)
        elif kind in HOSTED_ITEMS:
            REFUSALS.refuse("openai.responses.hosted_tool", f"{path}.type", kind)
        elif kind in LOCAL_ITEMS:
            REFUSALS.refuse("openai.responses.local_tool", f"{path}.type", kind)
        elif kind == "item_reference":
            REFUSALS.refuse("openai.responses.item_reference", f"{path}.type")
        else:
            REFUSALS.malformed(f"{path}.type", f"unknown input item type {kind!r}")


def transcript(items: Iterable[tuple[str, Any]], ids: CallIds) -> tuple[list[str], list[Message], list[ToolDefinition]]:
    """(leading system texts, neutral messages, tools from additional_tools items) of ``(path, item)`` pairs."""
    t = _Transcript(ids)
    for path, item in items:
        t.item(item, path)
    t.close()
    return t.system, t.messages, t.tools
