"""Responses requests -> the neutral ``model_input`` (the whole conversation); the bodies a fork sends upstream."""

from __future__ import annotations

from typing import Any

from blackbox_mitm.cassette.payloads import ModelInput
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.codecs.common.jsonio import dumps, loads
from blackbox_mitm.codecs.openai_responses import ECHO_KEYS, NAME, PARAMS, PROVIDER, REFUSALS, SYSTEM_JOINER
from blackbox_mitm.codecs.openai_responses.fields import ResponsesRequest, chain_items, decode_tools, given, transcript

__all__ = ["decode_request", "forward_body", "rewrite_tool_result"]


def _own_items(raw: Any) -> tuple[list[Any], list[tuple[str, Any]]]:
    """The request's own input items, as sent and with their paths (a string is one user message)."""
    if raw is None:
        return [], []
    if isinstance(raw, str):
        item = {"type": "message", "role": "user", "content": raw}
        return [item], [("input", item)]
    if not isinstance(raw, list):
        REFUSALS.malformed("input", "input is neither a string nor a list of items")
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
    req = loads(body, "request", PROVIDER)
    if not isinstance(req, dict):
        REFUSALS.malformed("body", "the request body is not a JSON object")
    if req.get("background") is True:
        REFUSALS.refuse("openai.responses.background", "background", True)
    for key in ("conversation", "prompt"):
        if given(req, key):
            REFUSALS.refuse(f"openai.responses.{key}", key)
    history: list[tuple[str, Any]] = []
    previous = req.get("previous_response_id")
    if previous is not None:
        if not isinstance(previous, str) or not previous:
            REFUSALS.malformed("previous_response_id", "previous_response_id is not a string")
        chain = chain_items(ids, previous)
        if chain is None:
            REFUSALS.refuse("openai.responses.previous_response_id", "previous_response_id", previous)
        history = chain
    own, own_paths = _own_items(req.get("input"))
    system, messages, more_tools = transcript([*history, *own_paths], ids)
    instructions = req.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        REFUSALS.malformed("instructions", "instructions is not a string")
    if instructions is not None:
        system = [instructions, *system]
    model_input: ModelInput = {"messages": messages, "tools": decode_tools(req.get("tools"), "tools") + more_tools}
    if system:
        model_input["systemPrompt"] = SYSTEM_JOINER.join(system)
    model = req.get("model") if isinstance(req.get("model"), str) else None
    if model is not None:
        model_input["model"] = model
    params = _params(req)
    if params:
        model_input["params"] = params
    echo = {k: req[k] for k in ECHO_KEYS if given(req, k)}
    return ResponsesRequest(NAME, model_input, model=model, stream=req.get("stream") is True, previous=previous, items=own, echo=echo)


def _inlined(req: dict[str, Any], ids: CallIds) -> bool:
    """Replace a ``previous_response_id`` we served by the items it stands for (ids stripped)."""
    previous = req.get("previous_response_id")
    store = ids.codec_state(NAME)
    if not isinstance(previous, str) or not store.get(previous, {}).get("served"):
        return False
    chain = chain_items(ids, previous) or []
    own = req.get("input")
    # A served reasoning item goes upstream only with its encrypted_content (without it, it names state on OpenAI's side).
    items = [
        {k: v for k, v in item.items() if k != "id"}
        for _, item in chain
        if isinstance(item, dict) and (item.get("type") != "reasoning" or item.get("encrypted_content"))
    ]
    req["input"] = items + ([{"type": "message", "role": "user", "content": own}] if isinstance(own, str) else list(own or []))
    del req["previous_response_id"]
    return True


def forward_body(body: bytes, ids: CallIds) -> bytes | None:
    """The body to send upstream when it continues a response we served (a fork going live): chain inlined."""
    try:
        req = loads(body, "request", PROVIDER)
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
        req = loads(body, "request", PROVIDER)
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
