"""Tool-call ids an agent echoes in request text, replaced by the cassette's ``call-N`` before hashing and matching.

The codecs map provider-native tool-call ids to neutral ``call-N`` in the
structured fields (``CallIds``), and a replay serves ids of its own
(``toolu_bb0``). Agents also write those ids into later prompt *text*: Claude
Code's task notifications say ``<tool-use-id>toolu_01MOPRgsCrnLw1OqnBwDeiuS</tool-use-id>``,
and any agent may quote a call id back to its model. Recorded as is, a
provider-native id would enter the cassette; replayed as is, the agent's text
would hold the served id where the recording held the native one, and a strict
replay would diverge.

``neutralize_echoed_ids`` rewrites every string of a neutral ``model_input``
(message text, tool inputs and results, the system prompt), replacing each id
the run has mapped — exactly those, as whole tokens — by its ``call-N``. The
same call makes a recording neutral and a replay comparable: while recording,
``CallIds`` knows the native ids the provider sent; in a replay, the ids it
served. An id the run never mapped (an id in a file the agent read, an example
in source code) is left alone: it is the user's data, not this run's protocol;
so is one shorter than 8 characters (a bare ``1`` could be any word).

Agents also quote ids the codecs never map: Claude Code's billing line at the head of its system
prompt names the previous answer's request id and message id (``cc_prev_req=req_011…;``,
``cc_prev_msg=msg_01…;``). Those labelled values are replaced by ``<provider-id>`` at record and at
replay alike (``LABELLED``, from the agent profiles in ``matcher.profiles``, where agent-specific
knowledge lives); the comparison already leaves them out (the ``claude-code.billing``
mask), so this only keeps the provider's ids out of the cassette.

Cheap when there is nothing to do: no mapped id, or no string holding the
start of one, costs one serialization of the payload and a substring test on it
(a walk of every string only when one may hold an id); the payload is copied only
where something was replaced.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Mapping
from typing import Any

import orjson

from blackbox_mitm.codecs.base import CallIds
from blackbox_mitm.matcher.profiles import LABELLED, LABELS, PROVIDER_ID

__all__ = ["LABELLED", "PROVIDER_ID", "EchoedIds", "neutralize_echoed_ids"]

_TOKEN = "A-Za-z0-9_-"  # what a provider id is made of: a match must not continue a longer token
_SHORTEST = 8  # an "id" shorter than this (a bare "1") could be any word of the text: never replaced
_WHOLE_TOKEN = re.compile(f"[{_TOKEN}]+")
# A whole token (no token character before or after it) long enough to be an id: looked up among the mapped ids.
# The same matches as the alternation of the ids themselves, when every id is made of token characters.
_ANY_TOKEN = re.compile(f"(?<![{_TOKEN}])[{_TOKEN}]{{{_SHORTEST},}}(?![{_TOKEN}])")


class EchoedIds:
    """The replacement rule for one run's mapped ids, extended as the run maps new ones (thread-safe).

    Ids are only ever added, so each call adds only the ids mapped since the previous one: a
    rule rebuilt from every id on every call would cost more the longer the run. Ids made of
    token characters only (every provider's) are replaced through one generic token pattern
    and a dictionary lookup; when an id holds another character, the whole alternation of
    ids is compiled instead (rebuilt as ids are added).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0  # how many of ``known``'s ids have been taken in
        self._mapped: dict[str, str] = {}  # every id taken in (>= _SHORTEST chars, mapped to something else) -> call-N
        self._odd = False  # an id holding a non-token character: the alternation is needed
        self._heads: tuple[str, ...] = ()
        self._pattern: re.Pattern[str] | None = None

    def _take_in(self, known: Mapping[str, str]) -> tuple[re.Pattern[str] | None, tuple[str, ...], dict[str, str]]:
        with self._lock:
            n = len(known)
            if n != self._count:
                try:  # the newest ids: ``known`` is a view of an insertion-ordered dict that only grows
                    recent = reversed(known.items())  # type: ignore[call-overload]
                    new = list(itertools.islice(recent, n - self._count)) if n > self._count else []
                    consistent = len(known) == n and n >= self._count
                except (RuntimeError, TypeError):  # changed meanwhile, or not reversible: take it in whole
                    consistent = False
                if not consistent:
                    snapshot = dict(known.items())  # one C-level copy
                    new, n = list(snapshot.items()), len(snapshot)
                    self._mapped, self._odd, self._heads = {}, False, ()
                added = [(k, v) for k, v in new if len(k) >= _SHORTEST and k != v]
                if added:
                    mapped = self._mapped
                    mapped.update(added)  # in place (a copy costs every id a call): ids are only added, never changed
                    self._odd = self._odd or any(_WHOLE_TOKEN.fullmatch(k) is None for k, _ in added)
                    self._heads = tuple(sorted({*self._heads, *(_head(k) for k, _ in added)}))
                    self._pattern = _alternation(mapped) if self._odd else _ANY_TOKEN
                self._count = n
            return self._pattern, self._heads, self._mapped

    def rewrite(self, model_input: Mapping[str, Any], known: Mapping[str, str]) -> Mapping[str, Any]:
        """``model_input`` with every mapped id in its text replaced (the same object when none was)."""
        return _labelled(self._mapped_ids(model_input, known))

    def _mapped_ids(self, model_input: Mapping[str, Any], known: Mapping[str, str]) -> Mapping[str, Any]:
        pattern, heads, mapped = self._take_in(known)
        if pattern is None:
            return model_input

        def replace(m: re.Match[str]) -> str:
            found = m.group()
            return mapped.get(found, found)

        def text(s: str) -> str:
            if not any(h in s for h in heads):
                return s
            new = pattern.sub(replace, s)
            return s if new == s else new

        if not _may_hold(model_input, heads):
            return model_input
        out = _walk(model_input, text)
        return out if isinstance(out, Mapping) else model_input


def _labelled(model_input: Mapping[str, Any]) -> Mapping[str, Any]:
    """``model_input`` with the provider ids its system prompt quotes after a label (``LABELLED``) as ``<provider-id>``."""
    system = model_input.get("systemPrompt")
    if system is None or not _has_label(system if isinstance(system, str) else orjson.dumps(system).decode()):
        return model_input
    new = _walk(system, lambda s: LABELLED.sub(lambda m: m.group(1) + PROVIDER_ID, s) if _has_label(s) else s)
    return model_input if new is system else {**model_input, "systemPrompt": new}


def _has_label(text: str) -> bool:
    """Whether ``text`` holds a profile's label (``LABELS``): the fast test before the pattern runs."""
    return any(label in text for label in LABELS)


def _alternation(mapped: Mapping[str, str]) -> re.Pattern[str]:
    ids = sorted(mapped, key=len, reverse=True)
    body = "|".join(re.escape(k) for k in ids)
    return re.compile(f"(?<![{_TOKEN}])(?:{body})(?![{_TOKEN}])")


def _may_hold(model_input: Mapping[str, Any], heads: tuple[str, ...]) -> bool:
    """Whether any string of ``model_input`` may hold a head: one C serialization instead of a walk of every string.

    A head holds no character JSON escapes, so a string holding it holds it in the
    serialization too; what orjson cannot write (a lone surrogate) is walked.
    """
    if any(not h.isprintable() or '"' in h or "\\" in h for h in heads):
        return True
    try:
        serialized = orjson.dumps(model_input)
    except (TypeError, orjson.JSONEncodeError):
        return True
    return any(h.encode() in serialized for h in heads)


def neutralize_echoed_ids(model_input: Mapping[str, Any], ids: CallIds, rule: EchoedIds | None = None) -> Mapping[str, Any]:
    """``model_input`` with the ids ``ids`` has mapped, wherever they appear in its text, as their ``call-N``."""
    return (rule or EchoedIds()).rewrite(model_input, ids.known())


def _head(native: str) -> str:
    """The part of an id every occurrence starts with, for the fast substring test (``toolu_``, ``call_``)."""
    cut = max(native.find("_"), native.find("-"))
    return native[: cut + 1] if 0 < cut < 12 else native[:6]


def _walk(node: Any, text: Any) -> Any:
    """``node`` with ``text`` applied to every string value (dict keys left alone), copied only where it changed."""
    if isinstance(node, str):
        return text(node)
    if isinstance(node, dict):
        changed: dict[str, Any] | None = None
        for key, value in node.items():
            new = _walk(value, text)
            if new is not value:
                if changed is None:
                    changed = dict(node)
                changed[key] = new
        return node if changed is None else changed
    if isinstance(node, list):
        items: list[Any] | None = None
        for i, value in enumerate(node):
            new = _walk(value, text)
            if new is not value:
                if items is None:
                    items = list(node)
                items[i] = new
        return node if items is None else items
    return node
