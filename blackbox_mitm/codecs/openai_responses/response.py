"""Responses answers: a Response object -> the neutral ``model_output`` and back; errors; ``fork --response``.

* Synthesized ids are our own and derived from the answer, so the same answer
  is the same bytes: ``resp_bb…``, ``msg_bb…``, ``fc_bb<N>`` / ``ctc_bb<N>`` item
  ids and ``call_bb<N>`` call ids (``ids.served_id``, so the agent's echo maps
  back to ``call-N``). Every served response is put in the run's store, so a
  later ``previous_response_id`` naming it is resolved as in the recording.
* The request's own settings (tools, tool_choice, instructions, text, ...) are
  echoed the way the API echoes them; usage is the recorded token counts (zero without).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from blackbox_mitm.cassette.payloads import (
    CompactionPart,
    ModelOutput,
    ReasoningPart,
    Tokens,
    tokens,
    tokens_of,
    tool_calls_of,
)
from blackbox_mitm.codecs import openai_chat
from blackbox_mitm.codecs.base import STOP_LENGTH, STOP_REFUSAL, CallIds, DecodedRequest, ErrorResponse
from blackbox_mitm.codecs.common.ids import SORTED_JSON_STR, digest
from blackbox_mitm.codecs.common.jsonio import dumps, loads
from blackbox_mitm.codecs.openai_responses import PROVIDER, REFUSALS, compaction, computer, hosted_tools, mcp
from blackbox_mitm.codecs.openai_responses.fields import (
    LOCAL_ITEMS,
    ResponsesRequest,
    given,
    is_custom,
    remember,
    response_head,
)
from blackbox_mitm.codecs.openai_responses.reasoning import reasoning_items, reasoning_part

__all__ = ["decode_response", "encode_error", "encode_response", "normalize_answer", "response_head"]


def _message(item: dict[str, Any], at: str) -> tuple[str, str | None]:
    """(text, refusal) of an output message: one output_text or refusal part."""
    content = item.get("content")
    if not isinstance(content, list):
        REFUSALS.malformed(f"{at}.content", "a message without a content list")
    if len(content) > 1:
        REFUSALS.refuse("openai.responses.output_layout", f"{at}.content")
    if not content:
        return "", None
    part = content[0]
    kind = part.get("type") if isinstance(part, dict) else None
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        return "", part["refusal"]
    if kind != "output_text" or not isinstance(part.get("text"), str):
        REFUSALS.malformed(f"{at}.content[0]", f"a message part of type {kind!r}")
    return part["text"], None  # annotations and logprobs make the answer rich (hosted_tools.is_rich): not read here


def _call(item: dict[str, Any], kind: str, at: str) -> tuple[str | None, str, Any]:
    name, native = item.get("name"), item.get("call_id")
    if kind == computer.CALL:
        return (native if isinstance(native, str) else None), computer.TOOL_NAME, computer.call_input(item, at)
    if kind == mcp.APPROVAL:
        return mcp.approval_input(item, at)
    if not isinstance(name, str) or not name:
        REFUSALS.malformed(f"{at}.name", f"a {kind} without a name")
    if isinstance(item.get("namespace"), str) and item["namespace"]:
        name = f"{item['namespace']}.{name}"
    if kind == "custom_tool_call":
        if not isinstance(item.get("input"), str):
            REFUSALS.malformed(f"{at}.input", "a custom_tool_call without a string input")
        return (native if isinstance(native, str) else None), name, item["input"]
    raw = item.get("arguments")
    if isinstance(raw, str):
        try:
            return (native if isinstance(native, str) else None), name, json.loads(raw)
        except ValueError:
            pass
    REFUSALS.refuse("openai.responses.tool_arguments", f"{at}.arguments")


def _check_status(resp: dict[str, Any]) -> bool:
    """Whether the response stopped at its length limit; any other unfinished state is refused."""
    if given(resp, "error"):
        REFUSALS.refuse("openai.responses.status", "error")
    status = resp.get("status")
    if status == "incomplete":
        details = resp.get("incomplete_details")
        if not isinstance(details, dict) or details.get("reason") != "max_output_tokens":
            REFUSALS.refuse("openai.responses.status", "incomplete_details.reason")
        return True
    if status not in ("completed", None):
        REFUSALS.refuse("openai.responses.status", "status", status)
    return False


def _model_output(resp: dict[str, Any], ids: CallIds) -> ModelOutput:
    length = _check_status(resp)
    output = resp.get("output")
    if not isinstance(output, list):
        REFUSALS.malformed("output", "a response without an output list")
    rich = hosted_tools.is_rich(output)
    text, refusal, calls, reasoning, compacted = _read_items(output, rich)
    out: ModelOutput
    if rich:
        out = hosted_tools.rich_output(output, ids, length, _call)
    elif refusal is not None:
        if calls or length or text:
            REFUSALS.refuse("openai.responses.refusal_mixed", "output")
        return {"type": "final_answer", "text": refusal, "stop": STOP_REFUSAL}
    else:
        out = _plain_answer(text, calls, length, ids)
    if reasoning:
        out["reasoning"] = reasoning
    if compacted and not rich:
        out["compaction"] = compacted[0]
    return out


_Calls = list[tuple[str | None, str, Any]]  # (native call id, tool name, tool input)
_CALL_ITEMS = ("function_call", "custom_tool_call", computer.CALL, mcp.APPROVAL)


def _read_items(output: list[Any], rich: bool) -> tuple[str | None, str | None, _Calls, list[ReasoningPart], list[CompactionPart]]:
    """(text, refusal, calls, reasoning, compaction) of the output items; a rich answer's are left to hosted_tools."""
    text: str | None = None
    refusal: str | None = None
    calls: _Calls = []
    reasoning: list[ReasoningPart] = []
    compacted: list[CompactionPart] = []
    for k, item in enumerate(output):
        at = f"output[{k}]"
        kind = item.get("type") if isinstance(item, dict) else None
        if not isinstance(kind, str):
            REFUSALS.malformed(f"{at}.type", "an output item's type is not a string")
        if kind == "reasoning":
            reasoning.append(reasoning_part(item))
            continue
        if kind == compaction.ITEM:
            if compacted:
                REFUSALS.refuse("openai.responses.output_layout", at)
            compacted.append(compaction.part_of_item(item, at))
            continue
        if rich and (kind in hosted_tools.SERVED_ITEMS or kind in ("message", *_CALL_ITEMS)):
            continue  # read in order by hosted_tools.rich_output
        if kind == "message":
            if text is not None or refusal is not None or calls:
                REFUSALS.refuse("openai.responses.output_layout", at)
            text, refusal = _message(item, at)
        elif kind in _CALL_ITEMS:
            calls.append(_call(item, kind, at))
        elif kind in LOCAL_ITEMS:
            REFUSALS.refuse("openai.responses.local_tool", f"{at}.type", kind)
        else:
            REFUSALS.refuse("openai.responses.unknown_item", f"{at}.type", kind)
    return text, refusal, calls, reasoning, compacted


