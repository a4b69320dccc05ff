"""The compared view of a ``model_input`` and its digest: exactly what strict replay compares.

The codecs have already normalized the request the way recording did (provider
ids are ``call-N``, thinking blocks dropped, adjacent text joined, only the
listed request controls kept under neutral names). What is left to do here is
to pick the compared keys and make equal things look equal:

* the view holds ``model``, ``systemPrompt``, ``messages``, ``tools`` and
  ``params``; every other key of a model_input is ignored;
* ``model``, ``systemPrompt`` and ``params`` are absent when absent or None;
  ``params: {}`` (no request control) is the same as no ``params``;
* ``messages`` and ``tools`` are lists, ``[]`` when absent;
* a message is its ``role`` and ``content``; adjacent text parts are joined
  with ``""`` as the codecs join them, and content that is text alone is a
  string (how text is split into blocks or parts is not compared);
* a tool definition is its ``name``, ``description`` (when not None) and
  ``inputSchema``.

Values are compared through canonical JSON (``canonical_bytes``), so ``1`` and
``1.0`` are equal, ``true`` and ``1`` are not, and key order never matters.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from itertools import pairwise
from typing import Any

from blackbox_mitm.cassette.canonical import canonical_bytes

__all__ = ["COMPARED_KEYS", "compared_view", "request_digest"]

COMPARED_KEYS = ("model", "systemPrompt", "messages", "tools", "params")

_MESSAGE_KEYS = ("role", "content")
_TOOL_KEYS = ("name", "description", "inputSchema")


def compared_view(model_input: Mapping[str, Any]) -> dict[str, Any]:
    """The part of ``model_input`` strict replay compares (see the module docstring).

    Idempotent: the view of a view is itself. The input is not modified; the
    view shares its leaf values.
    """
    view: dict[str, Any] = {}
    for key in ("model", "systemPrompt"):
        value = model_input.get(key)
        if value is not None:
            view[key] = value
    view["messages"] = [_message(m) for m in _as_list(model_input.get("messages"))]
    view["tools"] = [_tool(t) for t in _as_list(model_input.get("tools"))]
    params = model_input.get("params")
    if params is not None and params != {}:
        view["params"] = params
    return view


def request_digest(model_input: Mapping[str, Any]) -> str:
    """SHA-256 hex of the canonical JSON of the compared view of ``model_input``."""
    return hashlib.sha256(canonical_bytes(compared_view(model_input))).hexdigest()


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    # Not a list in a well-formed payload; kept as one item so it is still compared.
    return [value]


def _message(message: Any) -> Any:
    if not isinstance(message, Mapping):
        return message
    out = {k: message[k] for k in _MESSAGE_KEYS if k in message}
    content = out.get("content")
    if isinstance(content, list) and content:
        out["content"] = _joined_text(content)
    return out


def _is_text_part(part: Any) -> bool:
    return isinstance(part, Mapping) and len(part) == 2 and part.get("type") == "text" and isinstance(part.get("text"), str)


def _joined_text(parts: list[Any]) -> Any:
    """Adjacent text parts joined with "" (as the codecs join them); text alone becomes a string."""
    if not any(_is_text_part(a) and _is_text_part(b) for a, b in pairwise(parts)):
        if len(parts) == 1 and _is_text_part(parts[0]):
            return parts[0]["text"]
        return parts  # already joined: the common case, no copy
    out: list[Any] = []
    for part in parts:
        if _is_text_part(part) and out and _is_text_part(out[-1]):
            out[-1] = {"type": "text", "text": out[-1]["text"] + part["text"]}
        else:
            out.append(part)
    if len(out) == 1 and _is_text_part(out[0]):
        return out[0]["text"]
    return out


def _tool(tool: Any) -> Any:
    if not isinstance(tool, Mapping):
        return tool
    return {k: tool[k] for k in _TOOL_KEYS if k in tool and not (k == "description" and tool[k] is None)}
