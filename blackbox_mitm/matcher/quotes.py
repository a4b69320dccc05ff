"""The texts a ``Difference`` quotes (matcher/difference.py): one message's fields as text, two values compared, quotes cut.

``compare`` shows two values as text (``json_text`` is their canonical JSON) and
finds the first differing character; ``message_difference`` compares one message
field by field (see the order in difference.py's docstring); ``cut`` keeps
``QUOTE_CHARS`` characters of a quote from ``QUOTE_CONTEXT`` before the
difference, ``cut_role`` a role or tool name to ``ROLE_CHARS``, and
``escape_controls`` keeps a quote on one line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from blackbox_mitm.cassette.canonical import canonical_bytes

QUOTE_CHARS = 120
QUOTE_CONTEXT = 40
ROLE_CHARS = 32

ABSENT: Any = object()  # a value one side does not have
_SCAN_CHUNK = 1024

Found = tuple[int | None, str | None, str | None]  # at_char, recorded text, got text


# --- comparing one message -----------------------------------------------------------------


def message_difference(a: Any, b: Any) -> tuple[str, Found] | None:
    if not (isinstance(a, Mapping) and isinstance(b, Mapping)):
        found = compare(a, b, json_text)
        return ("content", found) if found else None
    found = compare(a.get("role", ABSENT), b.get("role", ABSENT), text_of)
    if found:
        return "role", found
    ca, cb = a.get("content", ABSENT), b.get("content", ABSENT)
    for field, view in (("content", content_text), ("tool_call_id", _tool_call_ids), ("tool_calls", _tool_calls)):
        ta = None if ca is ABSENT else view(ca)
        tb = None if cb is ABSENT else view(cb)
        if ta != tb:
            return field, texts_differ(ta, tb)
    # The texts agree but the structure does not: quote the content itself.
    found = compare(ca, cb, json_text)
    return ("content", found) if found else None


def _parts(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, list):
        return [p for p in content if isinstance(p, Mapping)]
    return []


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return json_text(content)
    lines = []
    for part in _parts(content):
        kind = part.get("type")
        if kind == "text":
            lines.append(text_of(part.get("text")))
        elif kind == "tool_result":
            if "error" in part:
                lines.append("error: " + text_of(part.get("error")))
            else:
                lines.append(text_of(part.get("result")))
    return "\n".join(lines)


def _tool_call_ids(content: Any) -> str:
    return ",".join(text_of(p.get("toolCallId")) for p in _parts(content) if p.get("type") in ("tool_use", "tool_result"))


def _tool_calls(content: Any) -> str:
    return "; ".join(
        f"{text_of(p.get('toolName'))}({json_text(p.get('toolInput'))})" for p in _parts(content) if p.get("type") == "tool_use"
    )


# --- texts, quotes ---------------------------------------------------------------------------


def json_text(value: Any) -> str:
    return canonical_bytes(value).decode("utf-8")


def text_of(value: Any) -> str:
    return value if isinstance(value, str) else json_text(value)


def get_field(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def role_of(message: Any) -> str | None:
    return cut_role(get_field(message, "role"))


def cut_role(value: Any) -> str | None:
    if value is None:
        return None
    return text_of(value)[:ROLE_CHARS]


def compare(a: Any, b: Any, show: Callable[[Any], str]) -> Found | None:
    """Compare two values (either may be ``ABSENT``) by ``show`` text, then by canonical JSON."""
    if a is ABSENT and b is ABSENT:
        return None
    if a is ABSENT or b is ABSENT:
        return None, None if a is ABSENT else show(a), None if b is ABSENT else show(b)
    ta, tb = show(a), show(b)
    if ta != tb:
        return texts_differ(ta, tb)
    ja, jb = json_text(a), json_text(b)
    if ja != jb:
        return texts_differ(ja, jb)
    return None


def texts_differ(a: str | None, b: str | None) -> Found:
    if a is None or b is None:
        return None, a, b
    return _first_diff(a, b), a, b


def _first_diff(a: str, b: str) -> int:
    """Index of the first differing character (the shorter length when one is a prefix of the other)."""
    n = min(len(a), len(b))
    i = 0
    # Whole chunks compare in C; only the chunk holding the difference is walked.
    while i < n and a[i : i + _SCAN_CHUNK] == b[i : i + _SCAN_CHUNK]:
        i += _SCAN_CHUNK
    while i < n and a[i] == b[i]:
        i += 1
    return min(i, n)


def cut(text: str | None, at_char: int | None = None) -> str | None:
    if text is None:
        return None
    start = 0 if at_char is None else max(0, at_char - QUOTE_CONTEXT)
    return text[start : start + QUOTE_CHARS]


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def escape_controls(text: str) -> str:
    # One line per quote: control characters are written as escapes, everything else as is.
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F or ch in "\u2028\u2029":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)
