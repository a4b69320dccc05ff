"""The Anthropic Messages codec: ``POST /v1/messages`` bodies <-> the cassette's neutral payloads.

Plain Python, no mitmproxy. The functions are the ones every codec has (see
``base``); what is Anthropic-specific, and the choices the spec leaves open, is
written down here:

Requests (``decode_request``)
    * ``system`` (a string or text blocks, joined with "") is the ``systemPrompt``.
    * A message keeps its role as sent (``user``, ``assistant``, ``system``).
      Its blocks keep their order; adjacent text is joined, empty text is
      dropped (a replay drops empty text blocks, so the agent's next history
      cannot hold them), thinking blocks are dropped. A turn left with text
      alone is a plain string, a turn left with nothing is ``""``. Text after
      a tool_use in the history stays where it was sent: nothing is moved, so
      nothing the model saw is lost (such responses are refused, so only an
      agent that builds its own history sends it).
    * A tool_result's ``toolName`` comes from its tool_use in the same history,
      else from the run's ``CallIds``, else it is ``""``. Its content is kept
      as sent when a string, text blocks are joined into one string, and an
      absent content is ``""`` (the model sees an empty result either way).
    * Request controls that are ``null`` are treated as absent. Citations and
      ``cache_control`` on history blocks, and every field the spec does not
      compare, are dropped.

Responses (``decode_response``, ``aggregate_stream``)
    Refusals are checked in this order, so a response breaking several rules
    names the most useful one: block types (server tools, unknown blocks),
    then ``stop_reason``, then ``stop_details`` / ``container``, then the
    layout of text and tool calls (citations, several text blocks, text after a
    tool call, a ``stop_reason`` that does not fit the content). A stream is
    rebuilt into the Message it stands for and goes through the same checks;
    unknown delta types are ignored, as the SDK ignores them.

Fork edits (``rewrite_tool_result``)
    The replacement text becomes the tool_result's content and ``is_error`` is
    removed: a replacement is a result, never an error.

Synthesized answers (``encode_response``, ``encode_stream``, ``encode_error``)
    Ids are our own (``msg_bb…``, ``toolu_bb<N>``, ``req_bb…``) and derived from
    the content, so the same answer is the same bytes. The OpenAI-only
    ``"stop": "refusal"`` is written as ``stop_reason: "refusal"``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from blackbox_mitm.cassette.payloads import output_text, tool_calls_of
from blackbox_mitm.codecs.base import STOP_LENGTH, STOP_REFUSAL, CallIds, DecodedRequest, ErrorResponse, SseEvent, StreamIncomplete
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

NAME = "anthropic"
PROVIDER = "anthropic"
DEFAULT_HOSTS: tuple[str, ...] = ("api.anthropic.com",)
CREDENTIAL_HEADERS: tuple[str, ...] = ("x-api-key", "authorization")
CREDENTIAL_QUERY: tuple[str, ...] = ()
KEY_ENV_VARS: tuple[str, ...] = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
ID_PREFIXES: tuple[str, ...] = ("toolu_", "srvtoolu_", "msg_")
RESPONSE_KEYS: tuple[str, ...] = (
    "usage",
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "stop_reason",
    "stop_sequence",
    "stop_details",
    "tool_use_id",
)
PATH_SUFFIXES: tuple[str, ...] = ("/v1/messages",)

# Request controls the spec compares, native name -> neutral name.
PARAMS: tuple[tuple[str, str], ...] = (
    ("max_tokens", "maxTokens"),
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("top_k", "topK"),
    ("tool_choice", "toolChoice"),
    ("stop_sequences", "stopSequences"),
    ("output_config", "outputConfig"),
    ("thinking", "thinking"),
)
REFUSALS = tuple(r for r in _ALL_REFUSALS if r.provider == PROVIDER)
_THINKING = frozenset({"thinking", "redacted_thinking"})
_SERVER_BLOCKS = frozenset({"server_tool_use", "mcp_tool_use", "container_upload"})
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_JSON_FRAGMENT = 64  # input_json_delta fragment length in synthesized streams
_TEXT_FRAGMENT = 256  # text_delta length in synthesized streams


# --- which requests ------------------------------------------------------------------


def matches(method: str, path: str, query: str) -> bool:
    """``POST /v1/messages`` (Claude Code adds ``?beta=true``: the query is not looked at)."""
    return method == "POST" and path.rstrip("/").endswith(PATH_SUFFIXES)


def speaks_for(path: str) -> bool:
    """Anthropic's other endpoints (``/v1/messages/count_tokens``, ``/v1/models``) and Claude Code's own (``/api/…``)."""
    return "/messages" in path or "claude" in path or path.startswith("/api/")


# --- requests ------------------------------------------------------------------------


def decode_request(body: bytes, ids: CallIds, *, path: str = "", query: str = "") -> DecodedRequest:
    """A Messages request body -> ``DecodedRequest`` holding the neutral ``model_input``."""
    data = _load_object(body)
    if data.get("mcp_servers"):
        refuse("anthropic.server_tool", "mcp_servers")
    model_input: dict[str, Any] = {
        "messages": _decode_messages(data.get("messages"), ids),
        "tools": _decode_tools(data.get("tools")),
    }
    if "system" in data and data["system"] is not None:
        model_input["systemPrompt"] = _joined_text(data["system"], "system")
    model = data.get("model")
    if isinstance(model, str):
        model_input["model"] = model
    stream = data.get("stream") is True
    params = {neutral: data[native] for native, neutral in PARAMS if data.get(native) is not None}
    if stream:
        params["stream"] = True
    if params:
        model_input["params"] = params
    return DecodedRequest(provider=PROVIDER, model_input=model_input, model=model if isinstance(model, str) else None, stream=stream)


def _decode_messages(messages: Any, ids: CallIds) -> list[dict[str, Any]]:
    if not isinstance(messages, list):
        raise BlackboxUnsupportedError("messages", "expected a list of messages", provider=PROVIDER)
    names: dict[str, str] = {}  # tool_use id -> tool name, from this history
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise BlackboxUnsupportedError(f"messages[{i}]", "expected a message object", provider=PROVIDER)
        content = message.get("content")
        if isinstance(content, str):
            decoded: str | list[dict[str, Any]] = content
        elif isinstance(content, list):
            decoded = _decode_blocks(content, f"messages[{i}].content", ids, names)
        else:
            raise BlackboxUnsupportedError(f"messages[{i}].content", "expected a string or a list of content blocks", provider=PROVIDER)
        out.append({"role": message.get("role"), "content": decoded})
    return out


def _decode_blocks(blocks: list[Any], path: str, ids: CallIds, names: dict[str, str]) -> str | list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for j, block in enumerate(blocks):
        where = f"{path}[{j}]"
        kind = _kind(block)
        if kind == "text":
            text = _text_of(block, where)
            if parts and parts[-1]["type"] == "text":
                parts[-1]["text"] += text
            else:
                parts.append({"type": "text", "text": text})
        elif kind in _THINKING:
            continue
        elif kind == "tool_use":
            parts.append(_decode_tool_use(block, where, ids, names))
        elif kind == "tool_result":
            parts.append(_decode_tool_result(block, where, ids, names))
        elif _is_server_block(kind):
            refuse("anthropic.server_tool", where)
        else:
            refuse("anthropic.image_content", where)
    parts = [p for p in parts if p["type"] != "text" or p["text"]]
    if not parts:
        return ""
    if len(parts) == 1 and parts[0]["type"] == "text":
        return str(parts[0]["text"])
    return parts


def _decode_tool_use(block: dict[str, Any], where: str, ids: CallIds, names: dict[str, str]) -> dict[str, Any]:
    native, name = block.get("id"), block.get("name")
    if not isinstance(native, str) or not isinstance(name, str):
        raise BlackboxUnsupportedError(where, "a tool_use block needs a string id and name", provider=PROVIDER)
    if _server_caller(block):
        refuse("anthropic.server_tool", f"{where}.caller")
    names[native] = name
    return {"type": "tool_use", "toolCallId": ids.neutral(native, name), "toolName": name, "toolInput": block.get("input")}


def _decode_tool_result(block: dict[str, Any], where: str, ids: CallIds, names: dict[str, str]) -> dict[str, Any]:
    native = block.get("tool_use_id")
    if not isinstance(native, str):
        raise BlackboxUnsupportedError(f"{where}.tool_use_id", "a tool_result block needs a string tool_use_id", provider=PROVIDER)
    name = names.get(native)
    call_id = ids.neutral(native, name)
    if name is None:
        name = ids.name_of(call_id) or ""
    content = block.get("content")
    value = "" if content is None else _joined_text(content, f"{where}.content")
    key = "error" if block.get("is_error") is True else "result"
    return {"type": "tool_result", "toolCallId": call_id, "toolName": name, key: value}


def _decode_tools(tools: Any) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise BlackboxUnsupportedError("tools", "expected a list of tools", provider=PROVIDER)
    out = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise BlackboxUnsupportedError(f"tools[{i}]", "expected a tool object", provider=PROVIDER)
        if tool.get("type") not in (None, "custom"):
            refuse("anthropic.server_tool", f"tools[{i}].type")
        if tool.get("strict") is True:
            refuse("anthropic.strict_tool", f"tools[{i}].strict")
        if not isinstance(tool.get("name"), str) or "input_schema" not in tool:
            raise BlackboxUnsupportedError(f"tools[{i}]", "a client tool needs a name and an input_schema", provider=PROVIDER)
        neutral: dict[str, Any] = {"name": tool["name"]}
        if "description" in tool:
            neutral["description"] = tool["description"]
        neutral["inputSchema"] = tool["input_schema"]
        out.append(neutral)
    return out


def _joined_text(value: Any, path: str) -> str:
    """A string, or text blocks joined with "" (how text is split into blocks is not compared)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise BlackboxUnsupportedError(path, "expected a string or a list of text blocks", provider=PROVIDER)
    texts = []
    for k, block in enumerate(value):
        if not isinstance(block, dict) or block.get("type") != "text":
            refuse("anthropic.image_content", f"{path}[{k}]")
        texts.append(_text_of(block, f"{path}[{k}]"))
    return "".join(texts)


