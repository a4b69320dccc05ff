"""Numbers a cassette cannot hold: ``1e400``, ``NaN``, ``Infinity``, an integer beyond the double range.

Python's JSON parser (which reads what orjson refuses, such as a lone surrogate)
turns ``1e400`` into ``inf`` and accepts ``NaN``; canonical JSON (the step hash,
``JSON.stringify``) can only write them as ``null``, so a cassette holding one
would replay a value the agent never sent. A request body holding one is refused
when the call is made, by the field's name, like every other refusal: the agent
gets an error, and the run's other calls are recorded and saved as usual.

``unrepresentable_number(body)`` answers with one ``orjson.loads`` for the
common body: orjson refuses ``NaN``, ``Infinity`` and any number that is not a
finite double (``1e400``, an integer of 309 digits), and reads every other
integer as a finite double or an int, so a body it reads holds no such number
(issue #28: on a 120 KB agent request the five substring searches below cost
about four times the parse). A body it refuses (a lone surrogate, or one of
those numbers) gets the substring searches; only a body that might hold one
is parsed again, with hooks that keep each number's text.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from blackbox_mitm.codecs.common.jsonio import hand_over
from blackbox_mitm.errors import BlackboxUnsupportedError

__all__ = ["refuse_unrepresentable_numbers", "unrepresentable_number"]

_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
# An exponent of three digits or more (1e308 and past), or an integer of 309 digits or more.
_BIG_EXPONENTS = (b"e000", b"e+000", b"E000", b"E+000")
_LONG_INTEGER = b"0" * 309


class _Bad:
    """A number token JSON's double cannot hold, with its text as the body wrote it."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _float(text: str) -> float | _Bad:
    value = float(text)
    return value if value not in (float("inf"), float("-inf")) else _Bad(text)


def _int(text: str) -> int | _Bad:
    value = int(text)
    try:
        float(value)
    except OverflowError:
        return _Bad(text if len(text) <= 24 else f"{text[:12]}… ({len(text)} digits)")
    return value


def _might_hold_one(body: bytes) -> bool:
    if b"NaN" in body or b"Infinity" in body:
        return True
    digits = body.translate(_AS_ZERO)
    return any(e in digits for e in _BIG_EXPONENTS) or _LONG_INTEGER in digits


def unrepresentable_number(body: bytes) -> tuple[str, str] | None:
    """The JSON path (``body.temperature``) and text of the first number a cassette cannot hold, or None."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        pass  # not JSON to orjson: the slower checks below decide
    else:
        hand_over(body, data)  # the codec's parse of this body, next (codecs/common/jsonio.py): parsed once
        return None  # orjson read every number as a finite double (or an int that fits one)
    if not _might_hold_one(body):
        return None
    try:
        data = json.loads(body, parse_float=_float, parse_int=_int, parse_constant=_Bad)
    except ValueError:
        return None  # not JSON at all: the codec says so
    return _find(data)


def _find(data: Any) -> tuple[str, str] | None:
    stack: list[tuple[str, Any]] = [("body", data)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, _Bad):
            return where, item.text
        if isinstance(item, dict):
            stack.extend((f"{where}.{k}" if k.isidentifier() else f"{where}[{json.dumps(k)}]", v) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", v) for i, v in reversed(list(enumerate(item))))
    return None


def refuse_unrepresentable_numbers(body: bytes, *, what: str = "request") -> None:
    """Raise ``BlackboxUnsupportedError`` naming the field when ``body`` holds a number a cassette cannot hold."""
    found = unrepresentable_number(body)
    if found is None:
        return
    where, text = found
    raise BlackboxUnsupportedError(
        where,
        f"the {what} holds a number JSON cannot carry as a finite double (a cassette would hold null in its place)",
        value=text,
        hint="send a finite number in range (a double: at most about 1.8e308)",
    )
