"""Messages requests -> the neutral ``model_input``; a fork's edited tool result written back."""

from __future__ import annotations

from typing import Any, cast

from blackbox_mitm.cassette.payloads import (
    MediaPart,
    Message,
    MessagePart,
    ModelInput,
    ToolDefinition,
    ToolResultPart,
    ToolUsePart,
    media_part,
)
from blackbox_mitm.codecs.anthropic_messages import NAME, PARAMS, PROVIDER, REFUSALS, THINKING, server_tools
from blackbox_mitm.codecs.anthropic_messages.fields import block_kind, is_server_block, text_of
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.codecs.common.jsonio import dumps_bytes, load_object, loads_or_none
from blackbox_mitm.errors import BlackboxUnsupportedError

__all__ = ["decode_request", "rewrite_tool_result"]


def decode_request(body: bytes, ids: CallIds, *, path: str = "", query: str = "") -> DecodedRequest:
    """A Messages request body -> ``DecodedRequest`` holding the neutral ``model_input``."""
    data = load_object(body, "request", PROVIDER)
    tools = _decode_tools(data.get("tools"))
    if data.get("mcp_servers"):  # the MCP connector: the servers the provider calls, compared like tools
        tools += server_tools.mcp_server_definitions(data["mcp_servers"])
    model_input: ModelInput = {"messages": _decode_messages(data.get("messages"), ids), "tools": tools}
    if "system" in data and data["system"] is not None:
        model_input["systemPrompt"] = _joined_text(data["system"], "system", row="anthropic.system_content")
    model = data.get("model")
    if isinstance(model, str):
        model_input["model"] = model
    stream = data.get("stream") is True
    params = {neutral: data[native] for native, neutral in PARAMS if data.get(native) is not None}
    if stream:
        params["stream"] = True
    if params:
        model_input["params"] = params
    return DecodedRequest(NAME, model_input, model=model if isinstance(model, str) else None, stream=stream)


def _decode_messages(messages: Any, ids: CallIds) -> list[Message]:
    if not isinstance(messages, list):
        raise BlackboxUnsupportedError("messages", "expected a list of messages", provider=PROVIDER)
    names: dict[str, str] = {}  # tool_use id -> tool name, from this history
    out: list[Message] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise BlackboxUnsupportedError(f"messages[{i}]", "expected a message object", provider=PROVIDER)
        content = message.get("content")
        if isinstance(content, str):
            decoded: str | list[MessagePart] = content
        elif isinstance(content, list):
            if message.get("role") == "system":  # text blocks only, as the API takes them
                _joined_text(content, f"messages[{i}].content", row="anthropic.system_content")
            decoded = _decode_blocks(content, f"messages[{i}].content", ids, names)
        else:
            raise BlackboxUnsupportedError(f"messages[{i}].content", "expected a string or a list of content blocks", provider=PROVIDER)
        role: Any = message.get("role")  # as sent (the API refuses a message without one)
        out.append({"role": role, "content": decoded})
    return out


def _decode_blocks(blocks: list[Any], path: str, ids: CallIds, names: dict[str, str]) -> str | list[MessagePart]:
    parts: list[MessagePart] = []
    for j, block in enumerate(blocks):
        where = f"{path}[{j}]"
        kind = block_kind(block)
        if kind == "text":
            text = text_of(block, where)
            last = parts[-1] if parts else None
            if last is not None and last["type"] == "text":
                last["text"] += text
            else:
                parts.append({"type": "text", "text": text})
        elif kind in THINKING:
            continue
        elif kind == "tool_use":
            parts.append(_decode_tool_use(block, where, ids, names))
        elif kind == "tool_result":
            parts.append(_decode_tool_result(block, where, ids, names))
        elif kind in ("image", "document"):
            parts.append(media_of(block, kind, where))
        elif kind == "search_result":
            parts.append(cast(MessagePart, search_result_of(block, where)))
        elif kind == "container_upload":
            parts.append(cast(MessagePart, server_tools.container_upload_of(block, where)))
        elif is_server_block(kind):
            parts.append(server_tools.decode_history_block(block, str(kind), where, ids))
        else:
            REFUSALS.refuse("anthropic.image_content", where)
    parts = [p for p in parts if p["type"] != "text" or p["text"]]
    if not parts:
        return ""
    first = parts[0]
    if len(parts) == 1 and first["type"] == "text":
        return first["text"]
    return parts


