"""Gemini requests -> the neutral ``model_input`` (model and streaming from the path); a fork's edited tool result."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote

from blackbox_mitm.cassette.payloads import (
    MediaPart,
    Message,
    MessagePart,
    ModelInput,
    ToolDefinition,
    ToolResultPart,
    tool_definition,
)
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.codecs.common.jsonio import dumps, load_object, loads_or_none
from blackbox_mitm.codecs.gemini import CODE_ASSIST, EMPTY_SCHEMA, MODEL_PATH, NAME, PARAMS, PROVIDER, REFUSALS, code_execution, grounding
from blackbox_mitm.codecs.gemini.fields import call_positions, camel_request, part_kind
from blackbox_mitm.codecs.gemini.multimodal import function_result, media_of, response_parts, system_parts
from blackbox_mitm.errors import BlackboxUnsupportedError

__all__ = ["decode_request", "rewrite_tool_result"]


def decode_request(body: bytes, ids: CallIds, *, path: str = "", query: str = "") -> DecodedRequest:
    """A generateContent request -> its neutral ``model_input``; the model and streaming come from ``path``."""
    bare = unquote(path)
    if CODE_ASSIST.search(bare):
        REFUSALS.refuse("gemini.code_assist", bare)
    m = MODEL_PATH.search(bare)
    model, stream = (m.group(1), m.group(2) == "streamGenerateContent") if m else (None, False)
    if stream and parse_qs(query).get("alt", [""])[-1] != "sse":
        REFUSALS.refuse("gemini.stream_json", "alt", parse_qs(query).get("alt", [None])[-1])
    data = camel_request(load_object(body, "request", PROVIDER))
    if data.get("cachedContent") is not None:
        REFUSALS.refuse("gemini.cached_content", "cachedContent")
    params = _decode_params(data)
    if stream:
        params["stream"] = True
    model_input: ModelInput = {"messages": _decode_contents(data.get("contents"), ids)[0], "tools": _decode_tools(data.get("tools"))}
    system = data.get("systemInstruction")
    if system is not None:
        model_input["systemPrompt"], media = _system(system)
        if media:
            model_input["systemMedia"] = media  # Blackbox's extension: the system instruction's media (multimodal)
    if model is not None:
        model_input["model"] = model
    if params:
        model_input["params"] = params
    return DecodedRequest(NAME, model_input, model=model, stream=stream)


def _decode_params(data: dict[str, Any]) -> dict[str, Any]:
    config = data.get("generationConfig") or {}
    if not isinstance(config, dict):
        REFUSALS.malformed("generationConfig", "generationConfig is not an object")
    count = config.get("candidateCount")
    if isinstance(count, int) and count > 1:
        REFUSALS.refuse("gemini.candidate_count", "generationConfig.candidateCount", count)
    params: dict[str, Any] = {}
    for wire, neutral in PARAMS:
        value: Any = data
        for key in wire.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None:
            params[neutral] = value
    return params


def _system(system: Any) -> tuple[str, list[MediaPart]]:
    """``systemInstruction`` -> (its text, its media parts)."""
    if isinstance(system, str):
        return system, []
    if not isinstance(system, dict):
        REFUSALS.malformed("systemInstruction", "systemInstruction is neither a string nor a content with parts")
    return system_parts(system)


def _decode_contents(raw: Any, ids: CallIds) -> tuple[list[Message], list[tuple[int, int, str]]]:
    """contents -> (messages, [(i, j, call-N) of every functionResponse part]), one message per content."""
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        REFUSALS.malformed("contents", "contents is not a list")
    first = raw[0] if raw and isinstance(raw[0], dict) else {}
    texts = [p.get("text") for p in first.get("parts") or [] if isinstance(p, dict) and not p.get("thought")]
    positions = call_positions(ids, "".join(t for t in texts if isinstance(t, str)))
    messages: list[Message] = []
    results: list[tuple[int, int, str]] = []
    open_calls: list[tuple[str, str]] = []  # (call-N, name) of the latest model turn's calls not yet answered
    last_code: list[str] = []  # the latest executableCode's call-N: a streamed answer's history has its result in the next content
    at, previous = 0, ""  # the turn's first content, and the role of the content before
    calls_here: list[tuple[str, str]] = []  # the turn's calls so far, and (below) its codes' call-N
    code_ids: list[str] = []
    for i, content in enumerate(raw):
        if not isinstance(content, dict):
            REFUSALS.malformed(f"contents[{i}]", "a content is not an object")
        role = content.get("role") or "user"
        parts = content.get("parts") or []
        if not isinstance(parts, list):
            REFUSALS.malformed(f"contents[{i}].parts", "parts is not a list")
        out: list[MessagePart] = []
        if not (role == previous == "model"):  # adjacent model contents are one turn (ONE_TURN_ROLES): places count from its first
            at, calls_here, code_ids = i, [], []
        previous = role
        if role != "model":
            last_code.clear()
        for j, part in enumerate(parts):
            where = f"contents[{i}].parts[{j}]"
            kind = part_kind(part, where)
            if kind is None or part.get("thought") is True:
                continue
            if kind == "text":
                last = out[-1] if out else None
                if last is not None and last["type"] == "text":
                    last["text"] += part["text"]
                elif part["text"]:
                    out.append({"type": "text", "text": part["text"]})
                continue
            turn = _Turn(i, j, calls_here, code_ids, last_code, open_calls, results, at)
            out.append(_history_part(kind, part, where, turn, ids, positions))
        if calls_here:
            open_calls = list(calls_here)
        messages.append({"role": "assistant" if role == "model" else role, "content": _content_of(out)})
    return messages, results


@dataclass(slots=True)
class _Turn:
    """Where a history part sits (content ``i``, part ``j``) and what the contents so far left open."""

    i: int
    j: int
    calls_here: list[tuple[str, str]]
    code_ids: list[str]
    last_code: list[str]
    open_calls: list[tuple[str, str]]
    results: list[tuple[int, int, str]]
    at: int  # the turn's first content: a streamed answer's history is a content per chunk, its places count from there


def _history_part(kind: str, part: dict[str, Any], where: str, turn: _Turn, ids: CallIds, positions: dict[str, str]) -> MessagePart:
    """One non-text part of a history content as a neutral part (a refusal for what has none)."""
    if kind == "functionCall":
        call_id, name, args = _history_call(part["functionCall"], f"{where}.functionCall", turn.at, len(turn.calls_here), ids, positions)
        turn.calls_here.append((call_id, name))
        return {"type": "tool_use", "toolCallId": call_id, "toolName": name, "toolInput": args}
    if kind == "functionResponse":
        result = _function_response(
            part["functionResponse"], f"{where}.functionResponse", f"{turn.i}:{turn.j}", ids, turn.open_calls, positions
        )
        turn.results.append((turn.i, turn.j, result["toolCallId"]))
        return result
    if kind in ("inlineData", "fileData"):
        return media_of(part[kind], kind, f"{where}.{kind}")
    if kind in code_execution.KINDS:
        code: MessagePart = _code_part(kind, part[kind], f"{where}.{kind}", turn.at, turn.code_ids, turn.last_code, ids, positions)
        return code
    REFUSALS.refuse("gemini.non_text", f"{where}.{kind}")


def _code_part(
    kind: str, value: Any, where: str, i: int, code_ids: list[str], last_code: list[str], ids: CallIds, positions: dict[str, str]
) -> Any:
    """A history's ``executableCode`` (its call-N by place) or ``codeExecutionResult`` (the latest code's call-N)."""
    if kind == "executableCode" or not last_code:
        place = f"{i}:x{len(code_ids)}"
        call_id = positions.get(place) or ids.assign(None, code_execution.TOOL)
        positions[place] = call_id
        code_ids.append(call_id)
        last_code[:] = [call_id]
    return code_execution.neutral_part(kind, value, where, last_code[0])


def _content_of(parts: list[MessagePart]) -> str | list[MessagePart]:
    """A message's neutral content: empty text dropped, text alone a string, nothing at all ``""``."""
    parts = [p for p in parts if p["type"] != "text" or p["text"]]
    if not parts:
        return ""
    first = parts[0]
    if len(parts) == 1 and first["type"] == "text":
        return first["text"]
    return parts


