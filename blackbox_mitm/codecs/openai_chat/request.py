"""Chat-completions requests -> the neutral ``model_input``; a fork's edited tool result written back, and what it sends upstream."""

from __future__ import annotations

from typing import Any

from blackbox_mitm.cassette.payloads import Message, MessagePart, ModelInput, ToolDefinition, ToolResultPart, tool_definition
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.codecs.common.jsonio import dumps, load_object, loads_or_none
from blackbox_mitm.codecs.openai_chat import EMPTY_SCHEMA, NAME, PARAMS, PROVIDER, REFUSALS, SYSTEM_JOINER
from blackbox_mitm.codecs.openai_chat.audio import forward_served_audio, history_audio
from blackbox_mitm.codecs.openai_chat.fields import assistant_parts, content_of, function_call, given, refusal_text, text_of

__all__ = ["decode_request", "forward_body", "rewrite_tool_result"]


def decode_request(body: bytes, ids: CallIds, *, path: str = "", query: str = "") -> DecodedRequest:
    """A chat-completions request body -> its neutral ``model_input`` (refused fields raise)."""
    req = load_object(body, "request", PROVIDER)
    params = _decode_params(req)
    system, messages = _decode_messages(req.get("messages"), ids)
    model_input: ModelInput = {"messages": messages, "tools": _decode_tools(req.get("tools"))}
    if system is not None:
        model_input["systemPrompt"] = system
    model = req.get("model") if isinstance(req.get("model"), str) else None
    if model is not None:
        model_input["model"] = model
    if params:
        model_input["params"] = params
    stream = req.get("stream") is True
    options = req.get("stream_options")
    include_usage = stream and isinstance(options, dict) and options.get("include_usage") is True
    return DecodedRequest(NAME, model_input, model=model, stream=stream, include_usage=include_usage)


def _decode_params(req: dict[str, Any]) -> dict[str, Any]:
    for key, row_id in (("functions", "openai.functions"), ("function_call", "openai.functions")):
        if given(req, key):
            REFUSALS.refuse(row_id, key)
    if given(req, "web_search_options"):
        REFUSALS.refuse("openai.web_search_options", "web_search_options")
    n = req.get("n")
    if isinstance(n, int) and n > 1:
        REFUSALS.refuse("openai.n", "n", n)
    if given(req, "max_tokens") and given(req, "max_completion_tokens"):
        REFUSALS.refuse(
            "openai.both_max_tokens",
            "max_completion_tokens",
            value={"max_tokens": req["max_tokens"], "max_completion_tokens": req["max_completion_tokens"]},
        )
    params: dict[str, Any] = {}
    for wire, neutral in PARAMS:
        if given(req, wire):
            params[neutral] = req[wire]
    if req.get("stream") is True:
        params["stream"] = True
    return params


def _decode_tools(raw: Any) -> list[ToolDefinition]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        REFUSALS.malformed("tools", "tools is not a list")
    tools: list[ToolDefinition] = []
    for i, tool in enumerate(raw):
        path = f"tools[{i}]"
        if not isinstance(tool, dict):
            REFUSALS.malformed(path, "a tool is not an object")
        if (tool.get("type") or "function") != "function":
            REFUSALS.refuse("openai.custom_tool", f"{path}.type")
        fn = tool.get("function")
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            REFUSALS.malformed(f"{path}.function", "a function tool without a name")
        schema = fn["parameters"] if given(fn, "parameters") else dict(EMPTY_SCHEMA)
        tools.append(tool_definition(fn["name"], schema, fn.get("description"), strict=fn.get("strict") is True))
    return tools


def _decode_messages(raw: Any, ids: CallIds) -> tuple[str | None, list[Message]]:
    if not isinstance(raw, list):
        REFUSALS.malformed("messages", "messages is not a list")
    names: dict[str, str] = {}  # native tool-call id -> tool name, from this request's assistant turns
    system: list[str] = []
    out: list[Message] = []
    results: list[MessagePart] | None = None  # the user turn that consecutive tool messages fill
    leading = True
    for i, msg in enumerate(raw):
        path = f"messages[{i}]"
        if not isinstance(msg, dict):
            REFUSALS.malformed(path, "a message is not an object")
        role = msg.get("role")
        if role == "function":  # the legacy functions API's result message (it always has a name)
            REFUSALS.refuse("openai.function_call_message", f"{path}.role")
        if given(msg, "name"):
            REFUSALS.refuse("openai.message_name", f"{path}.name")
        if role in ("system", "developer"):
            text = text_of(msg.get("content"), f"{path}.content")
            if leading:
                system.append(text)
            else:
                out.append({"role": "system", "content": text})
                results = None
            continue
        leading = False
        if role == "tool":
            if results is None:
                results = []
                out.append({"role": "user", "content": results})
            results.append(_tool_result(msg, path, ids, names))
            continue
        results = None
        if role == "user":
            out.append({"role": "user", "content": content_of(msg.get("content"), f"{path}.content")})
        elif role == "assistant":
            out.append(_assistant_turn(msg, path, ids, names))
        else:
            REFUSALS.malformed(f"{path}.role", f"unknown role {role!r}")
    return (SYSTEM_JOINER.join(system) if system else None), out


