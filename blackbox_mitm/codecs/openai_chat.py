"""The OpenAI chat-completions codec: ``POST …/chat/completions`` bodies <-> the cassette's neutral payloads.

Same functions as every codec (see ``base``). Decisions the spec leaves open:

* The leading ``system``/``developer`` messages become ``systemPrompt``, joined
  with ``SYSTEM_JOINER`` (a blank line, ``"\\n\\n"``); a system or developer
  message after the first other message stays in ``messages`` as role
  ``"system"``. Text parts are joined with ``""`` everywhere.
* Consecutive ``tool`` messages become one user turn of ``tool_result`` parts.
  A result's ``toolName`` comes from the assistant tool call with its id in the
  same request, else from the run's ``CallIds``, else it is ``""``.
* A tool without ``parameters`` gets ``inputSchema`` ``{"type": "object",
  "properties": {}}``, what the API says an absent schema means.
* A request field or param that is ``null`` counts as absent. ``refusal: ""``
  (in a response, a stream or the history) counts as no refusal, and empty
  ``content`` beside a refusal is not "content and a refusal".
* Refusals name the offending field as a JSON path. When the kind of an object
  is what is refused (a custom tool, an image part), the path ends in ``.type``;
  both ``max_tokens`` and ``max_completion_tokens`` name ``max_completion_tokens``.
* A body that is not a chat-completions body this codec can read (not JSON, a
  message that is not an object, an unknown role, a tool call without an id) is
  a ``BlackboxUnsupportedError`` naming the field, like a refusal; the API would
  reject most of them with a 400.
* Synthesized responses: id ``chatcmpl-bb<hash of the answer and its time>``,
  ``annotations: []``, zero usage with zeroed details, no ``system_fingerprint``
  nor ``service_tier``. Streams send text in fragments of ``FRAGMENT`` code
  points and ``"usage": null`` on every chunk only when usage was asked for.
* ``aggregate_stream`` merges deltas the way the SDK's accumulator does, so a
  recorded stream is refused exactly when the same answer sent whole would be.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, NoReturn

import orjson

from blackbox_mitm.cassette.payloads import tool_calls_of
from blackbox_mitm.codecs.base import (
    STOP_LENGTH,
    STOP_REFUSAL,
    CallIds,
    DecodedRequest,
    ErrorResponse,
    SseEvent,
    StreamIncomplete,
    load_json,
)
from blackbox_mitm.codecs.base import compact_json as _dumps
from blackbox_mitm.codecs.refusals import REFUSALS as _ALL_REFUSALS
from blackbox_mitm.codecs.refusals import refuse
from blackbox_mitm.codecs.sse import format_sse
from blackbox_mitm.errors import BlackboxUnsupportedError

__all__ = [
    "CREDENTIAL_HEADERS",
    "CREDENTIAL_QUERY",
    "DEFAULT_HOSTS",
    "ID_PREFIXES",
    "KEY_ENV_VARS",
    "NAME",
    "PARAMS",
    "PROVIDER",
    "REFUSALS",
    "RESPONSE_KEYS",
    "StreamIncomplete",
    "aggregate_stream",
    "decode_request",
    "decode_response",
    "encode_error",
    "encode_response",
    "encode_stream",
    "encode_stream_error",
    "is_stream_end",
    "matches",
    "normalize_answer",
    "rewrite_tool_result",
    "speaks_for",
]

NAME = "openai"
PROVIDER = "openai"
DEFAULT_HOSTS: tuple[str, ...] = ("api.openai.com",)
CREDENTIAL_HEADERS: tuple[str, ...] = ("authorization", "api-key")  # api-key: Azure OpenAI
CREDENTIAL_QUERY: tuple[str, ...] = ("api-key", "api_key")
KEY_ENV_VARS: tuple[str, ...] = ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "OPENROUTER_API_KEY")
ID_PREFIXES: tuple[str, ...] = ("call_", "chatcmpl-", "resp_")
RESPONSE_KEYS: tuple[str, ...] = (
    "usage",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "prompt_tokens_details",
    "completion_tokens_details",
    "finish_reason",
    "system_fingerprint",
    "service_tier",
    "choices",
    "created",
    "logprobs",
    "tool_calls",
    "tool_call_id",
)
PATH_SUFFIXES: tuple[str, ...] = ("/chat/completions",)
# Paths of OpenAI's API that are not chat completions, for the shape of an error.
_API_PATHS: tuple[str, ...] = ("/completions", "/embeddings", "/models", "/v1/traces", "/moderations", "/files", "/audio")

SYSTEM_JOINER = "\n\n"
FRAGMENT = 64
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

# Request controls that are compared, wire name -> neutral name, in the spec's order.
PARAMS: tuple[tuple[str, str], ...] = (
    ("max_tokens", "maxTokens"),
    ("max_completion_tokens", "maxTokens"),
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("tool_choice", "toolChoice"),
    ("response_format", "responseFormat"),
    ("stop", "stop"),
    ("parallel_tool_calls", "parallelToolCalls"),
    ("seed", "seed"),
    ("reasoning_effort", "reasoningEffort"),
    ("presence_penalty", "presencePenalty"),
    ("frequency_penalty", "frequencyPenalty"),
    ("logit_bias", "logitBias"),
    ("logprobs", "logprobs"),
    ("top_logprobs", "topLogprobs"),
    ("verbosity", "verbosity"),
    ("prediction", "prediction"),
    ("modalities", "modalities"),
)

REFUSALS = tuple(r for r in _ALL_REFUSALS if r.provider == PROVIDER)

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


# --- small helpers -----------------------------------------------------------------


def _loads(body: bytes, what: str) -> Any:
    return load_json(body, what, PROVIDER)


def _malformed(path: str, what: str) -> NoReturn:
    raise BlackboxUnsupportedError(path, f"{what}; not a chat.completions body Blackbox can read", provider=PROVIDER)


def _given(obj: dict[str, Any], key: str) -> bool:
    return obj.get(key) is not None


def _refusal_text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _text_of(content: Any, path: str, *, assistant: bool = False) -> str:
    """A message's text: a string as is, text parts joined with ``""``; anything else is refused."""
    if isinstance(content, str):
        return content
    if content is None and assistant:
        return ""
    if not isinstance(content, list):
        _malformed(path, "content is neither a string nor a list of parts")
    texts: list[str] = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "refusal" and assistant:
            refuse("openai.refusal_history", f"{path}[{j}].type")
        elif isinstance(kind, str) and kind != "text":
            refuse("openai.image_content", f"{path}[{j}].type")
        else:
            _malformed(f"{path}[{j}]", "a content part is not a text part")
    return "".join(texts)


