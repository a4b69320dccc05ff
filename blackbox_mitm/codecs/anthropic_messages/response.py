"""Messages answers: a Message -> the neutral ``model_output`` and back; errors; ``fork --response``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from blackbox_mitm.cassette.payloads import (
    ModelOutput,
    ReasoningPart,
    Tokens,
    ToolCall,
    output_text,
    reasoning_of,
    tokens,
    tokens_of,
    tool_calls_of,
)
from blackbox_mitm.codecs.anthropic_messages import PROVIDER, REFUSALS, THINKING, server_tools
from blackbox_mitm.codecs.anthropic_messages.fields import block_kind, text_of
from blackbox_mitm.codecs.base import STOP_LENGTH, STOP_PAUSE, STOP_REFUSAL, CallIds, DecodedRequest, ErrorResponse
from blackbox_mitm.codecs.common.ids import digest
from blackbox_mitm.codecs.common.jsonio import dumps, dumps_bytes, load_object
from blackbox_mitm.errors import BlackboxUnsupportedError

__all__ = [
    "blocks_of",
    "decode_response",
    "encode_error",
    "encode_response",
    "message_head",
    "normalize_answer",
    "stop_reason_of",
    "usage_of",
]

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


def decode_response(body: bytes | Mapping[str, Any], ids: CallIds, request: DecodedRequest) -> ModelOutput:
    """A Message body (or the object ``aggregate_stream`` built) -> the neutral ``model_output``."""
    data = dict(body) if isinstance(body, Mapping) else load_object(body, "response", PROVIDER)
    content = data.get("content")
    if not isinstance(content, list):
        raise BlackboxUnsupportedError("content", "expected a list of content blocks", provider=PROVIDER)
    stop_reason = data.get("stop_reason")
    _refuse_unsupported(data, content, stop_reason)
    if server_tools.is_rich_answer(content):
        return _with_extras(_rich_output(content, stop_reason, ids), data, content)
    if data.get("container") is not None:
        REFUSALS.refuse("anthropic.citations", "container")
    text, tool_uses = _text_and_tool_uses(content)
    if (tool_uses and stop_reason == "end_turn") or (not tool_uses and stop_reason == "tool_use"):
        REFUSALS.refuse("anthropic.tool_use_stop", "stop_reason", stop_reason)
    # call-N ids are handed out only once nothing is refused, in the order the model emitted them.
    output = _output(text, [_new_call(block, name, block.get("input"), ids) for block, name in tool_uses])
    _set_stop(output, stop_reason)
    return _with_extras(output, data, content)


def _set_stop(output: ModelOutput, stop_reason: Any) -> None:
    """A stop that is not the shape's default: max tokens, or a paused server-tool turn."""
    if stop_reason == "max_tokens":
        output["stop"] = STOP_LENGTH
    elif stop_reason == "pause_turn":
        output["stop"] = STOP_PAUSE


def _refuse_unsupported(data: dict[str, Any], content: list[Any], stop_reason: Any) -> None:
    """Refuse an answer a cassette cannot hold: a block of an unknown or refused kind, a stop reason other than
    ``end_turn``/``tool_use``/``max_tokens``, stop details."""
    for i, block in enumerate(content):
        kind = block_kind(block)
        if kind not in ("text", "tool_use", "container_upload", *server_tools.CALL_BLOCKS, *THINKING) and not server_tools.is_server_result(
            kind
        ):
            REFUSALS.refuse("anthropic.unknown_block", f"content[{i}]")
    if stop_reason == "refusal":
        REFUSALS.refuse("anthropic.refusal", "stop_reason", stop_reason)
    if stop_reason == "stop_sequence":
        REFUSALS.refuse("anthropic.stop_sequence", "stop_reason", stop_reason)
    if stop_reason == "model_context_window_exceeded":
        REFUSALS.refuse("anthropic.context_window", "stop_reason", stop_reason)
    if stop_reason not in ("end_turn", "tool_use", "max_tokens", "pause_turn"):
        REFUSALS.refuse("anthropic.unknown_stop", "stop_reason", stop_reason)
    if data.get("stop_details") is not None:
        REFUSALS.refuse("anthropic.citations", "stop_details")


