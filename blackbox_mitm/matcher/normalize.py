"""The compared view of a ``model_input`` and its digest: exactly what strict replay compares.

The codecs have already normalized the request the way recording did (provider
ids are ``call-N``, thinking blocks dropped, adjacent text joined, only the
listed request controls kept under neutral names). What is left to do here is
to pick the compared keys and make equal things look equal:

* the view holds ``model``, ``systemPrompt``, ``messages``, ``tools`` and
  ``params``, and ``systemMedia`` (Blackbox's extension: the system prompt's
  media parts, by digest) when there is any; every other key of a model_input
  is ignored;
* ``model``, ``systemPrompt`` and ``params`` are absent when absent or None;
  ``params: {}`` (no request control) is the same as no ``params``;
* a request control is compared under our neutral name whatever name the
  cassette gives it: the spec lists the controls by their wire names
  (``max_tokens``, ``top_p``...), which another implementation may write into
  ``params``, so each codec's wire name is the same control as its neutral name
  (``top_p`` is ``topP``; ``max_tokens`` and ``max_completion_tokens`` are both
  ``maxTokens``). A name that is not a listed control is compared as it is;
* ``messages`` and ``tools`` are lists, ``[]`` when absent;
* a message is its ``role`` and ``content``; adjacent text parts are joined
  with ``""`` as the codecs join them, and content that is text alone is a
  string (how text is split into blocks or parts is not compared);
* a tool definition is its ``name``, ``description`` (when not None),
  ``inputSchema`` and ``strict`` (Blackbox's extension; only ever ``true``), and a
  provider-defined tool's ``builtin`` (its type and options, ``cassette/server_parts.py``).

With ``rules.one_turn`` (the agent's codec declares it, ``matcher.turns``), adjacent
messages of one of those roles are compared as one message: ``"ab"`` then ``"c"``
is ``"abc"``; a tool call or any other non-text part between two texts stays
between them.

The tool_result parts of a user turn are compared in the order of the tool_use
parts they answer (``cassette.payloads.order_tool_results``), whatever order
the agent sent them in. With ``rules`` (``masks.CompareRules``), every span a
mask matches in a compared text is replaced by its placeholder, on both sides.

Values are compared through canonical JSON (``canonical_bytes``), so ``1`` and
``1.0`` are equal, ``true`` and ``1`` are not, and key order never matters.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from itertools import pairwise
from typing import Any, TypedDict

from blackbox_mitm.cassette.canonical import canonical_bytes
from blackbox_mitm.cassette.payloads import order_tool_results
from blackbox_mitm.codecs import REGISTERED
from blackbox_mitm.matcher.masks import NO_RULES, CompareRules
from blackbox_mitm.matcher.turns import fold_turns

__all__ = ["COMPARED_KEYS", "CONTROL_ALIASES", "ComparedView", "compared_view", "request_digest"]


class _ViewHead(TypedDict, total=False):
    model: Any
    systemPrompt: Any
    systemMedia: Any


class _ViewParams(TypedDict, total=False):
    params: Any


class ComparedView(_ViewHead, _ViewParams):
    """The part of a model_input strict replay compares: each message's and tool's compared keys, the neutral params.

    As found in the payload (a recorded one is not checked first): values keep their JSON, whatever their shape.
    """

    messages: list[Any]
    tools: list[Any]


COMPARED_KEYS = ("model", "systemPrompt", "systemMedia", "messages", "tools", "params")

#: A request control's wire name (as the spec lists it) -> our neutral name, from every codec's ``PARAMS``.
CONTROL_ALIASES: dict[str, str] = {wire: neutral for codec in REGISTERED for wire, neutral in codec.PARAMS if wire != neutral}

_MESSAGE_KEYS = ("role", "content")
_TOOL_KEYS = ("name", "description", "inputSchema", "strict", "builtin")


def compared_view(model_input: Mapping[str, Any], rules: CompareRules = NO_RULES) -> ComparedView:
    """The part of ``model_input`` strict replay compares (see the module docstring).

    Idempotent: the view of a view is itself. The input is not modified; the
    view shares its leaf values.
    """
    model_input = order_tool_results(model_input)
    head: _ViewHead = {}
    model, system = model_input.get("model"), model_input.get("systemPrompt")
    if model is not None:
        head["model"] = model
    if system is not None:
        head["systemPrompt"] = system
    if model_input.get("systemMedia"):  # absent, None and [] alike: a model_input without it hashes as before
        head["systemMedia"] = model_input["systemMedia"]
    params = model_input.get("params")
    tail: _ViewParams = {}
    if params is not None and params != {}:
        tail["params"] = _neutral_params(params)
    view: ComparedView = {
        **head,
        "messages": [_message(m) for m in fold_turns(_as_list(model_input.get("messages")), rules.one_turn)],
        "tools": [_tool(t) for t in _as_list(model_input.get("tools"))],
        **tail,
    }
    return rules.mask_view(view) if rules else view


def request_digest(model_input: Mapping[str, Any], rules: CompareRules = NO_RULES) -> str:
    """SHA-256 hex of the canonical JSON of the compared view of ``model_input`` (masked by ``rules``)."""
    return hashlib.sha256(canonical_bytes(compared_view(model_input, rules))).hexdigest()


def _neutral_params(params: Any) -> Any:
    """``params`` with every control under its neutral name (the same dict when it already is)."""
    if not isinstance(params, Mapping) or not any(key in CONTROL_ALIASES for key in params):
        return params
    names = [CONTROL_ALIASES.get(key, key) for key in params]
    if len(set(names)) != len(names):
        return params  # two names of one control (max_tokens and maxTokens): compared as written
    return dict(zip(names, params.values(), strict=True))


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
