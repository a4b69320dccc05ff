"""Converse answers: a ConverseResponse -> the neutral ``model_output`` and back; Bedrock's errors; ``fork --response``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from blackbox_mitm.cassette.extensions import tokens, tokens_of
from blackbox_mitm.cassette.payloads import ModelOutput, ToolCall, output_text, tool_calls_of
from blackbox_mitm.codecs import bedrock
from blackbox_mitm.codecs.base import STOP_LENGTH, CallIds, DecodedRequest, ErrorResponse
from blackbox_mitm.codecs.bedrock_converse import PROVIDER, REFUSALS
from blackbox_mitm.codecs.bedrock_converse.fields import block_kind
from blackbox_mitm.codecs.common.jsonio import load_object

__all__ = ["content_of", "decode_response", "encode_error", "encode_response", "normalize_answer", "stop_reason_of"]

_STOPS = ("end_turn", "tool_use", "max_tokens")


def decode_response(body: bytes | Mapping[str, Any], ids: CallIds, request: DecodedRequest) -> ModelOutput:
    """A ConverseResponse (or the object ``aggregate_stream`` built) -> the neutral ``model_output``."""
    data = dict(body) if isinstance(body, Mapping) else load_object(body, "response", PROVIDER)
    output = data.get("output")
    message = output.get("message") if isinstance(output, dict) else None
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        REFUSALS.malformed("output.message.content", "a Converse response holds output.message.content")
    stop = data.get("stopReason")
    if stop not in _STOPS:
        REFUSALS.refuse("bedrock-converse.stop_reason", "stopReason", stop)
    texts: list[str] = []
    uses: list[dict[str, Any]] = []
    for i, block in enumerate(message["content"]):
        where = f"output.message.content[{i}]"
        kind = block_kind(block, where)
        if kind == "text" and block["text"]:
            if uses:
                REFUSALS.refuse("bedrock-converse.text_after_tool", where)
            texts.append(str(block["text"]))
        elif kind == "toolUse":
            use = block["toolUse"]
            if not isinstance(use, dict) or not isinstance(use.get("name"), str):
                REFUSALS.malformed(f"{where}.toolUse", "a toolUse block needs a string name")
            uses.append(use)
        elif kind not in ("text", "reasoningContent"):
            REFUSALS.refuse("bedrock-converse.unknown_block", where, kind)
    if (uses and stop == "end_turn") or (not uses and stop == "tool_use"):
        REFUSALS.refuse("bedrock-converse.tool_use_stop", "stopReason", stop)
    result = _output("".join(texts), [_new_call(use, ids) for use in uses])
    if stop == "max_tokens":
        result["stop"] = STOP_LENGTH
    usage = data.get("usage")
    if isinstance(usage, dict):  # input counts cache reads and writes too, as the other codecs' do
        uncached, read, written = (_count(usage.get(k)) for k in ("inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens"))
        counts = tokens(uncached + read + written, usage.get("outputTokens"), read)
        if counts is not None:
            result["tokens"] = counts
    return result


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def usage_of(output: Mapping[str, Any]) -> dict[str, Any]:
    """The answer's recorded counts as Converse's ``usage`` (zeros when it has none; cache writes as uncached input)."""
    given_in, given_out, cached, _ = tokens_of(output)
    usage: dict[str, Any] = {"inputTokens": given_in - cached, "outputTokens": given_out, "totalTokens": given_in + given_out}
    if cached:
        usage["cacheReadInputTokens"] = cached
    return usage


def _new_call(use: dict[str, Any], ids: CallIds) -> ToolCall:
    native = use.get("toolUseId")
    name = str(use["name"])
    return {"toolCallId": ids.assign(native if isinstance(native, str) else None, name), "toolName": name, "toolInput": use.get("input")}


def _output(text: str, calls: list[ToolCall]) -> ModelOutput:
    if not calls:
        return {"type": "final_answer", "text": text}
    output: ModelOutput = {"type": "tool_calls", "calls": calls}
    if text:
        output["text"] = text
    return output


def encode_response(output: Mapping[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> dict[str, Any]:
    """A neutral ``model_output`` -> the ConverseResponse boto3 parses (the recorded usage; metrics 0)."""
    return {
        "output": {"message": {"role": "assistant", "content": content_of(output, ids)}},
        "stopReason": stop_reason_of(output),
        "usage": usage_of(output),
        "metrics": {"latencyMs": 0},
    }


def encode_error(message: str, *, status: int = 400, error_type: str | None = None) -> ErrorResponse:
    """Bedrock's error (``{"message"}`` named by ``x-amzn-ErrorType``): boto3 raises it by that name."""
    return bedrock.encode_error(message, status=status, error_type=error_type)


def content_of(output: Mapping[str, Any], ids: CallIds) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    text = output_text(output)
    if text:
        blocks.append({"text": text})
    for call in tool_calls_of(output):
        served = ids.served_id(str(call.get("toolCallId")), "tooluse_")
        blocks.append({"toolUse": {"toolUseId": served, "name": call.get("toolName"), "input": call.get("toolInput")}})
    if not blocks:
        blocks.append({"text": ""})
    return blocks


def stop_reason_of(output: Mapping[str, Any]) -> str:
    if output.get("stop") == STOP_LENGTH:
        return "max_tokens"
    return "tool_use" if tool_calls_of(output) else "end_turn"


def normalize_answer(answer: Any, ids: CallIds) -> ModelOutput | None:
    """A user-written Converse answer (a ConverseResponse, or its ``output.message``) -> ``model_output``; else None."""
    if not isinstance(answer, dict):
        return None
    if isinstance(answer.get("output"), dict):
        body = {"stopReason": answer.get("stopReason"), **answer}
    elif (
        answer.get("role") == "assistant"
        and isinstance(answer.get("content"), list)
        and all(isinstance(b, dict) and len(b) == 1 and ("text" in b or "toolUse" in b) for b in answer["content"])
    ):
        uses = any("toolUse" in b for b in answer["content"])
        body = {"output": {"message": answer}, "stopReason": "tool_use" if uses else "end_turn"}
    else:
        return None
    try:
        return decode_response(body, ids, DecodedRequest(PROVIDER, {"messages": [], "tools": []}))
    except Exception as exc:
        raise ValueError(str(exc)) from exc