def _plain_answer(text: str | None, calls: _Calls, length: bool, ids: CallIds) -> ModelOutput:
    """A final answer or tool calls (call-N ids handed out now, in order), stopped at the length limit or not."""
    out: ModelOutput
    if calls:
        out = {
            "type": "tool_calls",
            "calls": [{"toolCallId": ids.assign(native, name), "toolName": name, "toolInput": args} for native, name, args in calls],
        }
        if text:
            out["text"] = text
    else:
        out = {"type": "final_answer", "text": text or ""}
    if length:
        out["stop"] = STOP_LENGTH
    return out


def decode_response(body: bytes | Mapping[str, Any], ids: CallIds, request: DecodedRequest) -> ModelOutput:
    """A Response object (bytes, or what ``aggregate_stream`` built) -> its neutral ``model_output``."""
    resp = dict(body) if isinstance(body, Mapping) else loads(body, "response", PROVIDER)
    if not isinstance(resp, dict):
        REFUSALS.malformed("body", "the response body is not a JSON object")
    out = _model_output(resp, ids)
    counts = _tokens_of_usage(resp.get("usage"))
    if counts is not None:
        out["tokens"] = counts
    if isinstance(resp.get("id"), str):
        remember(ids, resp["id"], request, resp["output"])
    return out


