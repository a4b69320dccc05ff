"""Reading a cassette's JSON text without trusting it: what a file may be, and what its JSON may hold.

Every reader (``load_trace``, ``verify_file``, journal recovery) goes through here:

* ``read_file`` opens only a **regular file**: a FIFO, a device (``/dev/zero``), a
  directory or a socket is refused at once, before a byte is read (the open does
  not block on a FIFO), and a file larger than ``max_bytes()`` (1 GiB, or
  ``$BLACKBOX_MAX_CASSETTE_BYTES``) is refused instead of exhausting memory.
* ``decode_json`` parses with orjson, and with the standard library for what orjson
  refuses but a JavaScript writer produces (a lone surrogate, ``"\\ud83d"``). Both
  paths refuse the same things, with ``JsonLimitError`` naming them: nesting
  deeper than ``MAX_DEPTH`` (orjson's own limit, 1,024 levels) and numbers that
  are not finite doubles (``1e400``). Nothing recurses on the input, so a
  10,000-deep document is an error, not a ``RecursionError``.
* ``find_duplicate_key`` names the first key that appears twice in one object,
  with its JSON path. orjson keeps the last value silently, so ``verify`` decides
  cheaply whether a file can hold a duplicate (``count_quotes``) and only then
  calls this slow, exact search.
"""

from __future__ import annotations

import json
import math
import os
import stat
from typing import Any

import orjson

from blackbox_mitm.cassette.records import JSONObject
from blackbox_mitm.errors import CassetteError

__all__ = [
    "MAX_DEPTH",
    "JsonLimitError",
    "count_quotes",
    "decode_json",
    "find_duplicate_key",
    "max_bytes",
    "read_file",
]

#: The deepest nesting of arrays and objects a cassette may hold: orjson's parser limit.
MAX_DEPTH = 1024
_DEFAULT_MAX_BYTES = 1 << 30
_MAX_DOUBLE = 1.7976931348623157e308
_ORJSON_DUMPS_DEPTH = 254  # orjson.dumps writes values nested up to this many levels, and refuses deeper ones
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class JsonLimitError(ValueError):
    """JSON text a cassette may not hold: too deep, a number out of range. ``where`` is a JSON path or a position."""

    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(message)
        self.where = where


def max_bytes() -> int:
    """The largest file a reader reads: ``$BLACKBOX_MAX_CASSETTE_BYTES``, or 1 GiB."""
    try:
        value = int(os.environ.get("BLACKBOX_MAX_CASSETTE_BYTES", ""))
    except ValueError:
        return _DEFAULT_MAX_BYTES
    return value if value > 0 else _DEFAULT_MAX_BYTES


