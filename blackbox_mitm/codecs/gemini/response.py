"""Gemini answers: a GenerateContentResponse -> neutral ``model_output``, and back; errors; ``fork --response``."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from blackbox_mitm.cassette.media import bytes_for
from blackbox_mitm.cassette.payloads import (
    ModelOutput,
    ReasoningPart,
    Tokens,
    ToolCall,
    joined_parts,
    output_text,
    reasoning_of,
    tokens,
    tokens_of,
    tool_calls_of,
)
from blackbox_mitm.codecs.base import STOP_LENGTH, CallIds, DecodedRequest, ErrorResponse
from blackbox_mitm.codecs.common.ids import answer_key, digest
from blackbox_mitm.codecs.common.jsonio import dumps, load_object
from blackbox_mitm.codecs.gemini import PROVIDER, REFUSALS, code_execution, grounding
from blackbox_mitm.codecs.gemini.fields import call_positions, camel_content, first_text, neutral_output, part_kind
from blackbox_mitm.codecs.gemini.multimodal import media_of as _media_of

__all__ = ["decode_response", "encode_error", "encode_response", "error_body", "normalize_answer"]

SERVED_PREFIX = "gemini-"
# The recorded thoughtSignature is stored with the answer (``reasoning``) and served back where Gemini
# puts it. An answer recorded without one gives the first call of a turn the sentinel Google documents
# for history the model did not produce (Gemini CLI injects the same one where a signature is missing),
# so that a client sending the turn back — to the real API after a fork's cut — passes Gemini 3's check.
SKIP_SIGNATURE = "skip_thought_signature_validator"
_ERROR_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def decode_response(body: bytes | Mapping[str, Any], ids: CallIds, request: DecodedRequest) -> ModelOutput:
    """A GenerateContentResponse (or the object ``aggregate_stream`` built) -> the neutral ``model_output``."""
    data = dict(body) if isinstance(body, Mapping) else load_object(body, "response", PROVIDER)
    candidate = _candidate(data)
    reason = candidate.get("finishReason")
    content = candidate.get("content") or {}
    read = _read_parts(content.get("parts") if isinstance(content, dict) else None)
    out = neutral_output("".join(read.texts), _assign_calls(read.calls, ids, request), reason == "MAX_TOKENS")
    _assign_code(read.content, ids, request)
    if any(p["type"] != "text" for p in read.content):
        out["content"] = joined_parts(read.content)  # Blackbox's extension: an answer with media (docs/cassette.md)
    counts = _tokens_of_usage(data.get("usageMetadata"))
    if counts is not None:
        out["tokens"] = counts
    if read.reasoning:
        out["reasoning"] = read.reasoning
    found = grounding.grounding_of(candidate)
    if found is not None:
        out["grounding"] = found
    return out


def _candidate(data: dict[str, Any]) -> dict[str, Any]:
    """The response's one candidate, once what would not replay as it came is refused."""
    feedback = data.get("promptFeedback")
    if isinstance(feedback, dict) and feedback.get("blockReason"):
        REFUSALS.refuse("gemini.prompt_blocked", "promptFeedback.blockReason", feedback["blockReason"])
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        REFUSALS.malformed("candidates", "a response without candidates")
    if len(candidates) > 1:
        REFUSALS.refuse("gemini.candidates", "candidates")
    candidate: dict[str, Any] = candidates[0]
    reason = candidate.get("finishReason")
    if reason not in ("STOP", "MAX_TOKENS"):
        REFUSALS.refuse("gemini.finish_reason", "candidates[0].finishReason", reason)
    if candidate.get("logprobsResult"):
        REFUSALS.refuse("gemini.response_metadata", "candidates[0].logprobsResult")
    return candidate


@dataclass
class _Parts:
    """What a candidate's parts hold, in order: text, (native id, name, args) calls, thoughts, text and media."""

    texts: list[str] = field(default_factory=list)
    calls: list[tuple[str | None, str, Any]] = field(default_factory=list)
    reasoning: list[ReasoningPart] = field(default_factory=list)
    content: list[Any] = field(default_factory=list)  # text and media in order, kept only when there is media