def _arguments(raw: Any, path: str) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            pass
    refuse("openai.tool_arguments", path)


def _function_call(call: Any, path: str) -> tuple[str | None, str, Any]:
    """(native id, name, parsed arguments) of one function tool call, in a response or the history."""
    if not isinstance(call, dict):
        _malformed(path, "a tool call is not an object")
    if (call.get("type") or "function") != "function":
        refuse("openai.custom_tool_call", f"{path}.type")
    fn = call.get("function")
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        _malformed(f"{path}.function", "a tool call without a function name")
    native = call.get("id")
    return (
        (native if isinstance(native, str) and native else None),
        fn["name"],
        _arguments(fn.get("arguments"), f"{path}.function.arguments"),
    )


# --- which requests ------------------------------------------------------------------


def matches(method: str, path: str, query: str) -> bool:
    """``POST …/chat/completions`` (Azure's ``/openai/deployments/x/chat/completions`` too)."""
    return method == "POST" and path.rstrip("/").endswith(PATH_SUFFIXES)


def speaks_for(path: str) -> bool:
    p = path.rstrip("/")
    return "/chat/" in p or p.endswith(_API_PATHS) or "/v1/responses" in p


# --- requests ------------------------------------------------------------------------


def decode_request(body: bytes, ids: CallIds, *, path: str = "", query: str = "") -> DecodedRequest:
    """A chat-completions request body -> its neutral ``model_input`` (refused fields raise)."""
    req = _loads(body, "request")
    if not isinstance(req, dict):
        raise BlackboxUnsupportedError("body", "the request body is not a JSON object", provider=PROVIDER)
    params = _decode_params(req)
    system, messages = _decode_messages(req.get("messages"), ids)
    model_input: dict[str, Any] = {"messages": messages, "tools": _decode_tools(req.get("tools"))}
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
    return DecodedRequest(PROVIDER, model_input, model=model, stream=stream, include_usage=include_usage)