def _text_and_tool_uses(content: list[Any]) -> tuple[str | None, list[tuple[dict[str, Any], str]]]:
    """A plain answer's one text and its tool_use blocks (each with its name), in order."""
    text: str | None = None
    tool_uses: list[tuple[dict[str, Any], str]] = []
    for i, block in enumerate(content):
        if block["type"] == "text":
            if block.get("citations"):
                REFUSALS.refuse("anthropic.citations", f"content[{i}].citations")
            value = text_of(block, f"content[{i}]")
            if not value:
                continue
            if text is not None or tool_uses:
                REFUSALS.refuse("anthropic.text_blocks", f"content[{i}]")
            text = value
        elif block["type"] == "tool_use":
            name = block.get("name")
            if not isinstance(name, str):
                raise BlackboxUnsupportedError(f"content[{i}].name", "a tool_use block needs a string name", provider=PROVIDER)
            tool_uses.append((block, name))
    return text, tool_uses


def _rich_output(content: list[dict[str, Any]], stop_reason: Any, ids: CallIds) -> ModelOutput:
    """An answer with server-side tool blocks or citations: every block kept, in order (``parts``)."""
    for i, block in enumerate(content):
        if block["type"] == "tool_use":
            if not isinstance(block.get("name"), str):
                raise BlackboxUnsupportedError(f"content[{i}].name", "a tool_use block needs a string name", provider=PROVIDER)
        elif block["type"] == "text":
            text_of(block, f"content[{i}]")
    has_calls = any(block["type"] == "tool_use" for block in content)
    if (has_calls and stop_reason == "end_turn") or (not has_calls and stop_reason == "tool_use"):
        REFUSALS.refuse("anthropic.tool_use_stop", "stop_reason", stop_reason)
    text, calls, parts = server_tools.decode_answer_parts(content, ids, _new_call)
    output = _output(text, calls)
    output["parts"] = parts
    _set_stop(output, stop_reason)
    return output


def _with_extras(output: ModelOutput, data: dict[str, Any], content: list[Any]) -> ModelOutput:
    """The answer's token counts, reasoning, container and server-tool counts, when it has them."""
    container = data.get("container")
    if isinstance(container, dict):
        output["container"] = {"expiresAt": str(container["expires_at"])} if isinstance(container.get("expires_at"), str) else {}
    server_use = server_tools.server_tool_use_of(data.get("usage"))
    if server_use is not None:
        output["serverToolUse"] = server_use
    counts = _tokens_of_usage(data.get("usage"))
    if counts is not None:
        output["tokens"] = counts
    reasoning = [_reasoning_part(block, f"content[{i}]") for i, block in enumerate(content) if block_kind(block) in THINKING]
    if reasoning:
        output["reasoning"] = reasoning
    return output


def _reasoning_part(block: dict[str, Any], where: str) -> ReasoningPart:
    """A thinking block kept for the replay (with its signature, which the API checks when the turn comes back)."""
    if block["type"] == "redacted_thinking":
        data = block.get("data")
        if not isinstance(data, str):
            raise BlackboxUnsupportedError(f"{where}.data", "a redacted_thinking block needs a string data", provider=PROVIDER)
        return {"type": "redacted_thinking", "data": data}
    thinking, signature = block.get("thinking"), block.get("signature")
    if not isinstance(thinking, str):
        raise BlackboxUnsupportedError(f"{where}.thinking", "a thinking block needs a string thinking", provider=PROVIDER)
    part: ReasoningPart = {"type": "thinking", "text": thinking}
    if isinstance(signature, str) and signature:
        part["signature"] = signature
    return part