def _said(msg: dict[str, Any], path: str) -> list[MessagePart]:
    """An assistant message's text and refusal parts in order (adjacent text joined, empty text dropped).

    A refusal (the ``refusal`` field, or ``refusal`` content parts) is a part of its own, after the text.
    """
    content: list[MessagePart] = list(assistant_parts(msg.get("content"), f"{path}.content"))
    refusal = refusal_text(msg.get("refusal"))
    if refusal is not None and not any(p["type"] == "refusal" for p in content):
        content.append({"type": "refusal", "text": refusal})
    out: list[MessagePart] = []
    for part in content:
        last = out[-1] if out else None
        if part["type"] == "text" and last is not None and last["type"] == "text":
            out[-1] = {"type": "text", "text": last["text"] + part["text"]}
        elif part["type"] != "text" or part["text"]:
            out.append(part)
    return out


def _assistant_turn(msg: dict[str, Any], path: str, ids: CallIds, names: dict[str, str]) -> Message:
    if given(msg, "function_call"):
        REFUSALS.refuse("openai.function_call_message", f"{path}.function_call")
    said = _said(msg, path)
    calls = msg.get("tool_calls")
    audio: list[MessagePart] = [history_audio(msg["audio"], f"{path}.audio", ids)] if given(msg, "audio") else []  # type: ignore[list-item]
    if not calls and not audio and all(p["type"] == "text" for p in said):
        return {"role": "assistant", "content": "".join(p["text"] for p in said if p["type"] == "text")}
    if calls and not isinstance(calls, list):
        REFUSALS.malformed(f"{path}.tool_calls", "tool_calls is not a list")
    parts: list[MessagePart] = [*said, *audio]
    for j, call in enumerate(calls or []):
        native, name, tool_input = function_call(call, f"{path}.tool_calls[{j}]")
        if native is None:
            REFUSALS.malformed(f"{path}.tool_calls[{j}].id", "a tool call in the history has no id")
        names[native] = name
        parts.append({"type": "tool_use", "toolCallId": ids.neutral(native, name), "toolName": name, "toolInput": tool_input})
    return {"role": "assistant", "content": parts}


def _tool_result(msg: dict[str, Any], path: str, ids: CallIds, names: dict[str, str]) -> ToolResultPart:
    native = msg.get("tool_call_id")
    if not isinstance(native, str) or not native:
        REFUSALS.malformed(f"{path}.tool_call_id", "a tool message without a tool_call_id")
    result = content_of(msg.get("content"), f"{path}.content")
    name = names.get(native)
    call_id = ids.neutral(native, name)
    name = name if name is not None else ids.name_of(call_id)
    return {"type": "tool_result", "toolCallId": call_id, "toolName": name or "", "result": result}


def forward_body(body: bytes, ids: CallIds) -> bytes | None:
    """The body to send upstream after a fork's cut: a served audio answer referred to by its transcript (``audio``)."""
    req = loads_or_none(body)
    if not isinstance(req, dict) or not forward_served_audio(req.get("messages"), ids):
        return None
    return dumps(req).encode()


def rewrite_tool_result(body: bytes, ids: CallIds, call_id: str, text: str) -> bytes | None:
    """A fork's edited tool result: what the model sees for ``call_id`` becomes ``text``.

    Every ``tool`` message answering that call (in this request's history) gets
    the new content; None when the request carries no such message.
    """
    req = loads_or_none(body)
    changed = False
    for msg in (req.get("messages") or []) if isinstance(req, dict) else []:
        if isinstance(msg, dict) and msg.get("role") == "tool" and ids.lookup(str(msg.get("tool_call_id"))) == call_id:
            msg["content"] = text
            changed = True
    return dumps(req).encode() if changed else None