def _decode_tool_use(block: dict[str, Any], where: str, ids: CallIds, names: dict[str, str]) -> ToolUsePart:
    native, name = block.get("id"), block.get("name")
    if not isinstance(native, str) or not isinstance(name, str):
        raise BlackboxUnsupportedError(where, "a tool_use block needs a string id and name", provider=PROVIDER)
    names[native] = name
    part: ToolUsePart = {"type": "tool_use", "toolCallId": ids.neutral(native, name), "toolName": name, "toolInput": block.get("input")}
    caller = server_tools.caller_of(block, ids)
    if caller is not None:
        part["caller"] = cast(Any, caller)
    return part


def _decode_tool_result(block: dict[str, Any], where: str, ids: CallIds, names: dict[str, str]) -> ToolResultPart:
    native = block.get("tool_use_id")
    if not isinstance(native, str):
        raise BlackboxUnsupportedError(f"{where}.tool_use_id", "a tool_result block needs a string tool_use_id", provider=PROVIDER)
    name = names.get(native)
    call_id = ids.neutral(native, name)
    if name is None:
        name = ids.name_of(call_id) or ""
    content = block.get("content")
    if block.get("is_error") is True:
        error = "" if content is None else _joined_text(content, f"{where}.content")
        return {"type": "tool_result", "toolCallId": call_id, "toolName": name, "error": error}
    return {"type": "tool_result", "toolCallId": call_id, "toolName": name, "result": _result_content(content, f"{where}.content")}


def media_of(block: dict[str, Any], kind: str, where: str) -> MediaPart:
    """An image or document block -> a neutral media part: inline bytes by digest, a URL or file id as the reference.

    A document keeps what the model reads beside its bytes: ``context`` as sent, and ``citations: true`` when
    citations are enabled on it (a document without them is the part it always was).
    """
    source = block.get("source")
    if not isinstance(source, dict):
        raise BlackboxUnsupportedError(f"{where}.source", f"an {kind} block needs a source object", provider=PROVIDER)
    part = _media_source(block, source, kind, where)
    if kind == "document":
        extras: dict[str, Any] = dict(part)
        if isinstance(block.get("context"), str):
            extras["context"] = block["context"]
        citations = block.get("citations")
        if isinstance(citations, dict) and citations.get("enabled") is True:
            extras["citations"] = True
        part = cast(MediaPart, extras)
    return part


def _media_source(block: dict[str, Any], source: dict[str, Any], kind: str, where: str) -> MediaPart:
    neutral_kind: Any = kind if kind == "image" else "document"
    name = block.get("title") if isinstance(block.get("title"), str) else None
    media_type = source.get("media_type") if isinstance(source.get("media_type"), str) else None
    match source.get("type"):
        case "base64" if isinstance(source.get("data"), str):
            try:
                return media_part(neutral_kind, media_type, source["data"], name=name)
            except ValueError:
                raise BlackboxUnsupportedError(f"{where}.source.data", "the data is not base64", provider=PROVIDER) from None
        case "text" if isinstance(source.get("data"), str):
            return media_part(neutral_kind, media_type or "text/plain", source["data"].encode(), name=name)
        case "url" if isinstance(source.get("url"), str):
            return media_part(neutral_kind, media_type, url=source["url"], name=name)
        case "file" if isinstance(source.get("file_id"), str):
            return media_part(neutral_kind, media_type, file=source["file_id"], name=name)
        case "content" if kind == "document" and isinstance(source.get("content"), (str, list)):
            part: dict[str, Any] = {"type": "document", "content": _document_content(source["content"], f"{where}.source.content")}
            if name is not None:
                part["name"] = name
            return cast(MediaPart, part)
    REFUSALS.refuse("anthropic.image_content", f"{where}.source.type", source.get("type"))


def _document_content(content: str | list[Any], path: str) -> list[dict[str, Any]]:
    """A custom-content document's blocks (text and images, the API's ``ContentBlockSourceContentParam``) as neutral parts.

    A string is one text part; adjacent text is joined and empty text dropped, as in a message.
    """
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    parts: list[dict[str, Any]] = []
    for k, block in enumerate(content):
        kind = block_kind(block)
        if kind == "text":
            _append_text(parts, text_of(block, f"{path}[{k}]"))
        elif kind == "image":
            parts.append(dict(media_of(block, kind, f"{path}[{k}]")))
        else:
            REFUSALS.refuse("anthropic.image_content", f"{path}[{k}]", kind)
    return parts


def _append_text(parts: list[dict[str, Any]], text: str) -> None:
    """A text block's text into ``parts``: joined to the text part before it, or dropped when empty."""
    if parts and parts[-1]["type"] == "text":
        parts[-1]["text"] += text
    elif text:
        parts.append({"type": "text", "text": text})