def _read_parts(parts: Any) -> _Parts:
    read = _Parts()
    for j, part in enumerate(parts or []):
        where = f"candidates[0].content.parts[{j}]"
        kind = part_kind(part, where)
        thought = _reasoning_part(part, kind)
        if thought is not None:
            read.reasoning.append(thought)
        if kind is None or part.get("thought") is True:
            continue
        if kind == "text":
            if part["text"] and read.calls:
                REFUSALS.refuse("gemini.text_after_call", where)
            read.texts.append(part["text"])
            read.content.append({"type": "text", "text": part["text"]})
        elif kind in ("inlineData", "fileData"):  # an image or speech answer: the bytes go to the run's media
            if read.calls:
                REFUSALS.refuse("gemini.text_after_call", where)
            read.content.append(_media_of(part[kind], kind, f"{where}.{kind}"))
        elif kind in code_execution.KINDS:  # code Google ran, and its result: kept in place (call-N given later)
            if read.calls:
                REFUSALS.refuse("gemini.text_after_call", where)
            read.content.append(code_execution.neutral_part(kind, part[kind], f"{where}.{kind}", ""))
        elif kind == "functionCall":
            call = part["functionCall"]
            if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                REFUSALS.malformed(f"{where}.functionCall", "a functionCall without a name")
            native = call.get("id")
            read.calls.append((native if isinstance(native, str) and native else None, call["name"], call.get("args") or {}))
        else:
            REFUSALS.refuse("gemini.non_text_response", f"{where}.{kind}")
    return read


def _assign_calls(calls: list[tuple[str | None, str, Any]], ids: CallIds, request: DecodedRequest) -> list[ToolCall]:
    """call-N ids, handed out only once nothing is refused, in the order the model emitted them."""
    at = len(request.model_input.get("messages", []))
    positions = call_positions(ids, first_text(request.model_input.get("messages", [])))
    out_calls: list[ToolCall] = []
    for k, (native, name, args) in enumerate(calls):
        call_id = ids.assign(native, name)
        positions[f"{at}:{k}:{name}"] = call_id
        out_calls.append({"toolCallId": call_id, "toolName": name, "toolInput": args})
    return out_calls


def _assign_code(content: list[Any], ids: CallIds, request: DecodedRequest) -> None:
    """call-N ids for the answer's code-execution parts (a result takes its code's), noted by place for later histories."""
    at = len(request.model_input.get("messages", []))
    positions = call_positions(ids, first_text(request.model_input.get("messages", [])))
    current, k = "", 0
    for part in content:
        if not code_execution.is_code_part(part):
            continue
        if part["type"] == "server_tool_call" or not current:
            current = ids.assign(None, code_execution.TOOL)
            positions[f"{at}:x{k}"] = current
            k += 1
        part["toolCallId"] = current


def _note_code(content: list[Any], ids: CallIds, request: DecodedRequest) -> None:
    """A served answer's code-execution parts: their recorded call-N noted by place, as ``_assign_code`` does."""
    at = len(request.model_input.get("messages", []))
    positions = call_positions(ids, first_text(request.model_input.get("messages", [])))
    codes = [p for p in content if isinstance(p, dict) and p.get("type") == "server_tool_call" and p.get("toolName") == code_execution.TOOL]
    for k, part in enumerate(codes):
        call_id = str(part.get("toolCallId"))
        positions[f"{at}:x{k}"] = call_id
        ids.register(call_id, code_execution.TOOL)


def _reasoning_part(part: dict[str, Any], kind: str | None) -> ReasoningPart | None:
    """A thought part (its text, and signature), or the ``thoughtSignature`` another part carries; None for neither."""
    signature = part.get("thoughtSignature")
    if signature == SKIP_SIGNATURE:  # the sentinel a replay (or Gemini CLI) puts in: not the model's
        signature = None
    if part.get("thought") is True and kind == "text":
        out: ReasoningPart = {"type": "thinking", "text": part["text"]}
    elif isinstance(signature, str) and signature:
        out = {"type": "thinking", "on": "call" if kind == "functionCall" else "text"}
    else:
        return None
    if isinstance(signature, str) and signature:
        out["signature"] = signature
    return out