def _text_of(block: dict[str, Any], where: str) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        raise BlackboxUnsupportedError(f"{where}.text", "a text block needs a string text", provider=PROVIDER)
    return text


def _is_server_block(kind: Any) -> bool:
    return isinstance(kind, str) and (kind in _SERVER_BLOCKS or (kind.endswith("_tool_result") and kind != "tool_result"))


def _server_caller(block: dict[str, Any]) -> bool:
    """A tool_use called from a server tool's code (programmatic tool calling), not by the model directly."""
    caller = block.get("caller")
    return isinstance(caller, dict) and caller.get("type") not in (None, "direct")


# --- responses -----------------------------------------------------------------------


def decode_response(body: bytes | Mapping[str, Any], ids: CallIds, request: DecodedRequest) -> dict[str, Any]:
    """A Message body (or the object ``aggregate_stream`` built) -> the neutral ``model_output``."""
    data = dict(body) if isinstance(body, Mapping) else _load_object(body)
    content = data.get("content")
    if not isinstance(content, list):
        raise BlackboxUnsupportedError("content", "expected a list of content blocks", provider=PROVIDER)
    for i, block in enumerate(content):
        kind = _kind(block)
        if _is_server_block(kind):
            refuse("anthropic.server_tool_response", f"content[{i}]")
        if kind not in ("text", "tool_use", *_THINKING):
            refuse("anthropic.unknown_block", f"content[{i}]")
    stop_reason = data.get("stop_reason")
    if stop_reason == "refusal":
        refuse("anthropic.refusal", "stop_reason", value=stop_reason)
    if stop_reason == "stop_sequence":
        refuse("anthropic.stop_sequence", "stop_reason", value=stop_reason)
    if stop_reason == "model_context_window_exceeded":
        refuse("anthropic.context_window", "stop_reason", value=stop_reason)
    if stop_reason not in ("end_turn", "tool_use", "max_tokens"):
        refuse("anthropic.pause_turn", "stop_reason", value=stop_reason)
    for key in ("stop_details", "container"):
        if data.get(key) is not None:
            refuse("anthropic.citations", key)

    text: str | None = None
    tool_uses: list[tuple[dict[str, Any], str]] = []
    for i, block in enumerate(content):
        if block["type"] == "text":
            if block.get("citations"):
                refuse("anthropic.citations", f"content[{i}].citations")
            value = _text_of(block, f"content[{i}]")
            if not value:
                continue
            if text is not None or tool_uses:
                refuse("anthropic.text_blocks", f"content[{i}]")
            text = value
        elif block["type"] == "tool_use":
            if _server_caller(block):
                refuse("anthropic.server_tool_response", f"content[{i}].caller")
            name = block.get("name")
            if not isinstance(name, str):
                raise BlackboxUnsupportedError(f"content[{i}].name", "a tool_use block needs a string name", provider=PROVIDER)
            tool_uses.append((block, name))
    if (tool_uses and stop_reason == "end_turn") or (not tool_uses and stop_reason == "tool_use"):
        refuse("anthropic.tool_use_stop", "stop_reason", value=stop_reason)
    # call-N ids are handed out only once nothing is refused, in the order the model emitted them.
    output = _output(text, [_new_call(block, name, block.get("input"), ids) for block, name in tool_uses])
    if stop_reason == "max_tokens":
        output["stop"] = STOP_LENGTH
    return output


