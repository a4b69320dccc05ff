"""The codecs' one JSON module: bodies read with a clear error, written the way the SDKs write them.

Written JSON is compact with raw UTF-8 and the key order kept. A lone surrogate
(``json.loads`` makes one from ``"\\ud800"``) cannot be UTF-8: a value holding
one is written with ``\\u`` escapes instead, so a body is always valid UTF-8.

``hand_over(body, data)``: a caller that already parsed ``body`` with orjson (the
engine's number check, ``session/numbers.py``) gives the result to the next
``loads`` of that very object in the same thread, once: a 120 KB agent request
is then parsed once, not twice (issue #28).
"""

from __future__ import annotations

import json
import threading
from typing import Any

import orjson

from blackbox_mitm.errors import BlackboxUnsupportedError, StreamIncomplete

__all__ = ["dumps", "dumps_bytes", "hand_over", "load_object", "loads", "loads_or_none", "stream_object"]

_KINDS: dict[type, str] = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean", type(None): "null"}


def _encoder(*, ascii: bool, allow_nan: bool, spaced: bool) -> json.JSONEncoder:
    separators = (", ", ": ") if spaced else (",", ":")
    return json.JSONEncoder(ensure_ascii=ascii, separators=separators, allow_nan=allow_nan)


# What ``json.dumps(value, ensure_ascii=..., separators=..., allow_nan=...)`` builds on every call, built once
# (its encoder holds only these settings): keyed by (ensure_ascii, allow_nan, spaced).
_ENCODERS: dict[tuple[bool, bool, bool], json.JSONEncoder] = {
    (a, n, s): _encoder(ascii=a, allow_nan=n, spaced=s) for a in (False, True) for n in (False, True) for s in (False, True)
}


def dumps(value: Any, *, allow_nan: bool = True, spaced: bool = False) -> str:
    """Compact JSON text, raw UTF-8 unless a lone surrogate forces ``\\u`` escapes.

    ``spaced``: with ``", "`` and ``": "`` between items, as Google's API writes its errors.
    """
    text = _ENCODERS[False, allow_nan, spaced].encode(value)
    try:
        text.encode()
    except UnicodeEncodeError:
        return _ENCODERS[True, allow_nan, spaced].encode(value)
    return text


def dumps_bytes(value: Any, *, allow_nan: bool = True) -> bytes:
    """``dumps`` as the UTF-8 bytes of a body."""
    return dumps(value, allow_nan=allow_nan).encode()


_handed = threading.local()  # .slot: (body, its orjson parse) for the next loads of that object, or None


def hand_over(body: bytes, data: Any) -> None:
    """``data`` is ``orjson.loads(body)``: the next ``loads(body)`` in this thread takes it instead of parsing (once)."""
    _handed.slot = (body, data)


def loads(body: bytes | str, what: str, provider: str) -> Any:
    """A request or response body parsed; a body that is not JSON is a ``BlackboxUnsupportedError`` naming it."""
    slot = getattr(_handed, "slot", None)
    if slot is not None:
        _handed.slot = None
        if slot[0] is body:
            return slot[1]
    try:
        return orjson.loads(body)  # fast; what it refuses (lone surrogates, deep nesting, ...) gets the stdlib's say
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError; RecursionError: nested past the parser's depth
        raise BlackboxUnsupportedError("body", f"the {what} body is not JSON ({exc})", provider=provider) from exc


def load_object(body: bytes | str, what: str, provider: str) -> dict[str, Any]:
    """``loads``, and the body must be a JSON object."""
    data = loads(body, what, provider)
    if not isinstance(data, dict):
        found = _KINDS.get(type(data), type(data).__name__)
        raise BlackboxUnsupportedError("body", f"the {what} body is {found}: expected a JSON object", provider=provider)
    return data


def loads_or_none(body: bytes | str) -> Any:
    """The parsed body, or None when it is not JSON (a fork edit leaves such a body alone)."""
    try:
        return loads(body, "request", "")
    except BlackboxUnsupportedError:
        return None


def stream_object(data: str, n: int) -> dict[str, Any]:
    """Stream event ``n``'s data as a JSON object; ``StreamIncomplete`` (the call did not complete) when it is none."""
    try:
        value = json.loads(data)
    except ValueError as exc:
        raise StreamIncomplete(f"stream event {n} is not JSON: the call did not complete") from exc
    if not isinstance(value, dict):
        raise StreamIncomplete(f"stream event {n} is not a JSON object: the call did not complete")
    return value