def thinking_blocks(output: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The recorded reasoning as Messages blocks, in their order (they lead the answer's content)."""
    blocks: list[dict[str, Any]] = []
    for part in reasoning_of(output):
        if part.get("type") == "redacted_thinking":
            blocks.append({"type": "redacted_thinking", "data": str(part.get("data", ""))})
        elif part.get("type") == "thinking" and "text" in part:
            blocks.append({"type": "thinking", "thinking": str(part["text"]), "signature": str(part.get("signature", ""))})
    return blocks


def _tokens_of_usage(usage: Any) -> Tokens | None:
    """A Message's ``usage`` -> neutral counts: input is every input token, cache reads and writes included."""
    if not isinstance(usage, dict):
        return None
    counts = [usage.get(k) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")]
    uncached, read, written = (v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0 for v in counts)
    return tokens(uncached + read + written, usage.get("output_tokens"), read)


def usage_of(output: Mapping[str, Any]) -> dict[str, Any]:
    """The answer's recorded counts as a Message ``usage`` (zeros when it has none; cache writes count as uncached input)."""
    given_in, given_out, cached, _ = tokens_of(output)
    usage: dict[str, Any] = {"input_tokens": given_in - cached, "output_tokens": given_out}
    if cached:
        usage["cache_read_input_tokens"] = cached
        usage["cache_creation_input_tokens"] = 0
    server_use = server_tools.server_usage(output)
    if server_use is not None:
        usage["server_tool_use"] = server_use
    return usage


def _new_call(block: dict[str, Any], name: str, tool_input: Any, ids: CallIds) -> ToolCall:
    """A tool call the model just made: it gets the run's next ``call-N``."""
    native = block.get("id")
    caller = server_tools.caller_of(block, ids)  # mapped first: the server tool's call came before it
    call: ToolCall = {
        "toolCallId": ids.assign(native if isinstance(native, str) else None, name),
        "toolName": name,
        "toolInput": tool_input,
    }
    if caller is not None:
        call["caller"] = cast(Any, caller)
    return call


def _output(text: str | None, calls: list[ToolCall]) -> ModelOutput:
    if not calls:
        return {"type": "final_answer", "text": text or ""}
    output: ModelOutput = {"type": "tool_calls", "calls": calls}
    if text:
        output["text"] = text
    return output


def encode_response(output: Mapping[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> dict[str, Any]:
    """A neutral ``model_output`` -> a Message body every SDK accepts."""
    message = message_head(output, request, created_ms)
    message["content"] = blocks_of(output, ids)
    message["stop_reason"] = stop_reason_of(output)
    return message


def encode_error(message: str, *, status: int = 400, error_type: str | None = None) -> ErrorResponse:
    """An Anthropic-shaped error the SDKs raise at once (``x-should-retry: false``)."""
    kind = error_type or _ERROR_TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")
    request_id = "req_bb" + digest(f"{status}\0{kind}\0{message}")
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}
    headers = {"content-type": "application/json", "x-should-retry": "false", "request-id": request_id}
    return ErrorResponse(status=status, headers=headers, body=dumps_bytes(body, allow_nan=False))


def message_head(output: Mapping[str, Any], request: DecodedRequest, created_ms: int) -> dict[str, Any]:
    message_id = f"msg_bb{digest(dumps(output, allow_nan=False) + f'\0{created_ms}')}"
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": request.model or "",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "stop_details": None,
        "container": server_tools.served_container(output, message_id),
        "usage": usage_of(output),
    }


def blocks_of(output: Mapping[str, Any], ids: CallIds) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = thinking_blocks(output)
    if "parts" in output:
        return blocks + server_tools.answer_blocks(output, ids)
    text = output_text(output)
    if text:
        blocks.append({"type": "text", "text": text})
    blocks.extend(server_tools.client_tool_use(call, ids) for call in tool_calls_of(output))
    return blocks


def stop_reason_of(output: Mapping[str, Any]) -> str:
    stop = output.get("stop")
    if stop == STOP_LENGTH:
        return "max_tokens"
    if stop == STOP_REFUSAL:
        return "refusal"
    if stop == STOP_PAUSE:
        return "pause_turn"
    return "tool_use" if tool_calls_of(output) else "end_turn"


def normalize_answer(answer: Any, ids: CallIds) -> ModelOutput | None:
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
    calls: list[ToolCall] = []
    for i, block in enumerate(blocks):
        kind = block_kind(block)
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use" and isinstance(block.get("name"), str):
            calls.append(_new_call(block, block["name"], block.get("input", {}), ids))
        elif kind not in THINKING:
            raise ValueError(f"content[{i}]: an answer holds text and tool_use blocks (with a string text / name), got {block!r}")
    text = "".join(texts)
    if not text and not calls:
        raise ValueError("the answer holds neither text nor a tool call")
    output = _output(text, calls)
    if stop_reason == "max_tokens":
        output["stop"] = STOP_LENGTH
    return output