def _new_call(block: dict[str, Any], name: str, tool_input: Any, ids: CallIds) -> dict[str, Any]:
    """A tool call the model just made: it gets the run's next ``call-N``."""
    native = block.get("id")
    return {"toolCallId": ids.assign(native if isinstance(native, str) else None, name), "toolName": name, "toolInput": tool_input}


def _output(text: str | None, calls: list[dict[str, Any]]) -> dict[str, Any]:
    if not calls:
        return {"type": "final_answer", "text": text or ""}
    output: dict[str, Any] = {"type": "tool_calls", "calls": calls}
    if text:
        output["text"] = text
    return output


def is_stream_end(event: SseEvent) -> bool:
    """``message_stop``, or an ``error`` event: no later event counts (``aggregate_stream`` names the error)."""
    return event.event in ("message_stop", "error")


def aggregate_stream(events: list[SseEvent]) -> dict[str, Any]:
    """A recorded stream -> the equivalent non-streaming Message object (for ``decode_response``).

    Raises ``StreamIncomplete`` on an ``error`` event, on a malformed event, or when
    ``message_stop`` never came.
    """
    message: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    json_bufs: dict[int, str] = {}
    for n, ev in enumerate(events):
        try:
            data = json.loads(ev.data) if ev.data else {}
        except ValueError as exc:
            raise StreamIncomplete(f"stream event {n} ({ev.event}) is not JSON") from exc
        kind = ev.event or (data.get("type") if isinstance(data, dict) else None)
        if kind == "ping":
            continue
        if not isinstance(data, dict):
            raise StreamIncomplete(f"stream event {n} ({kind}) is not a JSON object")
        if kind == "error":
            error = data.get("error") if isinstance(data.get("error"), dict) else None
            detail = f"{error.get('type')}: {error.get('message')}" if error else ev.data
            raise StreamIncomplete(f"the stream ended with an error event ({detail})", error=error)
        if kind == "message_stop":
            if message is None:
                break
            for index, buf in json_bufs.items():
                try:
                    blocks[index]["input"] = json.loads(buf)
                except ValueError as exc:
                    raise StreamIncomplete(f"the tool input of content block {index} is not valid JSON") from exc
            message["content"] = [blocks[i] for i in sorted(blocks)]
            return message
        if kind == "message_start":
            start = data.get("message") or {}
            if not isinstance(start, dict):
                raise StreamIncomplete(f"stream event {n} (message_start) carries no message object")
            message = {**start, "content": []}
        elif message is None:
            raise StreamIncomplete(f"stream event {n} ({kind}) came before message_start")
        else:
            try:
                _apply_event(kind, data, message, blocks, json_bufs)
            except (KeyError, TypeError, AttributeError, ValueError) as exc:
                raise StreamIncomplete(f"stream event {n} ({kind}) is malformed: {exc!r}") from exc
    missing = "message_stop" if message is not None else "message_start"
    raise StreamIncomplete(f"the stream ended before {missing}: the call did not complete")