def _result_content(content: Any, path: str) -> Any:
    """A tool result's content: text alone as one string (as always); with tool references, a list of parts.

    Claude Code's ToolSearch answers with ``tool_reference`` blocks (the tools it
    loads): each is ``{"type": "tool_reference", "toolName"}``, text between them
    ``{"type": "text", "text"}``, in order.
    """
    if content is None:
        return ""
    if not isinstance(content, list) or all(block_kind(b) == "text" for b in content):
        return _joined_text(content, path)  # text alone stays one string, as always
    parts: list[dict[str, Any]] = []
    for k, block in enumerate(content):
        kind = block_kind(block)
        if kind == "text":
            _append_text(parts, text_of(block, f"{path}[{k}]"))
        elif kind == "tool_reference" and isinstance(block.get("tool_name"), str):
            parts.append({"type": "tool_reference", "toolName": block["tool_name"]})
        elif kind in ("image", "document"):
            parts.append(dict(media_of(block, kind, f"{path}[{k}]")))
        elif kind == "search_result":
            parts.append(search_result_of(block, f"{path}[{k}]"))
        else:
            REFUSALS.refuse("anthropic.image_content", f"{path}[{k}]")
    return parts


def search_result_of(block: dict[str, Any], where: str) -> dict[str, Any]:
    """A ``search_result`` block (a RAG result the agent hands the model) -> a neutral part, compared.

    ``{"type": "search_result", "source", "title", "content": [{"type": "text", "text"}], "citations": true?}``:
    the text blocks are kept one by one (a ``search_result_location`` citation counts them), ``citations`` only
    when enabled; ``cache_control`` is dropped.
    """
    source, title, content = block.get("source"), block.get("title"), block.get("content")
    if not isinstance(source, str) or not isinstance(title, str) or not isinstance(content, list):
        raise BlackboxUnsupportedError(
            where, "a search_result block needs a string source and title and a list of text blocks", provider=PROVIDER
        )
    texts: list[dict[str, Any]] = []
    for k, text_block in enumerate(content):
        if block_kind(text_block) != "text":
            REFUSALS.refuse("anthropic.image_content", f"{where}.content[{k}]", block_kind(text_block))
        texts.append({"type": "text", "text": text_of(text_block, f"{where}.content[{k}]")})
    part: dict[str, Any] = {"type": "search_result", "source": source, "title": title, "content": texts}
    citations = block.get("citations")
    if isinstance(citations, dict) and citations.get("enabled") is True:
        part["citations"] = True
    return part


def _decode_tools(tools: Any) -> list[ToolDefinition]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise BlackboxUnsupportedError("tools", "expected a list of tools", provider=PROVIDER)
    out: list[ToolDefinition] = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise BlackboxUnsupportedError(f"tools[{i}]", "expected a tool object", provider=PROVIDER)
        if tool.get("type") not in (None, "custom"):
            out.append(server_tools.decode_typed_tool(tool, f"tools[{i}]"))
            continue
        if not isinstance(tool.get("name"), str) or "input_schema" not in tool:
            raise BlackboxUnsupportedError(f"tools[{i}]", "a client tool needs a name and an input_schema", provider=PROVIDER)
        neutral: ToolDefinition = {"name": tool["name"], "inputSchema": tool["input_schema"]}
        if "description" in tool:  # kept even when null: it was sent
            neutral = {"name": tool["name"], "description": tool["description"], "inputSchema": tool["input_schema"]}
        if tool.get("strict") is True:
            neutral["strict"] = True
        out.append(neutral)
    return out


def _joined_text(value: Any, path: str, *, row: str = "anthropic.image_content") -> str:
    """A string, or text blocks joined with "" (how text is split into blocks is not compared); another block is ``row``'s refusal."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise BlackboxUnsupportedError(path, "expected a string or a list of text blocks", provider=PROVIDER)
    texts = []
    for k, block in enumerate(value):
        if not isinstance(block, dict) or block.get("type") != "text":
            REFUSALS.refuse(row, f"{path}[{k}]", block_kind(block))
        texts.append(text_of(block, f"{path}[{k}]"))
    return "".join(texts)


def rewrite_tool_result(body: bytes, ids: CallIds, call_id: str, text: str) -> bytes | None:
    """A fork's edited tool result: what the model sees for ``call_id`` becomes ``text``.

    Every tool_result block answering that call in the request's history gets the
    new content, and loses ``is_error`` (a replacement is a result). None when the
    request carries no such block, or is not a JSON object.
    """
    data = loads_or_none(body)
    messages = data.get("messages") if isinstance(data, dict) else None
    changed = False
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result" and ids.lookup(str(block.get("tool_use_id"))) == call_id:
                block["content"] = text
                block.pop("is_error", None)
                changed = True
    return dumps_bytes(data, allow_nan=False) if changed else None
