"""Chat-completions answers: a chat.completion -> the neutral ``model_output`` and back; errors; ``fork --response``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from blackbox_mitm.cassette.payloads import ModelOutput, Tokens, tokens, tokens_of, tool_calls_of
from blackbox_mitm.codecs.base import STOP_LENGTH, STOP_REFUSAL, CallIds, DecodedRequest, ErrorResponse
from blackbox_mitm.codecs.common.ids import answer_key, digest
from blackbox_mitm.codecs.common.jsonio import dumps, loads
from blackbox_mitm.codecs.openai_chat import PROVIDER, REFUSALS
from blackbox_mitm.codecs.openai_chat.audio import answer_audio, served_audio, text_parts
from blackbox_mitm.codecs.openai_chat.fields import filtered_at, function_call, given, refusal_text

__all__ = [
    "completion_id",
    "decode_response",
    "encode_error",
    "encode_response",
    "message_of",
    "normalize_answer",
    "tokens_of_usage",
    "usage_of",
]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


def decode_response(body: bytes | Mapping[str, Any], ids: CallIds, request: DecodedRequest) -> ModelOutput:
    """A chat.completion body (or the object ``aggregate_stream`` built) -> its neutral ``model_output``."""
    resp = dict(body) if isinstance(body, Mapping) else loads(body, "response", PROVIDER)
    out = _answer(resp, ids, request)
    counts = tokens_of_usage(resp.get("usage") if isinstance(resp, dict) else None)
    if counts is not None:
        out["tokens"] = counts
    return out


def tokens_of_usage(usage: Any) -> Tokens | None:
    """A chat ``usage`` object -> neutral token counts (None for no usage, or all zero)."""
    if not isinstance(usage, dict):
        return None
    prompt = usage.get("prompt_tokens_details")
    completion = usage.get("completion_tokens_details")
    return tokens(
        usage.get("prompt_tokens"),
        usage.get("completion_tokens"),
        prompt.get("cached_tokens") if isinstance(prompt, dict) else 0,
        completion.get("reasoning_tokens") if isinstance(completion, dict) else 0,
    )


def _choice(resp: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the one choice, its message), once what would not replay as it came is refused."""
    choices = resp.get("choices") if isinstance(resp, dict) else None
    if not isinstance(choices, list) or not choices:
        REFUSALS.malformed("choices", "a response without choices")
    if len(choices) > 1:
        REFUSALS.refuse("openai.choices", "choices")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        REFUSALS.malformed("choices[0].message", "a choice without a message")
    at = "choices[0].message"
    if message.get("annotations"):
        REFUSALS.refuse("openai.annotations_response", f"{at}.annotations")
    if given(message, "function_call"):
        REFUSALS.refuse("openai.function_call_message", f"{at}.function_call")
    finish = choice.get("finish_reason")
    if finish == "content_filter":
        REFUSALS.refuse("openai.content_filter", "choices[0].finish_reason", finish)
    # Azure's filter annotations: dropped when they flag nothing (a replay leaves them out), else refused.
    flagged = filtered_at(resp.get("prompt_filter_results"), "prompt_filter_results") or filtered_at(
        choice.get("content_filter_results"), "choices[0].content_filter_results"
    )
    if flagged:
        REFUSALS.refuse("openai.azure_content_filter", flagged, True)
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        REFUSALS.malformed(f"{at}.content", "content is neither a string nor null")
    return choice, message


def _answer(resp: Any, ids: CallIds, request: DecodedRequest) -> ModelOutput:
    choice, message = _choice(resp)
    at, finish, content = "choices[0].message", choice.get("finish_reason"), message.get("content")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        REFUSALS.malformed(f"{at}.tool_calls", "tool_calls is not a list")
    calls = [function_call(call, f"{at}.tool_calls[{j}]") for j, call in enumerate(raw_calls)]

    refusal = refusal_text(message.get("refusal"))
    if refusal is not None:
        if content:
            REFUSALS.refuse("openai.content_and_refusal", f"{at}.content")
        if calls or given(message, "audio"):
            REFUSALS.refuse("openai.refusal_mixed", f"{at}.tool_calls" if calls else f"{at}.audio")
        if finish != "stop":
            REFUSALS.refuse("openai.refusal_mixed", "choices[0].finish_reason", finish)
        return _with_logprobs({"type": "final_answer", "text": refusal, "stop": STOP_REFUSAL}, choice, "refusal")
    audio = answer_audio(message["audio"], f"{at}.audio", ids, request, resp.get("created")) if given(message, "audio") else None

    if calls:
        if finish not in ("tool_calls", "length"):
            REFUSALS.refuse("openai.tool_calls_finish", "choices[0].finish_reason", finish)
        out: ModelOutput = {
            "type": "tool_calls",
            "calls": [{"toolCallId": ids.assign(native, name), "toolName": name, "toolInput": args} for native, name, args in calls],
        }
        if content is not None:  # "" too: some OpenAI-compatible servers send it beside tool calls, and get it back
            out["text"] = content
    else:
        if content is None and audio is None:
            REFUSALS.refuse("openai.null_content", f"{at}.content")
        if finish not in ("stop", "length"):
            REFUSALS.refuse("openai.finish_reason", "choices[0].finish_reason", finish)
        out = {"type": "final_answer", "text": content or ""}
    if audio is not None:  # the transcript is the text; the content keeps the parts (docs/cassette.md)
        out["text"] = (content or "") + audio["transcript"]
        out["content"] = [*([{"type": "text", "text": content}] if content else []), audio]
    if finish == "length":
        out["stop"] = STOP_LENGTH
    return _with_logprobs(out, choice, "content")