def _kind(block: Any) -> str | None:
    """A content block's type, when it has a string one."""
    kind = block.get("type") if isinstance(block, dict) else None
    return kind if isinstance(kind, str) else None


def _apply_event(
    kind: str | None, data: dict[str, Any], message: dict[str, Any], blocks: dict[int, dict[str, Any]], json_bufs: dict[int, str]
) -> None:
    if kind == "content_block_start":
        blocks[data["index"]] = dict(data["content_block"])
    elif kind == "content_block_delta":
        index = data["index"]
        block, delta = blocks[index], data["delta"]
        match delta.get("type"):
            case "text_delta":
                block["text"] = block.get("text", "") + delta["text"]
            case "input_json_delta":
                json_bufs[index] = json_bufs.get(index, "") + delta["partial_json"]
            case "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta["thinking"]
            case "signature_delta":
                block["signature"] = delta["signature"]
            case "citations_delta":
                block["citations"] = [*(block.get("citations") or []), delta["citation"]]
    elif kind == "message_delta":
        delta = data.get("delta") or {}
        for key in ("stop_reason", "stop_sequence", "stop_details"):
            message[key] = delta.get(key)
        if delta.get("container") is not None:
            message["container"] = delta["container"]
        usage = data.get("usage")
        if isinstance(usage, dict) and isinstance(message.get("usage"), dict):
            message["usage"] = {**message["usage"], **{k: v for k, v in usage.items() if v is not None}}


