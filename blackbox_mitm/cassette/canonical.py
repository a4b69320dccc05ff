"""Canonical JSON and step hashes, byte-identical to the JavaScript implementation.

The spec hashes ``JSON.stringify`` of a value whose object keys are sorted
recursively. Cassettes travel between implementations, so our bytes must be the
ones Node produces:

* numbers as ECMAScript's ``Number::toString`` writes them (``1.0`` -> ``1``,
  ``1e21`` -> ``1e+21``, ``-0`` -> ``0``; integers beyond 2**53 are doubles in
  JavaScript, so they are written as the double they round to);
* strings escaped as ``JSON.stringify`` escapes them (raw UTF-8, lone
  surrogates as ``\\udXXX``);
* object keys ordered by UTF-16 code units — except keys that are array indices
  (``"0"``, ``"2"``, ``"10"``, up to 2**32 - 2): a JavaScript object always lists
  those first, in numeric order, so ``JSON.stringify`` of a key-sorted object
  writes ``{"2":..,"10":..,"a":..}``.

The fast path is one ``orjson.dumps`` call. orjson already agrees with
``JSON.stringify`` on strings and on most numbers (``0.2``, ``12.5``); a few
substring searches over its output decide whether anything could need rewriting
(an integral float, an exponent, a long integer, an array-index key, a key whose
UTF-8 and UTF-16 orders could disagree). Only then does the slow path run, and it
walks only the containers on the way to what needs rewriting: every other
subtree is still one orjson call.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

import orjson
import re2

__all__ = ["canonical_bytes", "js_number", "step_hash", "step_hash_from_canonical_payload"]

# What orjson may write differently from JSON.stringify, checked on orjson's output
# with substring searches (a regular expression that starts with a character class
# scans at a few tens of MB/s; these run at memory speed). orjson writes a float in
# the shortest round-trip digits, as JavaScript does, and differs only for
# integral floats ("1.0": JS "1"; "-0.0": JS "0"), which end in ".0" before ","
# "}" "]" or the end, and in exponent forms ("1e+16": JS "10000000000000000"),
# which read "e+0" / "e-0" once every digit is read as "0". An integer of 16 or
# more digits may lie beyond 2**53. Keys: an array-index key (JavaScript lists
# those first), or a key holding a character at or above U+E000 (UTF-8 lead
# bytes \xee-\xf4), where the order by code point (orjson) and by UTF-16 code
# unit (JavaScript) can disagree. A match inside a string ("version 2.0, ...")
# only costs the slow path, which gives the same bytes.
_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
# One regular expression led by a literal each: a single pass, several times faster
# than three (or two) substring searches for short needles.
_INTEGRAL_FLOAT = re.compile(rb"\.0[,}\]]")  # ".0," ".0}" ".0]"
_EXPONENT = re.compile(rb"e[+-]0")  # "e+0" "e-0"
_SIXTEEN_DIGITS = b"0" * 16
_INDEX_KEY = re.compile(rb'"(?:0|[1-9][0-9]{0,9})":')
_BMP_HIGH = (b"\xee", b"\xef")
_ASTRAL = (b"\xf0", b"\xf1", b"\xf2", b"\xf3", b"\xf4")
_HIGH_KEY = re.compile(rb'[{,]"(?:[^"\\]|\\.)*[\xee-\xf4](?:[^"\\]|\\.)*":')
_MAX_SAFE = 2**53
# One RE2 pass that matches wherever any of the checks before the key-order one could: an integral float (or ".0"
# at the end), an exponent ("e+" / "e-" before a digit), an array-index key, a run of 16 digits. RE2 scans in one
# linear pass whatever the text, where each of those searches alone stops at every "e", "." or '"' of a 120 KB
# request. Only when it matches are the exact checks run, so the answer is theirs, byte for byte.
_ANY_CANDIDATE = re2.compile(rb'\.0[,}\]]|\.0$|e[+-][0-9]|"(?:0|[1-9][0-9]{0,9})":|[0-9]{16}')


def canonical_bytes(value: Any) -> bytes:
    """Return the canonical JSON of ``value``: keys sorted, no whitespace, JS formatting."""
    try:
        out = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        # Integers past 64 bits and strings holding lone surrogates land here.
        return _slow(value)
    if _needs_rewrite(out):
        return _slow(value)
    return out


def _needs_rewrite(out: bytes) -> bool:
    """Whether orjson's ``out`` may differ from JSON.stringify's (see the comment above)."""
    if _ANY_CANDIDATE.search(out) is None:
        return _high_key(out)
    return _number_or_index_key(out) or _high_key(out)


def _number_or_index_key(out: bytes) -> bool:
    """The checks ``_ANY_CANDIDATE`` gates: a number JavaScript writes otherwise, or an array-index key."""
    if _INTEGRAL_FLOAT.search(out) is not None or out.endswith(b".0"):
        return True
    digits = out.translate(_AS_ZERO)
    if _EXPONENT.search(digits) is not None:
        return True
    if _SIXTEEN_DIGITS in digits and _long_integer(digits):
        return True
    return _INDEX_KEY.search(out) is not None


def _high_key(out: bytes) -> bool:
    """A key whose order by code point and by UTF-16 code unit may differ."""
    # The two orders disagree only between a character in U+E000..U+FFFF and an astral one.
    return any(b in out for b in _BMP_HIGH) and any(b in out for b in _ASTRAL) and _HIGH_KEY.search(out) is not None


def _long_integer(digits: bytes) -> bool:
    # A run of 16+ digits is a number token when it follows ":" "[" "," (or starts the
    # document), maybe after "-", and ends the token; elsewhere it is inside a string
    # (or part of a float's digits, which orjson writes exactly as JavaScript does).
    at = digits.find(_SIXTEEN_DIGITS)
    while at != -1:
        start, end = at, at + 16
        while start and digits[start - 1] == 0x30:
            start -= 1
        while end < len(digits) and digits[end] == 0x30:
            end += 1
        before = start - 1 if start and digits[start - 1] == 0x2D else start  # "-"
        if (before == 0 or digits[before - 1] in b":[,") and (end == len(digits) or digits[end] in b",}]"):
            return True
        at = digits.find(_SIXTEEN_DIGITS, end)
    return False


def step_hash(index: int, step_type: str, timestamp: int | float, payload: Any, prev_hash: str | None) -> str:
    """SHA-256 hex of the canonical JSON of ``{index, type, timestamp, payload, prevHash}``."""
    return step_hash_from_canonical_payload(index, step_type, timestamp, canonical_bytes(payload), prev_hash)


def step_hash_from_canonical_payload(index: int, step_type: str, timestamp: int | float, payload_json: bytes, prev_hash: str | None) -> str:
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
    # A JavaScript string is UTF-16: a high surrogate followed by a low one is one
    # character, even when a Python str holds them as two code points. Pair them up;
    # JSON.stringify (ES2019) writes what stays lone as a lowercase \udXXX escape.
    s = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    out = []
    for chunk in re.split(r"([\ud800-\udfff])", s):
        if len(chunk) == 1 and 0xD800 <= ord(chunk) <= 0xDFFF:
            out.append(f"\\u{ord(chunk):04x}")
        elif chunk:
            out.append(orjson.dumps(chunk).decode()[1:-1])
    return ('"' + "".join(out) + '"').encode()


_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]{0,9}")
_MAX_ARRAY_INDEX = 2**32 - 2


def _js_key_order(key: str) -> tuple[int, int, bytes]:
    # Array-index keys first, numerically; then every other key by UTF-16 code units.
    if _ARRAY_INDEX.fullmatch(key) and int(key) <= _MAX_ARRAY_INDEX:
        return (0, int(key), b"")
    return (1, 0, key.encode("utf-16-be", "surrogatepass"))


def _slow(value: Any) -> bytes:
    """The canonical bytes, built without recursion (a cassette may nest 1,024 levels deep).

    Each container is first tried in one orjson call, and its bytes kept when
    nothing in them needs rewriting; so only the containers on the way to a float
    or a key that needs JavaScript's order are walked here, not the whole value.
    """
    out: list[bytes] = []
    # Work items: (bytes to write, None) or (b"", a value to write; whole=True tries orjson on it first).
    stack: list[tuple[bytes, Any, bool]] = [(b"", value, False)]
    while stack:
        literal, item, whole = stack.pop()
        if literal:
            out.append(literal)
        else:
            _visit(item, out, stack, whole=whole)
    return b"".join(out)


def _visit(item: Any, out: list[bytes], stack: list[tuple[bytes, Any, bool]], *, whole: bool) -> None:
    """Write one value, or its opening bracket and its members as new work items."""
    if whole and isinstance(item, (dict, list, tuple)):
        try:
            chunk = orjson.dumps(item, option=orjson.OPT_SORT_KEYS)
        except (TypeError, orjson.JSONEncodeError):
            pass
        else:
            if not _needs_rewrite(chunk):
                out.append(chunk)
                return
    if isinstance(item, dict):
        _push_object(item, out, stack)
    elif isinstance(item, (list, tuple)):
        out.append(b"[")
        stack.append((b"]", None, False))
        for i in range(len(item) - 1, -1, -1):
            stack.append((b"", item[i], True))
            if i:
                stack.append((b",", None, False))
    else:
        out.append(_scalar(item))


def _push_object(item: dict[Any, Any], out: list[bytes], stack: list[tuple[bytes, Any, bool]]) -> None:
    for key in item:
        if not isinstance(key, str):
            raise TypeError(f"object keys must be strings, not {type(key).__name__}")
    out.append(b"{")
    stack.append((b"}", None, False))
    keys = sorted(item, key=_js_key_order)
    for i in range(len(keys) - 1, -1, -1):
        stack.append((b"", item[keys[i]], True))
        stack.append(((b"," if i else b"") + _string(keys[i]) + b":", None, False))


def _scalar(value: Any) -> bytes:
    if isinstance(value, str):
        return _string(value)
    if value is None:
        return b"null"
    if value is True:
        return b"true"
    if value is False:
        return b"false"
    if isinstance(value, (int, float)):
        return js_number(value).encode()
    raise TypeError(f"{type(value).__name__} is not JSON")
