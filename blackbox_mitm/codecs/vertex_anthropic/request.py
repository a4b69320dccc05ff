"""rawPredict requests: the Anthropic codec reads the body, the path gives the model."""

from __future__ import annotations

from urllib.parse import unquote

from blackbox_mitm.codecs import anthropic_messages
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.codecs.common.jsonio import dumps_bytes, load_object
from blackbox_mitm.codecs.vertex_anthropic import NAME, PATH, PROVIDER, VERTEX_ONLY

__all__ = ["decode_request", "rewrite_tool_result"]


def decode_request(body: bytes, ids: CallIds, *, path: str = "", query: str = "") -> DecodedRequest:
    """A rawPredict request -> the neutral ``model_input`` the same call on Anthropic's API records."""
    data = load_object(body, "request", PROVIDER)
    fields = {k: v for k, v in data.items() if k not in VERTEX_ONLY and k != "model"}
    decoded = anthropic_messages.decode_request(dumps_bytes(fields, allow_nan=False), ids)
    m = PATH.match(path)
    if m is not None:
        decoded.model = unquote(m.group("model"))
        decoded.model_input["model"] = decoded.model
    return DecodedRequest(NAME, decoded.model_input, model=decoded.model, stream=decoded.stream)


def rewrite_tool_result(body: bytes, ids: CallIds, call_id: str, text: str) -> bytes | None:
    """A fork's edited tool result, written into the Messages body."""
    return anthropic_messages.rewrite_tool_result(body, ids, call_id, text)