def _history_call(call: Any, where: str, i: int, k: int, ids: CallIds, positions: dict[str, str]) -> tuple[str, str, Any]:
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        REFUSALS.malformed(where, "a functionCall without a name")
    name, native = call["name"], call.get("id")
    args = call.get("args")
    args = {} if args is None else args
    place = f"{i}:{k}:{name}"
    if isinstance(native, str) and native and (found := ids.lookup(native)) is not None:
        return found, name, args
    if place in positions:
        return positions[place], name, args
    # Never answered in this run (an agent-built history): known by its id, else by its place from now on.
    call_id = ids.neutral(native, name) if isinstance(native, str) and native else ids.assign(None, name)
    positions[place] = call_id
    return call_id, name, args


def _function_response(
    resp: Any, where: str, at: str, ids: CallIds, open_calls: list[tuple[str, str]], positions: dict[str, str]
) -> ToolResultPart:
    if not isinstance(resp, dict) or not isinstance(resp.get("name"), str):
        REFUSALS.malformed(where, "a functionResponse without a name")
    media = response_parts(resp, where)  # Gemini 3's multimodal function response (multimodal)
    name, native = resp["name"], resp.get("id")
    call_id = ids.lookup(native) if isinstance(native, str) and native else None
    if call_id is None:
        for n, (open_id, open_name) in enumerate(open_calls):
            if open_name == name:
                call_id = open_id
                del open_calls[n]
                break
    else:
        open_calls[:] = [c for c in open_calls if c[0] != call_id]
    if call_id is None and isinstance(native, str) and native:
        call_id = ids.neutral(native, name)
    if call_id is None:  # a result answering no call of the history: known by its place
        place = f"result:{at}:{name}"
        call_id = positions.get(place) or ids.assign(None, name)
        positions[place] = call_id
    return {"type": "tool_result", "toolCallId": call_id, "toolName": name, "result": function_result(resp.get("response"), media)}


