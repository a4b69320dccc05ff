"""InvokeModel requests: the Anthropic codec reads the body, the path gives the model and whether it streams."""

from __future__ import annotations

from blackbox_mitm.codecs import anthropic_messages
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.codecs.bedrock import BEDROCK_ONLY, NAME, PATH, PROVIDER, REFUSALS
from blackbox_mitm.codecs.bedrock.fields import model_id
from blackbox_mitm.codecs.common.jsonio import dumps_bytes, load_object

__all__ = ["decode_request", "rewrite_tool_result"]


def decode_request(body: bytes, ids: CallIds, *, path: str = "", query: str = "") -> DecodedRequest:
    """An InvokeModel request -> the neutral ``model_input`` the same call on Anthropic's API records."""
    data = load_object(body, "request", PROVIDER)
    if "messages" not in data and ("prompt" in data or "inputText" in data):
        REFUSALS.refuse("bedrock.not_anthropic", "body", sorted(data)[:3])
    m = PATH.match(path)
    stream = m is not None and m.group("op") == "invoke-with-response-stream"
    body_fields = {k: v for k, v in data.items() if k not in BEDROCK_ONLY and k not in ("model", "stream")}
    if stream:
        body_fields["stream"] = True
    decoded = anthropic_messages.decode_request(dumps_bytes(body_fields, allow_nan=False), ids)
    if m is not None:
        neutral, sent = model_id(m.group("model"))
        decoded.model_input["model"] = neutral
        decoded.model = sent
    return DecodedRequest(NAME, decoded.model_input, model=decoded.model, stream=stream)


def rewrite_tool_result(body: bytes, ids: CallIds, call_id: str, text: str) -> bytes | None:
    """A fork's edited tool result, written into the Messages body (``anthropic_messages.rewrite_tool_result``)."""
    return anthropic_messages.rewrite_tool_result(body, ids, call_id, text)
