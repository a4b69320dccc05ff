"""Whether a differing request only reorders what the recording had: "the same N items in another order".

An agent with concurrent work (background subagents, parallel tool calls)
writes what finished into its next request in the order things finished. When
a replay's order differs, the request differs from the recorded one by a
permutation, and a character offset says little. ``reordering`` looks at the
message where the first difference is and answers how many items changed
places, trying the coarsest items first:

1. the messages from that one to the end (the same messages, another order);
2. the message's content parts, when both are lists (tool results, text parts);
3. the message's text cut into blocks: top-level ``<tag>…</tag>`` elements
   (Claude Code's ``<system-reminder>`` notifications), then paragraphs
   (blank lines), then lines.

Items are compared whole (as canonical JSON for messages and parts). ``N`` is
the length of the span from the first item out of place to the last: the
items inside it are the same, in another order. None when no split makes the
two sides a permutation of each other.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from blackbox_mitm.cassette.canonical import canonical_bytes

__all__ = ["Reordering", "reordering"]

Reordering = tuple[int, str]  # (how many items changed places, what they are)

_ELEMENT = re.compile(r"<([A-Za-z][\w-]*)\b[^>]*>.*?</\1>", re.DOTALL)


def reordering(rec_messages: Sequence[Any], got_messages: Sequence[Any], index: int) -> Reordering | None:
    """How message ``index`` and what follows differ only in order (see the module docstring), or None."""
    span = _permuted([_key(m) for m in rec_messages[index:]], [_key(m) for m in got_messages[index:]])
    if span:
        return span, "messages"
    if index >= len(rec_messages) or index >= len(got_messages):
        return None
    a, b = _content(rec_messages[index]), _content(got_messages[index])
    if isinstance(a, list) and isinstance(b, list):
        span = _permuted([_key(p) for p in a], [_key(p) for p in b])
        if span:
            return span, "content parts"
    ta, tb = _text_of(a), _text_of(b)
    if ta is None or tb is None:
        return None
    for split, what in _SPLITS:
        span = _permuted(split(ta), split(tb))
        if span:
            return span, what
    return None


def _permuted(a: Sequence[Any], b: Sequence[Any]) -> int:
    """The span of items out of place when ``b`` is ``a`` reordered (0 when it is not, or nothing moved)."""
    if len(a) < 2 or len(a) != len(b) or a == b or sorted(a) != sorted(b):
        return 0
    first = next(i for i in range(len(a)) if a[i] != b[i])
    last = next(i for i in range(len(a) - 1, -1, -1) if a[i] != b[i])
    return last - first + 1


def _key(value: Any) -> str:
    try:
        return canonical_bytes(value).decode("utf-8", "surrogatepass")
    except (TypeError, ValueError):
        return repr(value)


def _content(message: Any) -> Any:
    return message.get("content") if isinstance(message, dict) else None


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(t for t in texts if isinstance(t, str)) if texts else None
    return None


def _elements(text: str) -> list[str]:
    """Top-level ``<tag>…</tag>`` blocks, and the text between them (stripped, when not blank)."""
    out: list[str] = []
    at = 0
    for m in _ELEMENT.finditer(text):
        if text[at : m.start()].strip():
            out.append(text[at : m.start()].strip())
        out.append(m.group(0))
        at = m.end()
    if text[at:].strip():
        out.append(text[at:].strip())
    return out


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def _lines(text: str) -> list[str]:
    return text.splitlines()


_SPLITS: tuple[tuple[Callable[[str], list[str]], str], ...] = (
    (_elements, "blocks of text"),
    (_paragraphs, "paragraphs"),
    (_lines, "lines"),
)