def _decode_tools(raw: Any) -> list[ToolDefinition]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        REFUSALS.malformed("tools", "tools is not a list")
    tools: list[ToolDefinition] = []
    for i, tool in enumerate(raw):
        if not isinstance(tool, dict):
            REFUSALS.malformed(f"tools[{i}]", "a tool is not an object")
        for key, value in tool.items():
            if key in grounding.SERVED_TOOLS and value is not None:
                tools.append(grounding.decode_builtin(key, value))
            elif key != "functionDeclarations" and value is not None:
                REFUSALS.refuse("gemini.builtin_tool", f"tools[{i}].{key}")
        for j, fn in enumerate(tool.get("functionDeclarations") or []):
            where = f"tools[{i}].functionDeclarations[{j}]"
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                REFUSALS.malformed(where, "a function declaration without a name")
            if fn.get("parameters") is not None and fn.get("parametersJsonSchema") is not None:
                REFUSALS.malformed(where, "both parameters and parametersJsonSchema (the API takes one)")
            schema = fn.get("parametersJsonSchema") if fn.get("parameters") is None else fn["parameters"]
            tools.append(tool_definition(fn["name"], dict(EMPTY_SCHEMA) if schema is None else schema, fn.get("description")))
    return tools


def rewrite_tool_result(body: bytes, ids: CallIds, call_id: str, text: str) -> bytes | None:
    """A fork's edited tool result: every functionResponse answering ``call_id`` gets a new ``response``.

    ``response`` must be an object: ``text`` that is a JSON object becomes that
    object, any other text ``{"result": text}`` (what google-genai sends for a
    function that returns a plain value). A multimodal response loses its media
    ``parts``: the edit stands for the whole result. None when no part answers the call.
    """
    data = loads_or_none(body)
    if not isinstance(data, dict) or not isinstance(data.get("contents"), list):
        return None
    try:
        _, results = _decode_contents(camel_request(data)["contents"], ids)
    except BlackboxUnsupportedError:
        return None
    targets = [(i, j) for i, j, found in results if found == call_id]
    if not targets:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    response = value if isinstance(value, dict) else {"result": text}
    for i, j in targets:
        part = data["contents"][i]["parts"][j]
        fn = part["functionResponse" if "functionResponse" in part else "function_response"]
        fn["response"] = response
        fn.pop("parts", None)  # the edit is the whole result the model sees: a screenshot beside the old one goes too
    return dumps(data).encode()