def _tokens_of_usage(usage: Any) -> Tokens | None:
    """A Response's ``usage`` -> neutral token counts (None for no usage, or all zero)."""
    if not isinstance(usage, dict):
        return None
    given_in, given_out = usage.get("input_tokens_details"), usage.get("output_tokens_details")
    return tokens(
        usage.get("input_tokens"),
        usage.get("output_tokens"),
        given_in.get("cached_tokens") if isinstance(given_in, dict) else 0,
        given_out.get("reasoning_tokens") if isinstance(given_out, dict) else 0,
    )


def _usage_of(output: Mapping[str, Any]) -> dict[str, Any]:
    """The answer's recorded token counts as a Response ``usage`` (zeros when it has none)."""
    given_in, given_out, cached, reasoning = tokens_of(output)
    return {
        "input_tokens": given_in,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
        "output_tokens": given_out,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": given_in + given_out,
    }


def _digest(*parts: Any) -> str:
    """The served-id digest of ``parts`` (their JSON, keys sorted: the key these ids were always made from)."""
    return digest(SORTED_JSON_STR.encode(parts))


def _call_item(call: dict[str, Any], kinds: dict[str, bool], ids: CallIds) -> dict[str, Any]:
    """A function_call or custom_tool_call item: custom when the request's tool of that name is, else by the input's kind.

    A call of ``computer.TOOL_NAME`` is a computer_call when the request declared a computer tool, and a call of
    an mcp tool an mcp_approval_request (``_BUILTIN + name`` in kinds).
    """
    call_id, name, tool_input = call.get("toolCallId"), call.get("toolName"), call.get("toolInput")
    if not isinstance(call_id, str) or not isinstance(name, str):
        raise ValueError("a tool call in the model_output has no toolCallId or toolName")
    served = ids.served_id(call_id, "call_")
    if kinds.get(_BUILTIN + name) and isinstance(tool_input, dict):
        if name == computer.TOOL_NAME:
            return computer.call_item(served, tool_input)
        return mcp.approval_item(ids.served_id(call_id, "mcpr_"), name, tool_input)
    suffix = served.removeprefix("call_bb")
    namespace = None
    if "." in name:
        namespace, name = name.rsplit(".", 1)
    item: dict[str, Any]
    if kinds.get(call["toolName"], isinstance(tool_input, str)):
        item = {"id": f"ctc_bb{suffix}", "type": "custom_tool_call", "status": "completed", "call_id": served, "name": name}
        item["input"] = tool_input if isinstance(tool_input, str) else dumps(tool_input)
    else:
        item = {"id": f"fc_bb{suffix}", "type": "function_call", "status": "completed", "arguments": dumps(tool_input)}
        item |= {"call_id": served, "name": name}
    if namespace is not None:
        item["namespace"] = namespace
    return item


