"""Converse requests -> the neutral ``model_input``; a fork's edited tool result written back."""

from __future__ import annotations

from typing import Any

from blackbox_mitm.cassette.payloads import Message, MessagePart, ModelInput, ToolDefinition
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.codecs.bedrock.fields import model_id
from blackbox_mitm.codecs.bedrock_converse import INFERENCE, NAME, PROVIDER, REFUSALS
from blackbox_mitm.codecs.bedrock_converse.fields import MEDIA, block_kind, result_text
from blackbox_mitm.codecs.common.jsonio import dumps_bytes, load_object, loads_or_none

__all__ = ["decode_request", "rewrite_tool_result"]


def decode_request(body: bytes, ids: CallIds, *, path: str = "", query: str = "") -> DecodedRequest:
    """A Converse request (model and streaming from ``path``) -> ``DecodedRequest`` holding the neutral ``model_input``."""
    data = load_object(body, "request", PROVIDER)
    if data.get("guardrailConfig") is not None:
        REFUSALS.refuse("bedrock-converse.guardrail", "guardrailConfig")
    if data.get("promptVariables") is not None:
        REFUSALS.refuse("bedrock-converse.prompt_variables", "promptVariables")
    if not isinstance(data.get("messages"), list):
        REFUSALS.malformed("messages", "expected a list of messages")
    tool_config = data.get("toolConfig") or {}
    if not isinstance(tool_config, dict):
        REFUSALS.malformed("toolConfig", "expected an object")
    model_input: ModelInput = {"messages": _messages(data["messages"], ids), "tools": _tools(tool_config.get("tools"))}
    if data.get("system") is not None:
        model_input["systemPrompt"] = _system(data["system"])
    parts = path.rstrip("/").rsplit("/", 3)
    stream = parts[-1] == "converse-stream"
    model, sent = model_id(parts[-2]) if len(parts) == 4 else (None, None)
    if model is not None:
        model_input["model"] = model
    params = _params(data, tool_config)
    if stream:
        params["stream"] = True
    if params:
        model_input["params"] = params
    return DecodedRequest(NAME, model_input, model=sent, stream=stream)


def _params(data: dict[str, Any], tool_config: dict[str, Any]) -> dict[str, Any]:
    inference = data.get("inferenceConfig") or {}
    if not isinstance(inference, dict):
        REFUSALS.malformed("inferenceConfig", "expected an object")
    params = {name: inference[name] for name in INFERENCE if inference.get(name) is not None}
    if tool_config.get("toolChoice") is not None:
        params["toolChoice"] = tool_config["toolChoice"]
    if data.get("additionalModelRequestFields") is not None:
        params["additionalModelRequestFields"] = data["additionalModelRequestFields"]
    return params


def _system(system: Any) -> str:
    if not isinstance(system, list):
        REFUSALS.malformed("system", "expected a list of system blocks")
    texts = []
    for i, block in enumerate(system):
        kind = block_kind(block, f"system[{i}]")
        if kind == "text" and isinstance(block["text"], str):
            texts.append(block["text"])
        elif kind != "cachePoint":
            REFUSALS.refuse("bedrock-converse.media", f"system[{i}]")
    return "".join(texts)


def _messages(messages: list[Any], ids: CallIds) -> list[Message]:
    names: dict[str, str] = {}  # toolUseId -> tool name, from this history
    out: list[Message] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            REFUSALS.malformed(f"messages[{i}]", "a message is an object with a list of content blocks")
        parts: list[MessagePart] = []
        for j, block in enumerate(message["content"]):
            part = _part(block, f"messages[{i}].content[{j}]", ids, names)
            if part is None:
                continue
            last = parts[-1] if parts else None
            if part["type"] == "text" and last is not None and last["type"] == "text":
                last["text"] += part["text"]
            else:
                parts.append(part)
        parts = [p for p in parts if p["type"] != "text" or p["text"]]
        content: str | list[MessagePart] = parts
        if not parts:
            content = ""
        elif len(parts) == 1 and parts[0]["type"] == "text":
            content = parts[0]["text"]
        role: Any = message.get("role")  # as sent (the API refuses a message without one)
        out.append({"role": role, "content": content})
    return out


def _part(block: Any, where: str, ids: CallIds, names: dict[str, str]) -> MessagePart | None:
    kind = block_kind(block, where)
    value = block[kind]
    if kind == "text":
        if not isinstance(value, str):
            REFUSALS.malformed(where, "a text block's text is a string")
        return {"type": "text", "text": value}
    if kind in ("reasoningContent", "cachePoint"):
        return None
    if kind in MEDIA:
        REFUSALS.refuse("bedrock-converse.media", where)
    if not isinstance(value, dict) or not isinstance(value.get("toolUseId"), str):
        REFUSALS.malformed(where, f"a {kind} block needs a string toolUseId")
    native = value["toolUseId"]
    if kind == "toolUse":
        name = value.get("name")
        if not isinstance(name, str):
            REFUSALS.malformed(f"{where}.toolUse.name", "a toolUse block needs a string name")
        names[native] = name
        return {"type": "tool_use", "toolCallId": ids.neutral(native, name), "toolName": name, "toolInput": value.get("input")}
    call_id = ids.neutral(native, names.get(native))
    name = names.get(native) or ids.name_of(call_id) or ""
    text = result_text(value.get("content"), f"{where}.toolResult.content")
    if value.get("status") == "error":
        return {"type": "tool_result", "toolCallId": call_id, "toolName": name, "error": text}
    return {"type": "tool_result", "toolCallId": call_id, "toolName": name, "result": text}


def _tools(tools: Any) -> list[ToolDefinition]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        REFUSALS.malformed("toolConfig.tools", "expected a list of tools")
    out: list[ToolDefinition] = []
    for i, tool in enumerate(tools):
        if isinstance(tool, dict) and "cachePoint" in tool:
            continue
        spec = tool.get("toolSpec") if isinstance(tool, dict) else None
        schema = spec.get("inputSchema") if isinstance(spec, dict) else None
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or not isinstance(schema, dict) or "json" not in schema:
            REFUSALS.malformed(f"toolConfig.tools[{i}]", "a tool is a toolSpec with a name and an inputSchema.json")
        neutral: ToolDefinition = {"name": spec["name"], "inputSchema": schema["json"]}
        if "description" in spec:
            neutral = {"name": spec["name"], "description": spec["description"], "inputSchema": schema["json"]}
        out.append(neutral)
    return out


def rewrite_tool_result(body: bytes, ids: CallIds, call_id: str, text: str) -> bytes | None:
    """A fork's edited tool result: every toolResult answering ``call_id`` gets ``[{"text": text}]`` and loses its status."""
    data = loads_or_none(body)
    messages = data.get("messages") if isinstance(data, dict) else None
    changed = False
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            result = block.get("toolResult") if isinstance(block, dict) else None
            if isinstance(result, dict) and ids.lookup(str(result.get("toolUseId"))) == call_id:
                result["content"] = [{"text": text}]
                result.pop("status", None)
                changed = True
    return dumps_bytes(data, allow_nan=False) if changed else None