def _served_parts(output: Mapping[str, Any], parts: list[dict[str, Any]], calls: int) -> list[dict[str, Any]]:
    """The answer's parts with its recorded thoughts ahead and its recorded signature where Gemini puts one.

    Signatures recorded without a thought text go back where they came (``on``):
    the function calls in order, or the answer's text part; with none recorded
    on a call, the first call gets ``SKIP_SIGNATURE``.
    """
    thoughts: list[dict[str, Any]] = []
    on_calls: list[str] = []
    on_text: list[str] = []
    for part in reasoning_of(output):
        signature = part.get("signature")
        if isinstance(part.get("text"), str):
            thoughts.append(
                {"text": part["text"], "thought": True, **({"thoughtSignature": signature} if isinstance(signature, str) else {})}
            )
        elif isinstance(signature, str):
            (on_calls if part.get("on") == "call" else on_text).append(signature)
    first = len(parts) - calls
    if calls:
        for k, signature in enumerate(on_calls[:calls] or [SKIP_SIGNATURE]):
            parts[first + k]["thoughtSignature"] = signature
    if on_text and first > 0:
        parts[first - 1]["thoughtSignature"] = on_text[0]
    return thoughts + parts


def _tokens_of_usage(usage: Any) -> Tokens | None:
    """``usageMetadata`` -> neutral counts: output is the candidates' tokens and the thoughts' (reasoning)."""
    if not isinstance(usage, dict):
        return None
    candidates, thoughts = (usage.get(k) for k in ("candidatesTokenCount", "thoughtsTokenCount"))
    counts = [v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0 for v in (candidates, thoughts)]
    return tokens(usage.get("promptTokenCount"), sum(counts), usage.get("cachedContentTokenCount"), counts[1])


def _usage_of(output: Mapping[str, Any]) -> dict[str, Any]:
    """The answer's recorded counts as ``usageMetadata`` (zeros when it has none)."""
    given_in, given_out, cached, reasoning = tokens_of(output)
    usage: dict[str, Any] = {
        "promptTokenCount": given_in,
        "candidatesTokenCount": given_out - reasoning,
        "totalTokenCount": given_in + given_out,
    }
    if cached:
        usage["cachedContentTokenCount"] = cached
    if reasoning:
        usage["thoughtsTokenCount"] = reasoning
    return usage