def output_items(output: Any, request: DecodedRequest, ids: CallIds, response_id: str) -> tuple[list[dict[str, Any]], bool]:
    """(the Response's output items, whether it stopped at the length limit) for a neutral model_output."""
    if not isinstance(output, dict):
        raise ValueError(f"a model_output must be an object, not {type(output).__name__}")
    kind, stop = output.get("type"), output.get("stop")
    text = output.get("text")
    length = stop == STOP_LENGTH
    msg_id = f"msg_bb{_digest(response_id, 'message')}"
    thought = reasoning_items(output, response_id)
    compacted = compaction.compaction_item(output, response_id)
    if compacted is not None:
        thought.append(compacted)
    if "parts" in output:
        kinds = _tool_kinds(request)
        served = hosted_tools.rich_items(
            output,
            ids,
            lambda n: msg_id if n == 0 else f"msg_bb{_digest(response_id, 'message', n)}",
            lambda call: _call_item(call, kinds, ids),
        )
        return [*thought, *served], length
    if kind == "final_answer":
        if not isinstance(text, str):
            raise ValueError("a final_answer model_output has no text")
        if compacted is not None and not text:
            return thought, length  # the compaction alone: no empty message beside it
        part: dict[str, Any] = (
            {"type": "refusal", "refusal": text}
            if stop == STOP_REFUSAL
            else {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
        )
        return [*thought, _message_item(msg_id, "incomplete" if length else "completed", part)], length
    if kind not in ("tool_calls", "tool_call"):
        raise ValueError(f"not a model_output: type {kind!r}")
    return [*thought, *_tool_call_items(output, text, msg_id, _tool_kinds(request), ids)], length


_BUILTIN = "\x00"  # before a name, a key no tool name can be: the request declared that computer or mcp tool


def _tool_kinds(request: DecodedRequest) -> dict[str, bool]:
    """The request's tools by name: custom (freeform) or not; ``_BUILTIN + name``: a computer or mcp tool's calls."""
    tools = request.model_input.get("tools") or []
    kinds = {str(t.get("name")): is_custom(t) for t in tools if isinstance(t, dict)}
    kinds[_BUILTIN + computer.TOOL_NAME] = computer.declared(tools)
    for t in tools:
        builtin = t.get("builtin") if isinstance(t, dict) else None
        if isinstance(builtin, dict) and builtin.get("type") == mcp.TOOL:
            kinds[_BUILTIN + str(t.get("name"))] = True
    return kinds


def _message_item(msg_id: str, status: str, part: dict[str, Any]) -> dict[str, Any]:
    return {"id": msg_id, "type": "message", "status": status, "content": [part], "role": "assistant"}


def _tool_call_items(output: Mapping[str, Any], text: Any, msg_id: str, kinds: dict[str, bool], ids: CallIds) -> list[dict[str, Any]]:
    """A tool_calls answer's items: its text as a message (when it has one), then a call item per call."""
    items: list[dict[str, Any]] = []
    if isinstance(text, str) and text:
        items.append(_message_item(msg_id, "completed", {"type": "output_text", "annotations": [], "logprobs": [], "text": text}))
    calls = tool_calls_of(output)
    if not calls:
        raise ValueError("a tool_calls model_output without calls")
    return items + [_call_item(call, kinds, ids) for call in calls]


def _response_id(output: Any, request: DecodedRequest, created_ms: int) -> str:
    return f"resp_bb{_digest(created_ms, output, len(request.model_input.get('messages') or []), request.previous if isinstance(request, ResponsesRequest) else None)}"


def encode_response(output: Mapping[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> dict[str, Any]:
    """A neutral model_output -> a Response object with our ids, the request's settings echoed and zero usage."""
    response_id = _response_id(output, request, created_ms)
    items, length = output_items(output, request, ids, response_id)
    body = response_head(request, response_id, created_ms, "incomplete" if length else "completed")
    body["completed_at"] = None if length else created_ms // 1000
    if length:
        body["incomplete_details"] = {"reason": "max_output_tokens"}
    body["output"] = items
    body["usage"] = _usage_of(output)
    remember(ids, response_id, request, items, served=True)
    return body


def encode_error(message: str, *, status: int = 400, error_type: str | None = None) -> ErrorResponse:
    """An OpenAI-shaped error (the same as chat completions'), with ``x-should-retry: false``."""
    return openai_chat.encode_error(message, status=status, error_type=error_type)


def normalize_answer(answer: Any, ids: CallIds) -> ModelOutput | None:
    """A Responses-shaped answer for ``fork --response`` -> a neutral model_output with fresh call-N ids.

    Accepts a Response object (``{"output": [...]}``), a list of output items, or
    one output item (``{"type": "message" | "function_call" | "custom_tool_call", ...}``);
    None for any other shape. Raises ValueError when it holds neither text nor a call.
    """
    kinds = ("message", "function_call", "custom_tool_call")
    if isinstance(answer, dict) and isinstance(answer.get("output"), list):
        resp = answer
    elif isinstance(answer, list) and answer and all(isinstance(i, dict) and i.get("type") in kinds for i in answer):
        resp = {"output": answer}
    elif isinstance(answer, dict) and answer.get("type") in kinds:
        resp = {"output": [answer]}
    else:
        return None
    out = _model_output(resp, CallIds())  # the answer's own ids, if any, are not the run's
    if out["type"] == "tool_calls":
        for call in out["calls"]:
            call["toolCallId"] = ids.assign(None, call["toolName"])
    if out["type"] == "final_answer" and not out["text"]:
        raise ValueError("the answer holds neither text nor a tool call")
    return out