def _with_logprobs(out: ModelOutput, choice: dict[str, Any], key: str) -> ModelOutput:
    """The choice's token logprobs (of its content, or of its refusal) kept on the answer as ``tokenLogprobs`` (not compared)."""
    logprobs = choice.get("logprobs")
    if logprobs is None:
        return out
    if not isinstance(logprobs, dict) or not isinstance(logprobs.get(key) or [], list):
        REFUSALS.malformed("choices[0].logprobs", f"logprobs is not an object with a {key} list")
    if logprobs.get(key):
        cast(dict[str, Any], out)["tokenLogprobs"] = logprobs[key]
    return out


def served_logprobs(output: Mapping[str, Any], refusal: bool) -> dict[str, Any] | None:
    """A choice's ``logprobs`` for the recorded ``tokenLogprobs`` (None when the answer has none)."""
    given_lp = output.get("tokenLogprobs")
    if not isinstance(given_lp, list) or not given_lp:
        return None
    return {"content": None, "refusal": given_lp} if refusal else {"content": given_lp, "refusal": None}


def completion_id(output: Mapping[str, Any], created_ms: int) -> str:
    return f"chatcmpl-bb{digest(answer_key(output, created_ms))}"


def message_of(output: Any, ids: CallIds) -> tuple[str | None, str | None, list[dict[str, Any]], str]:
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
            calls.append({"id": served, "type": "function", "function": {"name": name, "arguments": dumps(call.get("toolInput"))}})
        if not calls:
            raise ValueError("a tool_calls model_output without calls")
        text = output.get("text")
        return (text if isinstance(text, str) else None), None, calls, STOP_LENGTH if stop == STOP_LENGTH else "tool_calls"
    raise ValueError(f"not a model_output: type {kind!r}")


def usage_of(output: Mapping[str, Any]) -> dict[str, Any]:
    """The answer's recorded token counts as a chat ``usage`` object (zeros when it has none)."""
    given_input, given_output, cached, reasoning = tokens_of(output)
    return {
        "prompt_tokens": given_input,
        "completion_tokens": given_output,
        "total_tokens": given_input + given_output,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def encode_response(output: Mapping[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> dict[str, Any]:
    """A neutral model_output -> a chat.completion body with our ids, the request's model and the recorded usage (or zero)."""
    content, refusal, calls, finish = message_of(output, ids)
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal, "annotations": []}
    audio, spoken_text = text_parts(output)
    if audio is not None:  # the content holds only what the model wrote beside the audio (usually nothing: null)
        message["content"] = spoken_text
        message["audio"] = served_audio(audio, ids, created_ms)
    if calls:
        message["tool_calls"] = calls
    return {
        "id": completion_id(output, created_ms),
        "object": "chat.completion",
        "created": created_ms // 1000,
        "model": request.model or "",
        "choices": [{"index": 0, "message": message, "logprobs": served_logprobs(output, refusal is not None), "finish_reason": finish}],
        "usage": usage_of(output),
    }


def encode_error(message: str, *, status: int = 400, error_type: str | None = None) -> ErrorResponse:
    """An OpenAI-shaped error the SDKs raise as their status's error class, and never retry."""
    kind = error_type or _ERROR_TYPES.get(status) or ("server_error" if status >= 500 else "invalid_request_error")
    text = dumps({"error": {"message": message, "type": kind, "param": None, "code": "blackbox"}})
    request_id = "req_bb" + digest(f"{text}\0{status}")
    headers = {"content-type": "application/json", "x-should-retry": "false", "x-request-id": request_id}
    return ErrorResponse(status=status, headers=headers, body=text.encode())


def normalize_answer(answer: Any, ids: CallIds) -> ModelOutput | None:
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
    refusal = refusal_text(message.get("refusal"))
    out: ModelOutput
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