def encode_response(output: Mapping[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> dict[str, Any]:
    """A neutral ``model_output`` -> a GenerateContentResponse with our ids, the requested model and the recorded usage."""
    text = output_text(output) or ""
    calls = tool_calls_of(output)
    if output.get("type") not in ("final_answer", "tool_calls", "tool_call"):
        raise ValueError(f"not a model_output: type {output.get('type')!r}")
    parts: list[dict[str, Any]] = [{"text": text}] if text or not calls else []
    media = output.get("content")
    if isinstance(media, list):  # an answer with media or code execution: its parts in order, the bytes from the run's media
        parts = [_wire_part(p) for p in media if isinstance(p, dict)]
        _note_code(media, ids, request)
    at = len(request.model_input.get("messages", []))
    positions = call_positions(ids, first_text(request.model_input.get("messages", [])))
    for k, call in enumerate(calls):
        call_id, name = str(call.get("toolCallId")), str(call.get("toolName"))
        positions[f"{at}:{k}:{name}"] = call_id
        args = call.get("toolInput")
        part: dict[str, Any] = {
            "functionCall": {"id": ids.served_id(call_id, SERVED_PREFIX), "name": name, "args": {} if args is None else args}
        }
        parts.append(part)
    parts = _served_parts(output, parts, len(calls))  # the first call's signature: the one Gemini 3 checks when the turn comes back
    return {
        "candidates": [
            {
                "content": {"parts": parts, "role": "model"},
                "finishReason": "MAX_TOKENS" if output.get("stop") == STOP_LENGTH else "STOP",
                "index": 0,
                **grounding.served_grounding(output),
            }
        ],
        "usageMetadata": _usage_of(output),
        "modelVersion": request.model or "",
        "responseId": f"bb{digest(answer_key(output, created_ms), 22)}",
    }


def _wire_part(part: Mapping[str, Any]) -> dict[str, Any]:
    """A neutral text or media part of an answer -> a Gemini part (inline bytes from the run's media, byte for byte)."""
    if part.get("type") == "text":
        return {"text": part.get("text", "")}
    if code_execution.is_code_part(part):
        return code_execution.wire_part(part)
    mime = str(part.get("mediaType") or "application/octet-stream")
    if isinstance(part.get("url"), str):
        return {"fileData": {"mimeType": mime, "fileUri": part["url"]}}
    return {"inlineData": {"mimeType": mime, "data": base64.b64encode(bytes_for(part)).decode("ascii")}}


def error_body(message: str, status: int, error_type: str | None) -> dict[str, Any]:
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": _ERROR_STATUS.get(status) or ("INTERNAL" if status >= 500 else "FAILED_PRECONDITION"),
    }
    if error_type:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": error_type, "domain": "blackbox"}]
    return {"error": error}


def encode_error(message: str, *, status: int = 400, error_type: str | None = None) -> ErrorResponse:
    """A Google-shaped error (``{"error": {code, message, status}}``); ``x-should-retry: false``."""
    body = dumps(error_body(message, status, error_type), spaced=True).encode()
    return ErrorResponse(status=status, headers={"content-type": "application/json; charset=UTF-8", "x-should-retry": "false"}, body=body)


def normalize_answer(answer: Any, ids: CallIds) -> ModelOutput | None:
    """A Gemini-shaped answer -> a neutral ``model_output``; None when it is not one.

    Accepted: a GenerateContentResponse (``{"candidates": [...]}``), a content
    (``{"role": "model", "parts": [...]}``, role optional) or a list of parts
    (``{"text"}`` / ``{"functionCall": {"name", "args"}}``, no ``type`` key).
    """
    finish = None
    if isinstance(answer, dict) and isinstance(answer.get("candidates"), list):
        if len(answer["candidates"]) != 1 or not isinstance(answer["candidates"][0], dict):
            raise ValueError("an answer with candidates must have exactly one candidate")
        finish = answer["candidates"][0].get("finishReason")
        answer = answer["candidates"][0].get("content") or {}
    if isinstance(answer, list) and answer and all(isinstance(p, dict) and "type" not in p for p in answer):
        answer = camel_content({"parts": answer})
        if not all(part_kind(p, "part") for p in answer["parts"]):
            return None  # a list of something else than parts (each needs its text, functionCall, ...)
    if not isinstance(answer, dict) or not isinstance(answer.get("parts"), list) or "type" in answer:
        return None
    answer = camel_content(answer)
    if answer.get("role", "model") != "model":
        raise ValueError(f"an answer is a model turn, not role {answer.get('role')!r}")
    parts = answer["parts"]
    texts: list[str] = []
    calls: list[ToolCall] = []
    for j, part in enumerate(parts):
        kind = part_kind(part, f"parts[{j}]") if isinstance(part, dict) else "?"
        if kind is None or (isinstance(part, dict) and part.get("thought") is True):
            continue
        if kind == "text":
            texts.append(part["text"])
        elif kind == "functionCall" and isinstance(part["functionCall"], dict) and isinstance(part["functionCall"].get("name"), str):
            name = part["functionCall"]["name"]
            calls.append({"toolCallId": ids.assign(None, name), "toolName": name, "toolInput": part["functionCall"].get("args") or {}})
        else:
            raise ValueError(f"parts[{j}]: an answer holds text and functionCall parts (with a name), got {part!r}")
    text = "".join(texts)
    if not text and not calls:
        raise ValueError("the answer holds neither text nor a function call")
    return neutral_output(text, calls, finish == "MAX_TOKENS")