def _decode_params(req: dict[str, Any]) -> dict[str, Any]:
    for key, row_id in (("audio", "openai.audio"), ("functions", "openai.functions"), ("function_call", "openai.functions")):
        if _given(req, key):
            refuse(row_id, key)
    if _given(req, "web_search_options"):
        refuse("openai.web_search_options", "web_search_options")
    n = req.get("n")
    if isinstance(n, int) and n > 1:
        refuse("openai.n", "n", value=n)
    if _given(req, "max_tokens") and _given(req, "max_completion_tokens"):
        refuse(
            "openai.both_max_tokens",
            "max_completion_tokens",
            value={"max_tokens": req["max_tokens"], "max_completion_tokens": req["max_completion_tokens"]},
        )
    params: dict[str, Any] = {}
    for wire, neutral in PARAMS:
        if _given(req, wire):
            params[neutral] = req[wire]
    if req.get("stream") is True:
        params["stream"] = True
    return params


def _decode_tools(raw: Any) -> list[dict[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        _malformed("tools", "tools is not a list")
    tools: list[dict[str, Any]] = []
    for i, tool in enumerate(raw):
        path = f"tools[{i}]"
        if not isinstance(tool, dict):
            _malformed(path, "a tool is not an object")
        if (tool.get("type") or "function") != "function":
            refuse("openai.custom_tool", f"{path}.type")
        fn = tool.get("function")
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            _malformed(f"{path}.function", "a function tool without a name")
        if fn.get("strict") is True:
            refuse("openai.strict_tool", f"{path}.function.strict")
        entry: dict[str, Any] = {"name": fn["name"]}
        if _given(fn, "description"):
            entry["description"] = fn["description"]
        entry["inputSchema"] = fn["parameters"] if _given(fn, "parameters") else dict(EMPTY_SCHEMA)
        tools.append(entry)
    return tools


def _decode_messages(raw: Any, ids: CallIds) -> tuple[str | None, list[dict[str, Any]]]:
    if not isinstance(raw, list):
        _malformed("messages", "messages is not a list")
    names: dict[str, str] = {}  # native tool-call id -> tool name, from this request's assistant turns
    system: list[str] = []
    out: list[dict[str, Any]] = []
    results: list[dict[str, Any]] | None = None  # the user turn that consecutive tool messages fill
    leading = True
    for i, msg in enumerate(raw):
        path = f"messages[{i}]"
        if not isinstance(msg, dict):
            _malformed(path, "a message is not an object")
        role = msg.get("role")
        if role == "function":  # the legacy functions API's result message (it always has a name)
            refuse("openai.function_call_message", f"{path}.role")
        if _given(msg, "name"):
            refuse("openai.message_name", f"{path}.name")
        if role in ("system", "developer"):
            text = _text_of(msg.get("content"), f"{path}.content")
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
            out.append({"role": "user", "content": _text_of(msg.get("content"), f"{path}.content")})
        elif role == "assistant":
            out.append(_assistant_turn(msg, path, ids, names))
        else:
            _malformed(f"{path}.role", f"unknown role {role!r}")
    return (SYSTEM_JOINER.join(system) if system else None), out


def _assistant_turn(msg: dict[str, Any], path: str, ids: CallIds, names: dict[str, str]) -> dict[str, Any]:
    if _refusal_text(msg.get("refusal")) is not None:
        refuse("openai.refusal_history", f"{path}.refusal")
    if _given(msg, "audio"):
        refuse("openai.audio_response", f"{path}.audio")
    if _given(msg, "function_call"):
        refuse("openai.function_call_message", f"{path}.function_call")
    text = _text_of(msg.get("content"), f"{path}.content", assistant=True)
    calls = msg.get("tool_calls")
    if not calls:
        return {"role": "assistant", "content": text}
    if not isinstance(calls, list):
        _malformed(f"{path}.tool_calls", "tool_calls is not a list")
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for j, call in enumerate(calls):
        native, name, tool_input = _function_call(call, f"{path}.tool_calls[{j}]")
        if native is None:
            _malformed(f"{path}.tool_calls[{j}].id", "a tool call in the history has no id")
        names[native] = name
        parts.append({"type": "tool_use", "toolCallId": ids.neutral(native, name), "toolName": name, "toolInput": tool_input})
    return {"role": "assistant", "content": parts}


def _tool_result(msg: dict[str, Any], path: str, ids: CallIds, names: dict[str, str]) -> dict[str, Any]:
    native = msg.get("tool_call_id")
    if not isinstance(native, str) or not native:
        _malformed(f"{path}.tool_call_id", "a tool message without a tool_call_id")
    result = _text_of(msg.get("content"), f"{path}.content")
    name = names.get(native)
    call_id = ids.neutral(native, name)
    name = name if name is not None else ids.name_of(call_id)
    return {"type": "tool_result", "toolCallId": call_id, "toolName": name or "", "result": result}


# --- responses -----------------------------------------------------------------------


def decode_response(body: bytes | Mapping[str, Any], ids: CallIds, request: DecodedRequest) -> dict[str, Any]:
    """A chat.completion body (or the object ``aggregate_stream`` built) -> its neutral ``model_output``."""
    resp = dict(body) if isinstance(body, Mapping) else _loads(body, "response")
    choices = resp.get("choices") if isinstance(resp, dict) else None
    if not isinstance(choices, list) or not choices:
        _malformed("choices", "a response without choices")
    if len(choices) > 1:
        refuse("openai.choices", "choices")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        _malformed("choices[0].message", "a choice without a message")
    at = "choices[0].message"
    if _given(choice, "logprobs"):
        refuse("openai.logprobs_response", "choices[0].logprobs")
    if message.get("annotations"):
        refuse("openai.logprobs_response", f"{at}.annotations")
    if _given(message, "audio"):
        refuse("openai.audio_response", f"{at}.audio")
    if _given(message, "function_call"):
        refuse("openai.function_call_message", f"{at}.function_call")
    finish = choice.get("finish_reason")
    if finish == "content_filter":
        refuse("openai.content_filter", "choices[0].finish_reason", value=finish)
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        _malformed(f"{at}.content", "content is neither a string nor null")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        _malformed(f"{at}.tool_calls", "tool_calls is not a list")
    calls = [_function_call(call, f"{at}.tool_calls[{j}]") for j, call in enumerate(raw_calls)]

    refusal = _refusal_text(message.get("refusal"))
    if refusal is not None:
        if content:
            refuse("openai.content_and_refusal", f"{at}.content")
        if calls:
            refuse("openai.refusal_mixed", f"{at}.tool_calls")
        if finish != "stop":
            refuse("openai.refusal_mixed", "choices[0].finish_reason", value=finish)
        return {"type": "final_answer", "text": refusal, "stop": STOP_REFUSAL}

    if calls:
        if finish not in ("tool_calls", "length"):
            refuse("openai.tool_calls_finish", "choices[0].finish_reason", value=finish)
        if content == "":
            refuse("openai.null_content", f"{at}.content")
        out: dict[str, Any] = {
            "type": "tool_calls",
            "calls": [{"toolCallId": ids.assign(native, name), "toolName": name, "toolInput": args} for native, name, args in calls],
        }
        if content:
            out["text"] = content
    else:
        if content is None:
            refuse("openai.null_content", f"{at}.content")
        if finish not in ("stop", "length"):
            refuse("openai.finish_reason", "choices[0].finish_reason", value=finish)
        out = {"type": "final_answer", "text": content}
    if finish == "length":
        out["stop"] = STOP_LENGTH
    return out


def _completion_id(output: dict[str, Any], created_ms: int) -> str:
    digest = hashlib.sha256(f"{created_ms}:{json.dumps(output, sort_keys=True)}".encode()).hexdigest()
    return f"chatcmpl-bb{digest[:24]}"


def _message_of(output: Any, ids: CallIds) -> tuple[str | None, str | None, list[dict[str, Any]], str]:
    """(content, refusal, wire tool calls, finish_reason) for a neutral model_output."""
    if not isinstance(output, dict):
        raise ValueError(f"a model_output must be an object, not {type(output).__name__}")
    kind, stop = output.get("type"), output.get("stop")
    if kind == "final_answer":
        text = output.get("text")
        if not isinstance(text, str):
            raise ValueError("a final_answer model_output has no text")
        if stop == STOP_REFUSAL:
            return None, text, [], "stop"
        return text, None, [], STOP_LENGTH if stop == STOP_LENGTH else "stop"
    if kind in ("tool_calls", "tool_call"):
        calls: list[dict[str, Any]] = []
        for call in tool_calls_of(output):
            call_id, name = call.get("toolCallId"), call.get("toolName")
            if not isinstance(call_id, str) or not isinstance(name, str):
                raise ValueError("a tool call in the model_output has no toolCallId or toolName")
            served = ids.served_id(call_id, "call_")
            calls.append({"id": served, "type": "function", "function": {"name": name, "arguments": _dumps(call.get("toolInput"))}})
        if not calls:
            raise ValueError("a tool_calls model_output without calls")
        text = output.get("text")
        return (text if isinstance(text, str) and text else None), None, calls, STOP_LENGTH if stop == STOP_LENGTH else "tool_calls"
    raise ValueError(f"not a model_output: type {kind!r}")


def _zero_usage() -> dict[str, Any]:
    return {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "total_tokens": 0,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def encode_response(output: dict[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> dict[str, Any]:
    """A neutral model_output -> a chat.completion body with our ids, the request's model and zero usage."""
    content, refusal, calls, finish = _message_of(output, ids)
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal, "annotations": []}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": _completion_id(output, created_ms),
        "object": "chat.completion",
        "created": created_ms // 1000,
        "model": request.model or "",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": _zero_usage(),
    }


def _pieces(text: str) -> list[str]:
    return [text[i : i + FRAGMENT] for i in range(0, len(text), FRAGMENT)]


def encode_stream(output: dict[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> bytes:
    """A neutral model_output -> a ``chat.completion.chunk`` SSE body ending in ``data: [DONE]``."""
    content, refusal, calls, finish = _message_of(output, ids)
    head = {
        "id": _completion_id(output, created_ms),
        "object": "chat.completion.chunk",
        "created": created_ms // 1000,
        "model": request.model or "",
    }
    usage: dict[str, Any] = {"usage": None} if request.include_usage else {}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}], **usage}

    # "" in the first delta, not null, is what makes an accumulator's content a string.
    chunks = [chunk({"role": "assistant", "content": None if content is None else "", "refusal": None if refusal is None else ""})]
    chunks += [chunk({"content": piece}) for piece in _pieces(content or "")]
    chunks += [chunk({"refusal": piece}) for piece in _pieces(refusal or "")]
    for k, call in enumerate(calls):
        fn = call["function"]
        # id, type and name exactly once: accumulators concatenate every string they see again.
        chunks.append(
            chunk({"tool_calls": [{"index": k, "id": call["id"], "type": "function", "function": {"name": fn["name"], "arguments": ""}}]})
        )
        chunks += [chunk({"tool_calls": [{"index": k, "function": {"arguments": piece}}]}) for piece in _pieces(fn["arguments"])]
    chunks.append(chunk({}, finish))
    if request.include_usage:
        chunks.append({**head, "choices": [], "usage": _zero_usage()})
    return format_sse([*(SseEvent(None, _dumps(c)) for c in chunks), SseEvent(None, "[DONE]")])


# --- recorded streams ----------------------------------------------------------------


def _new_choice(index: int) -> dict[str, Any]:
    return {
        "index": index,
        "message": {"role": "assistant", "content": None, "refusal": None},
        "calls": {},
        "logprobs": None,
        "finish_reason": None,
    }


def _merge_choice(state: dict[str, Any], choice: dict[str, Any]) -> None:
    delta = choice.get("delta") or {}
    message = state["message"]
    for key in ("content", "refusal"):
        if isinstance(delta.get(key), str):
            message[key] = (message[key] or "") + delta[key]
    for key in ("audio", "function_call"):  # kept only so that decode_response refuses them
        if delta.get(key) is not None:
            message.setdefault(key, delta[key])
    if delta.get("annotations"):
        message.setdefault("annotations", []).extend(delta["annotations"])
    for fragment in delta.get("tool_calls") or []:
        entry = state["calls"].setdefault(fragment.get("index", 0), {"id": None, "type": None, "function": {"name": None, "arguments": ""}})
        for key in ("id", "type"):
            if entry[key] is None and fragment.get(key):
                entry[key] = fragment[key]
        fn = fragment.get("function") or {}
        if entry["function"]["name"] is None and fn.get("name"):
            entry["function"]["name"] = fn["name"]
        if isinstance(fn.get("arguments"), str):
            entry["function"]["arguments"] += fn["arguments"]
    logprobs = choice.get("logprobs")
    if logprobs is not None:
        merged = state["logprobs"] = state["logprobs"] or {}
        for key, value in logprobs.items() if isinstance(logprobs, dict) else [("content", logprobs)]:
            if isinstance(value, list):
                merged[key] = (merged.get(key) or []) + value
            else:
                merged.setdefault(key, value)
    if choice.get("finish_reason"):
        state["finish_reason"] = choice["finish_reason"]


def is_stream_end(event: SseEvent) -> bool:
    """``data: [DONE]``, or an error chunk: no later event counts (``aggregate_stream`` names the error)."""
    data = event.data.strip()
    if event.event == "error" or data == "[DONE]":
        return True
    if not (data.startswith("{") and '"error"' in data):
        return False
    try:
        return isinstance(orjson.loads(data).get("error"), dict)
    except (orjson.JSONDecodeError, AttributeError):
        return False


def aggregate_stream(events: list[SseEvent]) -> dict[str, Any]:
    """A recorded chunk stream -> the equivalent non-streaming chat.completion object."""
    head: dict[str, Any] = {}
    states: dict[int, dict[str, Any]] = {}
    usage: Any = None
    done = False
    for n, event in enumerate(events):
        data = event.data.strip()
        if data.startswith("[DONE]"):
            done = True
            break
        if not data:
            continue
        try:
            chunk = json.loads(data)
        except ValueError as exc:
            raise StreamIncomplete(f"stream event {n} is not JSON: the call did not complete") from exc
        if not isinstance(chunk, dict):
            raise StreamIncomplete(f"stream event {n} is not a JSON object: the call did not complete")
        if event.event == "error" or chunk.get("error"):
            error = chunk.get("error") if isinstance(chunk.get("error"), dict) else None
            detail = error.get("message") if error else data
            raise StreamIncomplete(f"the stream carried an error ({detail}): the call did not complete", error=error)
        if not head:
            head = {key: chunk.get(key) for key in ("id", "created", "model")}
        if chunk.get("usage") is not None:
            usage = chunk["usage"]
        try:
            for choice in chunk.get("choices") or []:
                index = choice.get("index", 0)
                _merge_choice(states.setdefault(index, _new_choice(index)), choice)
        except (AttributeError, TypeError) as exc:
            raise StreamIncomplete(f"stream event {n} is malformed ({exc}): the call did not complete") from exc
    if not done:
        raise StreamIncomplete("the stream ended without data: [DONE]: the call did not complete")
    if not states or any(s["finish_reason"] is None for s in states.values()):
        raise StreamIncomplete("the stream has no finish_reason: the call did not complete")
    choices = []
    for index in sorted(states):
        state = states[index]
        message = state["message"]
        if state["calls"]:
            message["tool_calls"] = [{**c, "type": c["type"] or "function"} for _, c in sorted(state["calls"].items())]
        choices.append({"index": index, "message": message, "logprobs": state["logprobs"], "finish_reason": state["finish_reason"]})
    return {**head, "object": "chat.completion", "choices": choices, "usage": usage}


# --- errors and user-written answers -------------------------------------------------


def encode_error(message: str, *, status: int = 400, error_type: str | None = None) -> ErrorResponse:
    """An OpenAI-shaped error the SDKs raise as their status's error class, and never retry."""
    kind = error_type or _ERROR_TYPES.get(status) or ("server_error" if status >= 500 else "invalid_request_error")
    body = _dumps({"error": {"message": message, "type": kind, "param": None, "code": "blackbox"}}).encode()
    request_id = "req_bb" + hashlib.sha256(body + f"\0{status}".encode()).hexdigest()[:24]
    headers = {"content-type": "application/json", "x-should-retry": "false", "x-request-id": request_id}
    return ErrorResponse(status=status, headers=headers, body=body)


def encode_stream_error(message: str) -> bytes:
    """The in-stream error the SDK raises as an ``APIError``: a ``data:`` line carrying ``{"error": …}``."""
    error = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": "blackbox"}}
    return format_sse([SseEvent(None, _dumps(error))])


def normalize_answer(answer: Any, ids: CallIds) -> dict[str, Any] | None:
    """An OpenAI-shaped answer for ``fork --response`` -> a neutral model_output with fresh call-N ids.

    Accepts an assistant message (``{"content", "tool_calls"}``, with or without
    ``role``) or a whole chat.completion body. Returns None for any other shape,
    so that another codec can try; raises ValueError when it holds neither text
    nor a tool call. ``arguments`` may be a JSON string or the value itself.
    """
    if not isinstance(answer, dict) or "type" in answer:
        return None
    finish = None
    if "choices" in answer:
        choices = answer["choices"]
        if not isinstance(choices, list) or len(choices) != 1 or not isinstance(choices[0], dict):
            raise ValueError("an answer with choices must have exactly one choice")
        message, finish = choices[0].get("message"), choices[0].get("finish_reason")
        if not isinstance(message, dict):
            raise ValueError("the answer's choice has no message")
    elif any(key in answer for key in ("content", "tool_calls", "refusal")):
        message = answer
    else:
        return None
    if message.get("role", "assistant") != "assistant":
        raise ValueError(f"an answer is an assistant message, not role {message.get('role')!r}")
    content = message.get("content")
    if isinstance(content, list):
        if any(not isinstance(p, dict) or p.get("type") != "text" for p in content):
            return None  # blocks such as tool_use: not an OpenAI message
        content = "".join(str(p.get("text", "")) for p in content)
    elif content is not None and not isinstance(content, str):
        raise ValueError("the answer's content must be a string")
    calls = [_answer_call(call) for call in message.get("tool_calls") or []]
    refusal = _refusal_text(message.get("refusal"))
    out: dict[str, Any]
    if calls:
        out = {
            "type": "tool_calls",
            "calls": [{"toolCallId": ids.assign(None, name), "toolName": name, "toolInput": args} for name, args in calls],
        }
        if content:
            out["text"] = content
    elif refusal is not None and not content:
        return {"type": "final_answer", "text": refusal, "stop": STOP_REFUSAL}
    elif content is not None:
        out = {"type": "final_answer", "text": content}
    else:
        raise ValueError("the answer holds neither text nor a tool call")
    if finish == "length":
        out["stop"] = STOP_LENGTH
    return out


def _answer_call(call: Any) -> tuple[str, Any]:
    fn = call.get("function", call) if isinstance(call, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise ValueError("a tool call in the answer needs function.name")
    args = fn.get("arguments", {})
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError as exc:
            raise ValueError(f"the arguments of tool call {fn['name']!r} are not JSON: {exc}") from exc
    return fn["name"], args


def rewrite_tool_result(body: bytes, ids: CallIds, call_id: str, text: str) -> bytes | None:
    """A fork's edited tool result: what the model sees for ``call_id`` becomes ``text``.

    Every ``tool`` message answering that call (in this request's history) gets
    the new content; None when the request carries no such message.
    """
    try:
        req = json.loads(body)
    except ValueError:
        return None
    changed = False
    for msg in (req.get("messages") or []) if isinstance(req, dict) else []:
        if isinstance(msg, dict) and msg.get("role") == "tool" and ids.lookup(str(msg.get("tool_call_id"))) == call_id:
            msg["content"] = text
            changed = True
    return json.dumps(req, ensure_ascii=False, separators=(",", ":")).encode() if changed else None
