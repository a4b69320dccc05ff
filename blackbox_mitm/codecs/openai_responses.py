"""The OpenAI Responses API codec: ``POST …/responses`` bodies <-> the cassette's neutral payloads.

The functions every codec has (see ``base``); the input side is in
``openai_responses_items``, the answer side and streams in
``openai_responses_stream``. Plain Python, no mitmproxy. Decisions the spec
leaves open:

* ``instructions`` then the leading ``system``/``developer`` messages, joined with
  a blank line, are the ``systemPrompt``. Request controls take the chat codec's
  neutral names (``max_output_tokens`` is ``maxTokens``, ``reasoning.effort`` is
  ``reasoningEffort``, ``text.format`` is ``responseFormat``, ``text.verbosity`` is
  ``verbosity``); ``store``, ``metadata``, ``include``, ``prompt_cache_key``,
  ``service_tier``, ``truncation``, ``stream_options``, item ids and statuses, an
  assistant message's ``phase`` and every other field are not compared.
* ``strict`` on a function tool is not compared: ``true`` (this API's default)
  and ``false`` both record like leaving it out. (Refusing ``strict: false``, as
  the chat codec refuses the non-default, would refuse Codex: it sends ``strict:
  false`` on every function tool.)
* ``previous_response_id``: the request's items are appended to the stored
  conversation of that response (this run's, recorded or served by us), so
  ``model_input`` holds the whole conversation, exactly as if the client had sent
  every item. An id this run never saw, ``conversation`` and a stored ``prompt``
  are refused: their history is on OpenAI's side.
* Responses: one ``message`` (one ``output_text`` or ``refusal`` part) before any
  ``function_call`` / ``custom_tool_call`` items; ``reasoning`` items are dropped;
  ``status: "incomplete"`` for ``max_output_tokens`` is a length stop. Anything a
  replay could not give back is refused (``REFUSALS``).
* A body this codec cannot read (not JSON, an item that is not an object, an
  unknown role or item type, a call without a ``call_id``) is a
  ``BlackboxUnsupportedError`` naming the field, like a refusal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from blackbox_mitm.codecs import openai_chat, openai_responses_ws
from blackbox_mitm.codecs.base import STOP_LENGTH, STOP_REFUSAL, CallIds, DecodedRequest, ErrorResponse
from blackbox_mitm.codecs.openai_responses_items import (
    HOSTED_ITEMS,
    LOCAL_ITEMS,
    NAME,
    PROVIDER,
    REFUSALS,
    SYSTEM_JOINER,
    ResponsesRequest,
    chain_items,
    decode_tools,
    dumps,
    given,
    loads,
    malformed,
    refuse,
    remember,
    transcript,
)
from blackbox_mitm.codecs.openai_responses_stream import (
    aggregate_stream,
    encode_response,
    encode_stream,
    encode_stream_error,
    is_stream_end,
)
from blackbox_mitm.codecs.websocket_base import WebSocketCodec

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
    "WEBSOCKET",
    "aggregate_stream",
    "decode_request",
    "decode_response",
    "encode_error",
    "encode_response",
    "encode_stream",
    "encode_stream_error",
    "forward_body",
    "is_stream_end",
    "matches",
    "normalize_answer",
    "rewrite_tool_result",
    "speaks_for",
]

# The WebSocket transport's companion (``wss://…/v1/responses``): each response.create message is one call.
WEBSOCKET: WebSocketCodec = openai_responses_ws
DEFAULT_HOSTS: tuple[str, ...] = ("api.openai.com",)
CREDENTIAL_HEADERS: tuple[str, ...] = ("authorization", "api-key")
CREDENTIAL_QUERY: tuple[str, ...] = ()
KEY_ENV_VARS: tuple[str, ...] = ("OPENAI_API_KEY", "CODEX_API_KEY")
ID_PREFIXES: tuple[str, ...] = ("resp_", "msg_", "fc_", "ctc_", "call_", "rs_")
RESPONSE_KEYS: tuple[str, ...] = (
    "previous_response_id",
    "call_id",
    "incomplete_details",
    "encrypted_content",
    "sequence_number",
    "created_at",
    "output_text",
    "input_tokens_details",
    "output_tokens_details",
)
# Request controls that are compared: wire name (a dot for a nested field) -> the chat codec's neutral name.
PARAMS: tuple[tuple[str, str], ...] = (
    ("max_output_tokens", "maxTokens"),
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("tool_choice", "toolChoice"),
    ("text.format", "responseFormat"),
    ("parallel_tool_calls", "parallelToolCalls"),
    ("reasoning.effort", "reasoningEffort"),
    ("top_logprobs", "topLogprobs"),
    ("text.verbosity", "verbosity"),
    ("stream", "stream"),
)
_ECHO_KEYS = (
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "parallel_tool_calls",
    "previous_response_id",
    "prompt_cache_key",
    "reasoning",
    "safety_identifier",
    "store",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "truncation",
    "user",
)


def matches(method: str, path: str, query: str = "") -> bool:
    """``POST …/responses`` (``/v1/responses``, Codex's ``/backend-api/codex/responses``)."""
    return method.upper() == "POST" and path.rstrip("/").endswith("/responses")


def speaks_for(path: str) -> bool:
    """The Responses API's other paths: ``/v1/responses/{id}``, ``…/input_items``, ``/v1/conversations``."""
    p = path.split("?", 1)[0].rstrip("/")
    return p.endswith("/responses") or "/responses/" in p or "/conversations" in p


# --- requests ------------------------------------------------------------------------


def _own_items(raw: Any) -> tuple[list[Any], list[tuple[str, Any]]]:
    """The request's own input items, as sent and with their paths (a string is one user message)."""
    if raw is None:
        return [], []
    if isinstance(raw, str):
        item = {"type": "message", "role": "user", "content": raw}
        return [item], [("input", item)]
    if not isinstance(raw, list):
        malformed("input", "input is neither a string nor a list of items")
    return list(raw), [(f"input[{i}]", item) for i, item in enumerate(raw)]


def _params(req: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for wire, neutral in PARAMS:
        head, _, tail = wire.partition(".")
        value = req.get(head)
        if tail:
            value = value.get(tail) if isinstance(value, dict) else None
        if neutral == "stream":
            value = True if value is True else None
        if value is not None:
            params[neutral] = value
    return params


def decode_request(body: bytes, ids: CallIds, *, path: str = "", query: str = "") -> DecodedRequest:
    """A Responses request body -> its neutral ``model_input`` (the whole conversation; refused fields raise)."""
    req = loads(body, "request")
    if not isinstance(req, dict):
        malformed("body", "the request body is not a JSON object")
    if req.get("background") is True:
        refuse("openai.responses.background", "background", True)
    for key in ("conversation", "prompt"):
        if given(req, key):
            refuse(f"openai.responses.{key}", key)
    history: list[tuple[str, Any]] = []
    previous = req.get("previous_response_id")
    if previous is not None:
        if not isinstance(previous, str) or not previous:
            malformed("previous_response_id", "previous_response_id is not a string")
        chain = chain_items(ids, previous)
        if chain is None:
            refuse("openai.responses.previous_response_id", "previous_response_id", previous)
        history = chain
    own, own_paths = _own_items(req.get("input"))
    system, messages, more_tools = transcript([*history, *own_paths], ids)
    instructions = req.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        malformed("instructions", "instructions is not a string")
    if instructions is not None:
        system = [instructions, *system]
    model_input: dict[str, Any] = {"messages": messages, "tools": decode_tools(req.get("tools"), "tools") + more_tools}
    if system:
        model_input["systemPrompt"] = SYSTEM_JOINER.join(system)
    model = req.get("model") if isinstance(req.get("model"), str) else None
    if model is not None:
        model_input["model"] = model
    params = _params(req)
    if params:
        model_input["params"] = params
    echo = {k: req[k] for k in _ECHO_KEYS if given(req, k)}
    return ResponsesRequest(NAME, model_input, model=model, stream=req.get("stream") is True, previous=previous, items=own, echo=echo)


# --- responses -----------------------------------------------------------------------


def _message(item: dict[str, Any], at: str) -> tuple[str, str | None]:
    """(text, refusal) of an output message: one output_text or refusal part."""
    content = item.get("content")
    if not isinstance(content, list):
        malformed(f"{at}.content", "a message without a content list")
    if len(content) > 1:
        refuse("openai.responses.output_layout", f"{at}.content")
    if not content:
        return "", None
    part = content[0]
    kind = part.get("type") if isinstance(part, dict) else None
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        return "", part["refusal"]
    if kind != "output_text" or not isinstance(part.get("text"), str):
        malformed(f"{at}.content[0]", f"a message part of type {kind!r}")
    for key in ("annotations", "logprobs"):
        if part.get(key):
            refuse("openai.responses.annotations", f"{at}.content[0].{key}")
    return part["text"], None


def _call(item: dict[str, Any], kind: str, at: str) -> tuple[str | None, str, Any]:
    name, native = item.get("name"), item.get("call_id")
    if not isinstance(name, str) or not name:
        malformed(f"{at}.name", f"a {kind} without a name")
    if isinstance(item.get("namespace"), str) and item["namespace"]:
        name = f"{item['namespace']}.{name}"
    if kind == "custom_tool_call":
        if not isinstance(item.get("input"), str):
            malformed(f"{at}.input", "a custom_tool_call without a string input")
        return (native if isinstance(native, str) else None), name, item["input"]
    raw = item.get("arguments")
    if isinstance(raw, str):
        try:
            return (native if isinstance(native, str) else None), name, json.loads(raw)
        except ValueError:
            pass
    refuse("openai.responses.tool_arguments", f"{at}.arguments")


def _check_status(resp: dict[str, Any]) -> bool:
    """Whether the response stopped at its length limit; any other unfinished state is refused."""
    if given(resp, "error"):
        refuse("openai.responses.status", "error")
    status = resp.get("status")
    if status == "incomplete":
        details = resp.get("incomplete_details")
        if not isinstance(details, dict) or details.get("reason") != "max_output_tokens":
            refuse("openai.responses.status", "incomplete_details.reason")
        return True
    if status not in ("completed", None):
        refuse("openai.responses.status", "status", status)
    return False


def _model_output(resp: dict[str, Any], ids: CallIds) -> dict[str, Any]:
    length = _check_status(resp)
    output = resp.get("output")
    if not isinstance(output, list):
        malformed("output", "a response without an output list")
    text: str | None = None
    refusal: str | None = None
    calls: list[tuple[str | None, str, Any]] = []
    for k, item in enumerate(output):
        at = f"output[{k}]"
        kind = item.get("type") if isinstance(item, dict) else None
        if not isinstance(kind, str):
            malformed(f"{at}.type", "an output item's type is not a string")
        if kind == "reasoning":
            continue
        if kind == "message":
            if text is not None or refusal is not None or calls:
                refuse("openai.responses.output_layout", at)
            text, refusal = _message(item, at)
        elif kind in ("function_call", "custom_tool_call"):
            calls.append(_call(item, kind, at))
        elif kind in HOSTED_ITEMS:
            refuse("openai.responses.hosted_tool_call", f"{at}.type", kind)
        elif kind in LOCAL_ITEMS:
            refuse("openai.responses.local_tool", f"{at}.type", kind)
        else:
            refuse("openai.responses.unknown_item", f"{at}.type", kind)
    out: dict[str, Any]
    if refusal is not None:
        if calls or length or text:
            refuse("openai.responses.refusal_mixed", "output")
        return {"type": "final_answer", "text": refusal, "stop": STOP_REFUSAL}
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


def decode_response(body: bytes | Mapping[str, Any], ids: CallIds, request: DecodedRequest) -> dict[str, Any]:
    """A Response object (bytes, or what ``aggregate_stream`` built) -> its neutral ``model_output``."""
    resp = dict(body) if isinstance(body, Mapping) else loads(body, "response")
    if not isinstance(resp, dict):
        malformed("body", "the response body is not a JSON object")
    out = _model_output(resp, ids)
    if isinstance(resp.get("id"), str):
        remember(ids, resp["id"], request, resp["output"])
    return out


# --- errors, user-written answers, fork edits ------------------------------------------------


def encode_error(message: str, *, status: int = 400, error_type: str | None = None) -> ErrorResponse:
    """An OpenAI-shaped error (the same as chat completions'), with ``x-should-retry: false``."""
    return openai_chat.encode_error(message, status=status, error_type=error_type)


def normalize_answer(answer: Any, ids: CallIds) -> dict[str, Any] | None:
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
    for call in out.get("calls") or []:
        call["toolCallId"] = ids.assign(None, call["toolName"])
    if out["type"] == "final_answer" and not out["text"]:
        raise ValueError("the answer holds neither text nor a tool call")
    return out


def _inlined(req: dict[str, Any], ids: CallIds) -> bool:
    """Replace a ``previous_response_id`` we served by the items it stands for (ids stripped)."""
    previous = req.get("previous_response_id")
    store = ids.codec_state(NAME)
    if not isinstance(previous, str) or not store.get(previous, {}).get("served"):
        return False
    chain = chain_items(ids, previous) or []
    own = req.get("input")
    items = [
        {k: v for k, v in item.items() if k != "id"} for _, item in chain if isinstance(item, dict) and item.get("type") != "reasoning"
    ]
    req["input"] = items + ([{"type": "message", "role": "user", "content": own}] if isinstance(own, str) else list(own or []))
    del req["previous_response_id"]
    return True


def forward_body(body: bytes, ids: CallIds) -> bytes | None:
    """The body to send upstream when it continues a response we served (a fork going live): chain inlined."""
    try:
        req = loads(body, "request")
    except ValueError:
        return None
    if not isinstance(req, dict) or not _inlined(req, ids):
        return None
    return dumps(req).encode()


def rewrite_tool_result(body: bytes, ids: CallIds, call_id: str, text: str) -> bytes | None:
    """A fork's edited tool result: every output item answering ``call_id`` gets ``text``.

    A continuation of a response we served is inlined first (``forward_body``), so
    what goes upstream after the cut needs no state the provider never had.
    """
    try:
        req = loads(body, "request")
    except ValueError:
        return None
    if not isinstance(req, dict):
        return None
    changed = _inlined(req, ids)
    items = req.get("input")
    for item in items if isinstance(items, list) else []:
        answers = isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output")
        if answers and ids.lookup(str(item.get("call_id"))) == call_id:
            item["output"] = text
            changed = True
    return dumps(req).encode() if changed else None
