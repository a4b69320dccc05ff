"""Adjacent messages that are one turn: compared joined, when the agent's provider codec says its clients send them so.

A client may send one model turn back as several adjacent messages of one role:
google-genai's streamed chat (``chats.send_message_stream``) keeps each streamed
chunk's content as its own history content, so the same answer goes back as 12
messages when the provider sent 12 chunks and as 3 when a replay served its own
64-character pieces. A codec that speaks for such clients declares the roles
whose adjacent messages are one turn (``ONE_TURN_ROLES``, e.g. the Gemini
codec's ``("assistant",)``); a replay turns the fold on when the agent's first
model call is that codec's (``with_one_turn``), and ``CompareRules.one_turn``
carries it to every comparison of the run.

``fold_turns`` joins each run of adjacent messages of one such role into one
message whose content is their parts in order (a string content is one text
part, ``""`` none); ``normalize`` then joins adjacent text parts as it always
does. So ``"ab"`` then ``"c"`` compares equal to ``"abc"``, while a tool call,
a tool result, media or a server-side part between two texts stays between them
(the texts are not joined across it), and a message of another role ends the
run. Nothing is folded in the cassette: its model_input keeps what was sent, and
the fold is applied to the recorded and the live request alike, so a request
that matched without the fold matches with it (the fold is a function of what
is compared). ``turn_spans`` says which original messages each compared message
stands for, so a divergence report names the agent's own message index.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from blackbox_mitm.matcher.masks import CompareRules

__all__ = ["fold_turns", "turn_spans", "with_one_turn"]


def with_one_turn(rules: CompareRules, declared: tuple[str, ...]) -> CompareRules:
    """``rules`` with the ``declared`` roles folded (a codec's ``codecs.one_turn_roles``; the same object when none are new)."""
    roles = tuple(r for r in declared if r not in rules.one_turn)
    if not roles:
        return rules
    return replace(rules, one_turn=rules.one_turn + roles)


def _foldable(message: Any, roles: tuple[str, ...]) -> str | None:
    """The message's role when it may join its neighbours (a role of ``roles``, content a string or a list), else None."""
    if not isinstance(message, Mapping):
        return None
    role = message.get("role")
    if role not in roles or not isinstance(message.get("content"), (str, list)):
        return None
    return str(role)


def turn_spans(messages: list[Any], roles: tuple[str, ...]) -> list[tuple[int, int]]:
    """(first, last + 1) of the original messages each compared message stands for, in order."""
    spans: list[tuple[int, int]] = []
    previous: str | None = None
    for i, message in enumerate(messages):
        role = _foldable(message, roles) if roles else None
        if role is not None and role == previous:
            spans[-1] = (spans[-1][0], i + 1)
        else:
            spans.append((i, i + 1))
        previous = role
    return spans


def fold_turns(messages: list[Any], roles: tuple[str, ...]) -> list[Any]:
    """``messages`` with each run of adjacent messages of one of ``roles`` joined into one (the same list when none is)."""
    if not roles or len(messages) < 2:
        return messages
    spans = turn_spans(messages, roles)
    if len(spans) == len(messages):
        return messages  # nothing adjacent: the common case, no copy
    return [messages[a] if b - a == 1 else _joined(messages[a:b]) for a, b in spans]


def _joined(run: list[Mapping[str, Any]]) -> dict[str, Any]:
    """One message of the run's role holding every part of the run, in order (text parts joined later, by normalize)."""
    parts: list[Any] = []
    for message in run:
        content = message["content"]
        if isinstance(content, str):
            if content:
                parts.append({"type": "text", "text": content})
        else:
            parts.extend(content)
    return {"role": run[0]["role"], "content": parts if parts else ""}