def read_file(path: str | os.PathLike[str], *, what: str = "a cassette") -> bytes:
    """The bytes of a regular file, or a ``CassetteError`` saying why it cannot be read.

    Opened non-blocking, so a FIFO with no writer does not hang the open; its
    type is checked on the open descriptor before anything is read.
    """
    p = str(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except FileNotFoundError:
        raise CassetteError("no such file; check the path (record one with `blackbox record -o FILE -- CMD`)", path=p) from None
    except IsADirectoryError:
        raise CassetteError(f"this is a directory, not a file; {what} is one JSON file — check the path", path=p) from None
    except OSError as exc:
        raise CassetteError(f"cannot read the file ({exc.strerror}); check its permissions", path=p) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
            raise CassetteError(f"this is {kind}, not a regular file; {what} is one JSON file — check the path", path=p)
        limit = max_bytes()
        if st.st_size > limit:
            raise CassetteError(_too_big(st.st_size, limit), path=p)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise CassetteError(f"cannot read the file ({exc.strerror}); check its permissions", path=p) from exc
    finally:
        os.close(fd)
    if len(data) > limit:
        raise CassetteError(_too_big(len(data), limit), path=p)
    return data


def _too_big(size: int, limit: int) -> str:
    return (
        f"the file holds {size:,} bytes, more than the {limit:,} a reader accepts; if it really is a cassette, "
        "raise the limit with BLACKBOX_MAX_CASSETTE_BYTES"
    )


# -- parsing ----------------------------------------------------------------------------


def decode_json(raw: bytes | str) -> Any:
    """Parse JSON with orjson, falling back to the standard library for lone surrogates.

    ``JSON.stringify`` writes a string holding a lone surrogate (a JavaScript agent
    that cut an emoji in half) as ``"\\ud83d"``; orjson refuses it, the standard
    library reads it. Raises ``JsonLimitError`` for nesting past ``MAX_DEPTH`` or a
    number that is not a finite double, ``ValueError`` (orjson's error) for text
    that is not JSON.
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        reason = str(exc)
        if "depth limit" in reason or "ecursion" in reason:
            raise JsonLimitError(_too_deep(), _position(exc)) from None
        if "infinity" in reason:
            raise JsonLimitError(_out_of_range(), _position(exc)) from None
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_bounded_int)
        except RecursionError:
            raise JsonLimitError(_too_deep()) from None
        except JsonLimitError:
            raise
        except ValueError:
            raise exc from None
    if _deeper_than(value, MAX_DEPTH):
        raise JsonLimitError(_too_deep())
    return value


def _too_deep() -> str:
    return f"the JSON is nested more than {MAX_DEPTH:,} levels deep; no cassette holds values that deep"


def _out_of_range() -> str:
    return "a number is too large for a double (it would read as infinity); a cassette holds finite numbers only"


def _position(exc: orjson.JSONDecodeError) -> str | None:
    return f"byte {exc.pos}" if isinstance(exc.pos, int) else None  # json.JSONDecodeError's, set by orjson


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonLimitError(_out_of_range() + f" ({text[:40]})")
    return value


def _bounded_int(text: str) -> int | float:
    if len(text.lstrip("-")) > 309:
        raise JsonLimitError(_out_of_range() + f" ({text[:40]}…)")
    value = int(text)
    if abs(value) > _MAX_DOUBLE:
        raise JsonLimitError(_out_of_range() + f" ({text[:40]}…)")
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests arrays and objects more than ``limit`` levels (iterative).

    Fast for the common case: ``orjson.dumps`` (C, no sorting) succeeds only on
    values nested fewer than 255 levels, so a success answers "no" for any limit
    of 254 or more; only a value it refuses is walked here.
    """
    if not isinstance(value, (dict, list)):
        return False
    if limit >= _ORJSON_DUMPS_DEPTH:
        try:
            orjson.dumps(value)
        except (TypeError, orjson.JSONEncodeError):
            pass  # too deep for orjson, or a string / integer it does not write: walk it
        else:
            return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


# -- duplicate keys -----------------------------------------------------------------------


def count_quotes(raw: bytes) -> int:
    """The number of ``"`` a JSON text's strings take, counting ``\\u0022`` as the quote it stands for.

    A parse of the text holds exactly as many strings as the text when no object
    repeats a key, and fewer when one does (the repeated key is gone). So when
    this count equals the quotes of the parsed value written out again, no key
    is repeated; when it is larger, ``find_duplicate_key`` looks for the repeat.
    """
    return raw.count(b'"') + raw.count(b"\\u0022")


class _Repeated(dict[str, Any]):
    """An object in which a key appeared twice (the standard library parse below)."""

    repeated: str = ""


def _pairs(pairs: list[tuple[str, Any]]) -> JSONObject:
    out: JSONObject = {}
    for key, value in pairs:
        if key in out:
            marked = _Repeated(pairs)
            marked.repeated = key
            return marked
        out[key] = value
    return out


def find_duplicate_key(raw: bytes | str) -> tuple[str, str] | None:
    """The first object key that appears twice in one object, as (key, JSON path of the object); None if none.

    Slow (the standard library's parser with a hook per object): called only when
    ``count_quotes`` says a repeat is possible.
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return None
    stack: list[tuple[Any, str]] = [(value, "$")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, _Repeated):
            return node.repeated, where
        if isinstance(node, dict):
            stack.extend((child, f"{where}{_key_path(key)}") for key, child in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((child, f"{where}[{n}]") for n, child in reversed(list(enumerate(node))))
    return None


def _key_path(key: str) -> str:
    return f".{key}" if key.isidentifier() else f"[{json.dumps(key)}]"
