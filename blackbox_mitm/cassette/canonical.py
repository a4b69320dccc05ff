"""Canonical JSON and step hashes, byte-identical to the JavaScript implementation.

The spec hashes ``JSON.stringify`` of a value whose object keys are sorted
recursively. Cassettes travel between implementations, so our bytes must be the
ones Node produces:

* numbers as ECMAScript's ``Number::toString`` writes them (``1.0`` -> ``1``,
  ``1e21`` -> ``1e+21``, ``-0`` -> ``0``; integers beyond 2**53 are doubles in
  JavaScript, so they are written as the double they round to);
* strings escaped as ``JSON.stringify`` escapes them (raw UTF-8, lone
  surrogates as ``\\udXXX``);
* object keys ordered by UTF-16 code units.

The fast path is one ``orjson.dumps`` call. orjson already agrees with
``JSON.stringify`` on strings and on most numbers; a single regular-expression
scan of its output decides whether anything in the value could need rewriting
(a float, a long integer, keys whose UTF-8 and UTF-16 orders could disagree).
Only then is the value walked in Python.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

import orjson

__all__ = ["canonical_bytes", "js_number", "step_hash", "step_hash_from_canonical_payload"]

# A digit followed by "." or "e" is how every float orjson writes looks; 16 digits in
# a row may be an integer beyond 2**53. Either may also occur inside a string: then
# the slow path runs and gives the same bytes, only slower.
_MAYBE_NUMBER_FIX = re.compile(rb"[0-9][.e]|[0-9]{16}")
# UTF-8 lead bytes of U+E000..U+FFFF and of astral characters. Sorting by code
# point (orjson) and by UTF-16 code unit (JavaScript) differ only when both occur.
_BMP_HIGH = re.compile(rb"[\xee\xef]")
_ASTRAL = re.compile(rb"[\xf0-\xf4]")
_MAX_SAFE = 2**53


def canonical_bytes(value: Any) -> bytes:
    """Return the canonical JSON of ``value``: keys sorted, no whitespace, JS formatting."""
    try:
        out = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        # Integers past 64 bits and strings holding lone surrogates land here.
        return _slow(value)
    if _MAYBE_NUMBER_FIX.search(out) or (_BMP_HIGH.search(out) and _ASTRAL.search(out)):
        return _slow(value)
    return out


def step_hash(index: int, step_type: str, timestamp: int | float, payload: Any, prev_hash: str | None) -> str:
    """SHA-256 hex of the canonical JSON of ``{index, type, timestamp, payload, prevHash}``."""
    return step_hash_from_canonical_payload(index, step_type, timestamp, canonical_bytes(payload), prev_hash)


def step_hash_from_canonical_payload(
    index: int, step_type: str, timestamp: int | float, payload_json: bytes, prev_hash: str | None
) -> str:
    """The step hash, given the payload's canonical bytes (keys in sorted order)."""
    parts = (
        b'{"index":',
        js_number(index).encode(),
        b',"payload":',
        payload_json,
        b',"prevHash":',
        b"null" if prev_hash is None else _string(prev_hash),
        b',"timestamp":',
        js_number(timestamp).encode(),
        b',"type":',
        _string(step_type),
        b"}",
    )
    return hashlib.sha256(b"".join(parts)).hexdigest()


def js_number(n: int | float) -> str:
    """Format a number as ECMAScript ``Number.prototype.toString`` (and JSON.stringify) do."""
    if isinstance(n, bool):  # pragma: no cover - callers never pass bools as numbers
        raise TypeError("a boolean is not a number")
    if isinstance(n, int):
        if -_MAX_SAFE <= n <= _MAX_SAFE:
            return str(n)
        try:
            n = float(n)
        except OverflowError:
            return "null"  # JSON.stringify(Infinity)
    if math.isnan(n) or math.isinf(n):
        return "null"
    if n == 0:
        return "0"
    sign = "-" if n < 0 else ""
    # repr() gives the shortest digits that round-trip, the same digits ECMAScript picks.
    mantissa, _, exp_text = repr(abs(n)).partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).lstrip("0")
    # Position of the decimal point relative to the start of ``digits`` (ECMAScript's n).
    point = len(int_part.lstrip("0")) if int_part.strip("0") else -(len(frac_part) - len(frac_part.lstrip("0")))
    point += int(exp_text) if exp_text else 0
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= point <= 21:
        return sign + digits + "0" * (point - k)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * (-point) + digits
    exponent = point - 1
    exp_sign = "+" if exponent >= 0 else "-"
    head = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{head}e{exp_sign}{abs(exponent)}"


def _string(s: str) -> bytes:
    try:
        return orjson.dumps(s)
    except orjson.JSONEncodeError:
        return _string_with_surrogates(s)


def _string_with_surrogates(s: str) -> bytes:
    # JSON.stringify (ES2019) writes a lone surrogate as a lowercase \udXXX escape.
    out = []
    for chunk in re.split(r"([\ud800-\udfff])", s):
        if len(chunk) == 1 and 0xD800 <= ord(chunk) <= 0xDFFF:
            out.append(f"\\u{ord(chunk):04x}")
        elif chunk:
            out.append(orjson.dumps(chunk).decode()[1:-1])
    return ('"' + "".join(out) + '"').encode()


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _slow(value: Any) -> bytes:
    parts: list[bytes] = []
    _write(value, parts)
    return b"".join(parts)


def _write(value: Any, out: list[bytes]) -> None:
    if isinstance(value, str):
        out.append(_string(value))
    elif value is None:
        out.append(b"null")
    elif value is True:
        out.append(b"true")
    elif value is False:
        out.append(b"false")
    elif isinstance(value, (int, float)):
        out.append(js_number(value).encode())
    elif isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise TypeError(f"object keys must be strings, not {type(key).__name__}")
        out.append(b"{")
        for i, key in enumerate(sorted(value, key=_utf16_key)):
            if i:
                out.append(b",")
            out.append(_string(key))
            out.append(b":")
            _write(value[key], out)
        out.append(b"}")
    elif isinstance(value, (list, tuple)):
        out.append(b"[")
        for i, item in enumerate(value):
            if i:
                out.append(b",")
            _write(item, out)
        out.append(b"]")
    else:
        raise TypeError(f"{type(value).__name__} is not JSON")