# --- synthesized answers -------------------------------------------------------------


def encode_response(output: dict[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> dict[str, Any]:
    """A neutral ``model_output`` -> a Message body every SDK accepts."""
    message = _message_head(output, request, created_ms)
    message["content"] = _blocks_of(output, ids)
    message["stop_reason"] = _stop_reason(output)
    return message


def encode_stream(output: dict[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> bytes:
    """A neutral ``model_output`` -> a complete SSE stream, an ``event:`` line on every event."""
    head = _message_head(output, request, created_ms)
    events = [_event("message_start", message={**head, "content": [], "stop_reason": None})]
    for index, block in enumerate(_blocks_of(output, ids)):
        if block["type"] == "text":
            events.append(_event("content_block_start", index=index, content_block={"type": "text", "text": ""}))
            for piece in _pieces(block["text"], _TEXT_FRAGMENT):
                events.append(_event("content_block_delta", index=index, delta={"type": "text_delta", "text": piece}))
        else:
            events.append(_event("content_block_start", index=index, content_block={**block, "input": {}}))
            for piece in _pieces(_dumps(block["input"]).decode(), _JSON_FRAGMENT):
                events.append(_event("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": piece}))
        events.append(_event("content_block_stop", index=index))
    events.append(_event("message_delta", delta={"stop_reason": _stop_reason(output), "stop_sequence": None}, usage={"output_tokens": 0}))
    events.append(_event("message_stop"))
    return format_sse(events)


def encode_error(message: str, *, status: int = 400, error_type: str | None = None) -> ErrorResponse:
    """An Anthropic-shaped error the SDKs raise at once (``x-should-retry: false``)."""
    kind = error_type or _ERROR_TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")
    request_id = "req_bb" + hashlib.sha256(f"{status}\0{kind}\0{message}".encode("utf-8", "surrogatepass")).hexdigest()[:24]
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}
    headers = {"content-type": "application/json", "x-should-retry": "false", "request-id": request_id}
    return ErrorResponse(status=status, headers=headers, body=_dumps(body))


def encode_stream_error(message: str) -> bytes:
    """The ``event: error`` the SDKs raise as an ``APIStatusError``."""
    return format_sse([_event("error", error={"type": "invalid_request_error", "message": message})])


def _message_head(output: dict[str, Any], request: DecodedRequest, created_ms: int) -> dict[str, Any]:
    digest = hashlib.sha256(_dumps(output) + f"\0{created_ms}".encode()).hexdigest()[:24]
    return {
        "id": f"msg_bb{digest}",
        "type": "message",
        "role": "assistant",
        "model": request.model or "",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "stop_details": None,
        "container": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


def _blocks_of(output: dict[str, Any], ids: CallIds) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    text = output_text(output)
    if text:
        blocks.append({"type": "text", "text": text})
    for call in tool_calls_of(output):
        call_id = str(call.get("toolCallId"))
        served = ids.served_id(call_id, "toolu_")
        blocks.append({"type": "tool_use", "id": served, "name": call.get("toolName"), "input": call.get("toolInput")})
    return blocks


def _stop_reason(output: dict[str, Any]) -> str:
    stop = output.get("stop")
    if stop == STOP_LENGTH:
        return "max_tokens"
    if stop == STOP_REFUSAL:
        return "refusal"
    return "tool_use" if tool_calls_of(output) else "end_turn"


def _event(kind: str, **fields: Any) -> SseEvent:
    return SseEvent(kind, _dumps({"type": kind, **fields}).decode())


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# --- fork --response -----------------------------------------------------------------


def normalize_answer(answer: Any, ids: CallIds) -> dict[str, Any] | None:
    """A user-written Anthropic answer -> a neutral ``model_output``; None when it is not an Anthropic shape.

    Accepted: a list of content blocks, one block, ``{"content": [blocks]}`` (with or
    without ``"role": "assistant"``), or a whole Message body. Text blocks are joined
    and come before the tool calls; thinking blocks are dropped.
    """
    stop_reason = None
    if isinstance(answer, dict) and answer.get("type") in ("text", "tool_use"):
        blocks: Any = [answer]
    elif isinstance(answer, dict):
        if "choices" in answer or "tool_calls" in answer or not isinstance(answer.get("content"), list):
            return None
        if answer.get("role", "assistant") != "assistant":
            return None
        blocks = answer["content"]
        stop_reason = answer.get("stop_reason")
    elif isinstance(answer, list):
        if not all(isinstance(b, dict) and "type" in b for b in answer):
            return None  # not content blocks (another provider's list of parts)
        blocks = answer
    else:
        return None
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for i, block in enumerate(blocks):
        kind = _kind(block)
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use" and isinstance(block.get("name"), str):
            calls.append(_new_call(block, block["name"], block.get("input", {}), ids))
        elif kind not in _THINKING:
            raise ValueError(f"content[{i}]: an answer holds text and tool_use blocks (with a string text / name), got {block!r}")
    text = "".join(texts)
    if not text and not calls:
        raise ValueError("the answer holds neither text nor a tool call")
    output = _output(text, calls)
    if stop_reason == "max_tokens":
        output["stop"] = STOP_LENGTH
    return output


# --- fork: an edited tool result -----------------------------------------------------


def rewrite_tool_result(body: bytes, ids: CallIds, call_id: str, text: str) -> bytes | None:
    """A fork's edited tool result: what the model sees for ``call_id`` becomes ``text``.

    Every tool_result block answering that call in the request's history gets the
    new content, and loses ``is_error`` (a replacement is a result). None when the
    request carries no such block, or is not a JSON object.
    """
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    messages = data.get("messages") if isinstance(data, dict) else None
    changed = False
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result" and ids.lookup(str(block.get("tool_use_id"))) == call_id:
                block["content"] = text
                block.pop("is_error", None)
                changed = True
    return _dumps(data) if changed else None


# --- JSON ----------------------------------------------------------------------------


def _load_object(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BlackboxUnsupportedError("body", f"not JSON ({exc})", provider=PROVIDER) from exc
    if not isinstance(data, dict):
        raise BlackboxUnsupportedError("body", f"expected a JSON object, got {type(data).__name__}", provider=PROVIDER)
    return data


def _dumps(value: Any) -> bytes:
    """Compact JSON as the SDKs send it; ASCII-escaped only when a lone surrogate could not be UTF-8."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()
