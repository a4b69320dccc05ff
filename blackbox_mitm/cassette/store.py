"""Reading and writing cassette files: strict loading, atomic saving, never a silent overwrite.

``load_trace`` refuses anything it cannot trust with the file name, the JSON path
of the problem and what to do. ``save_trace`` writes a temporary file and renames
it into place, so a reader never sees half a cassette, and refuses to replace an
existing file unless asked. A recording's journal (``RUN.json.journal``) met by
any loader is first recovered into a cassette (see ``journal``). What a file may
be and what its JSON may hold (a regular file, a bounded size and depth, finite
numbers) is ``jsonfile``'s to check.
"""

from __future__ import annotations

import json
import math
import os
import secrets
from pathlib import Path
from typing import Any

import orjson

from blackbox_mitm.cassette import compression
from blackbox_mitm.cassette.jsonfile import JsonLimitError, decode_json
from blackbox_mitm.cassette.payloads import json_kind
from blackbox_mitm.cassette.records import JSONObject
from blackbox_mitm.cassette.trace import CURRENT_TRACE_VERSION, STEP_TYPES, Trace, TraceStep
from blackbox_mitm.errors import CassetteError, CassetteExistsError

__all__ = [
    "decode_json",
    "dump_trace",
    "encode_json",
    "parse_document",
    "parse_trace",
    "save_trace",
    "trace_from_json",
    "write_atomic",
]

_RERECORD = "re-record the run with this version of blackbox"
#: ECMAScript's time range: a ``Date`` holds at most 8.64e15 ms on either side of the epoch.
_MAX_TIME_MS = 8.64e15


def parse_trace(raw: bytes | str, *, path: str = "<cassette>") -> Trace:
    return trace_from_json(parse_document(raw, path=path), path=path)


def parse_document(raw: bytes | str, *, path: str = "<cassette>") -> Any:
    """The file's JSON value, or a ``CassetteError`` saying it is empty, truncated or not JSON."""
    if not raw or raw.isspace():
        raise CassetteError("the file is empty; it is not a cassette (re-record the run, or restore it from version control)", path=path)
    try:
        return decode_json(raw)
    except JsonLimitError as exc:
        raise CassetteError(f"{exc}; restore the file from version control, or re-record the run", path=path, where=exc.where) from None
    except ValueError as exc:
        what = "is truncated" if _looks_truncated(raw) else "is not valid JSON"
        raise CassetteError(
            f"the file {what} ({exc}); a cassette is one JSON object — restore it from version control, "
            "or run `blackbox recover FILE` if a recording was interrupted",
            path=path,
        ) from exc


def encode_json(value: Any, *, indent: bool = False) -> bytes:
    """Serialize with orjson; strings with lone surrogates (and integers past 64 bits) go
    through the standard library, ASCII-escaped, which reads back to the same value.

    Total on what a recorder holds, so the journal and the final save (both written
    here) can never disagree: a number a double cannot hold (``inf``, ``nan``, an
    integer beyond the double range) is written ``null`` on both paths, as orjson
    writes it and as the step hash (``JSON.stringify``) counts it. A request holding
    one is refused before it is recorded (``session.numbers``); this is the net below.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0)
    except TypeError:
        pass
    try:
        return _stdlib_dumps(value, indent)
    except ValueError:  # a non-finite float beside what sent us here (a lone surrogate)
        return _stdlib_dumps(_finite(value), indent)


def _stdlib_dumps(value: Any, indent: bool) -> bytes:
    return json.dumps(
        value, indent=2 if indent else None, separators=None if indent else (",", ":"), ensure_ascii=True, allow_nan=False
    ).encode()


def _finite(value: Any) -> Any:
    """A copy of ``value`` with every number a double cannot hold as ``None`` (no recursion: values nest 1,024 deep)."""
    root: list[Any] = [value]
    stack: list[tuple[Any, Any, Any]] = [(root, 0, value)]
    while stack:
        parent, key, item = stack.pop()
        if (isinstance(item, float) and not math.isfinite(item)) or (
            isinstance(item, int) and not isinstance(item, bool) and not _fits_double(item)
        ):
            parent[key] = None
        elif isinstance(item, dict):
            mapping = parent[key] = dict(item)
            stack.extend((mapping, k, v) for k, v in mapping.items())
        elif isinstance(item, (list, tuple)):
            items = parent[key] = list(item)
            stack.extend((items, i, v) for i, v in enumerate(items))
    return root[0]


def _fits_double(n: int) -> bool:
    """Whether JavaScript reads ``n`` as a finite number (``canonical.js_number``'s test)."""
    try:
        float(n)
    except OverflowError:
        return False
    return True


def trace_from_json(data: Any, *, path: str = "<cassette>") -> Trace:
    if not isinstance(data, dict):
        raise CassetteError(f"expected a JSON object, found {json_kind(data)}; a cassette is one trace object", path=path, where="$")
    version = _version(data, path)
    trace_id = _need(data, "id", str, path, "$")
    created = _need_number(data, "createdAt", path, "$")
    parent = _opt(data, "parentId", str, path, "$")
    forked = _opt(data, "forkedFromStepId", str, path, "$")
    raw_steps = data.get("steps")
    if not isinstance(raw_steps, list):
        raise CassetteError(f"`steps` must be an array, found {json_kind(raw_steps)}", path=path, where="$.steps")
    steps = [_step_from_json(s, i, path) for i, s in enumerate(raw_steps)]
    env = data.get("environment")  # the run's environment (session.environment); a reader may ignore it
    environment = env if isinstance(env, dict) else None
    return Trace(
        id=trace_id, createdAt=created, steps=steps, parentId=parent, forkedFromStepId=forked, version=version, environment=environment
    )


def _version(data: JSONObject, path: str) -> int:
    """The trace's ``version``: the current one, or a clear error (missing, v1, another one)."""
    version = data.get("version")
    if "version" not in data:
        raise CassetteError(
            f"the `version` field is missing; this is not a trace format v{CURRENT_TRACE_VERSION} cassette — {_RERECORD}",
            path=path,
            where="$.version",
        )
    if version == 1 and not isinstance(version, bool):
        raise CassetteError(
            "this is a v1 cassette (legacy tool-call encoding), which cannot be read: re-record the run; there is no v1 -> v2 migration",
            path=path,
            where="$.version",
        )
    if version != CURRENT_TRACE_VERSION or isinstance(version, bool):
        raise CassetteError(
            f"unsupported trace format version {version!r}; this blackbox reads version {CURRENT_TRACE_VERSION} — {_RERECORD}",
            path=path,
            where="$.version",
        )
    checked: int = version  # as the file has it (2, or 2.0)
    return checked


def _step_from_json(s: Any, i: int, path: str) -> TraceStep:
    """The ``i``-th step of the file, checked field by field (index, type, payload, prevHash, id, timestamp, hash)."""
    where = f"$.steps[{i}]"
    if not isinstance(s, dict):
        raise CassetteError(f"a step must be an object, found {json_kind(s)}", path=path, where=where)
    index = _need(s, "index", int, path, where)
    if index != i:
        raise CassetteError(
            f"step index {index} is out of order (expected {i}); steps must be numbered 0, 1, 2, ... in file order",
            path=path,
            where=f"{where}.index",
        )
    step_type = _need(s, "type", str, path, where)
    if step_type not in STEP_TYPES:
        raise CassetteError(
            f"unknown step type {step_type!r}; expected one of {', '.join(STEP_TYPES)} (a newer blackbox may have written it: upgrade, or re-record)",
            path=path,
            where=f"{where}.type",
        )
    if "payload" not in s:
        raise CassetteError("the step has no `payload`", path=path, where=f"{where}.payload")
    prev = _prev_hash(s, path, where)
    return TraceStep(
        id=_need(s, "id", str, path, where),
        index=index,
        type=step_type,
        timestamp=_need_number(s, "timestamp", path, where),
        payload=s["payload"],
        prevHash=prev,
        hash=_need(s, "hash", str, path, where),
    )


def _prev_hash(s: JSONObject, path: str, where: str) -> str | None:
    prev = s.get("prevHash", ...)
    if prev is ... or not (prev is None or isinstance(prev, str)):
        raise CassetteError(
            f"`prevHash` must be a string or null, found {json_kind(prev) if prev is not ... else 'nothing'}",
            path=path,
            where=f"{where}.prevHash",
        )
    return prev


def dump_trace(trace: Trace, *, compact: bool = False) -> bytes:
    """The file's bytes: indented for people and diff tools (one line with ``compact``), keys in the spec's order."""
    return encode_json(trace.to_json(), indent=not compact) + b"\n"


def save_trace(trace: Trace, path: str | os.PathLike[str], *, overwrite: bool = False, compact: bool = False) -> Path:
    """Write ``trace`` to ``path``, compressed when the name ends in ``.gz`` / ``.zst`` (``compression``)."""
    return write_atomic(Path(path), compression.encode(path, dump_trace(trace, compact=compact)), overwrite=overwrite)


def write_atomic(path: Path, data: bytes, *, overwrite: bool = False) -> Path:
    """Write ``data`` to a temporary file beside ``path``, fsync, then move it into place.

    Without ``overwrite`` the final step is a hard link, which fails when ``path``
    exists — the check and the write are one atomic operation.
    """
    path = Path(path)
    if not overwrite and path.exists():
        raise CassetteExistsError(
            "the cassette already exists; choose another file, or allow replacing it (--overwrite; blackbox_overwrite=true under mitmdump)",
            path=str(path),
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        finally:
            os.close(fd)
        if overwrite:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise CassetteExistsError(
                    "the cassette already exists; choose another file, or allow replacing it (--overwrite; blackbox_overwrite=true under mitmdump)",
                    path=str(path),
                ) from None
            except OSError:
                # Filesystems without hard links: fall back to an exclusive create check.
                if path.exists():
                    raise CassetteExistsError(
                        "the cassette already exists; choose another file, or allow replacing it (--overwrite; blackbox_overwrite=true under mitmdump)",
                        path=str(path),
                    ) from None
                os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    _fsync_dir(path.parent)
    return path


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _looks_truncated(raw: bytes | str) -> bool:
    text = raw.rstrip() if isinstance(raw, bytes) else raw.rstrip().encode()
    return bool(text) and text[:1] in (b"{", b"[") and text[-1:] not in (b"}", b"]")


def _need(obj: JSONObject, key: str, typ: type, path: str, where: str) -> Any:
    if key not in obj:
        raise CassetteError(f"the required field `{key}` is missing", path=path, where=f"{where}.{key}")
    v = obj[key]
    if not isinstance(v, typ) or (typ is int and isinstance(v, bool)):
        want = {str: "a string", int: "an integer"}.get(typ, typ.__name__)
        raise CassetteError(f"`{key}` must be {want}, found {json_kind(v)}", path=path, where=f"{where}.{key}")
    return v


def _need_number(obj: JSONObject, key: str, path: str, where: str) -> int | float:
    if key not in obj:
        raise CassetteError(f"the required field `{key}` is missing", path=path, where=f"{where}.{key}")
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise CassetteError(
            f"`{key}` must be a number (milliseconds since the epoch), found {json_kind(v)}", path=path, where=f"{where}.{key}"
        )
    if not (isinstance(v, int) or math.isfinite(v)) or not -_MAX_TIME_MS <= v <= _MAX_TIME_MS:
        raise CassetteError(
            f"`{key}` is {v!r}, not a time: milliseconds since the epoch lie within ±8.64e15 (the range of a JavaScript Date); "
            "restore the file from version control, or re-record the run",
            path=path,
            where=f"{where}.{key}",
        )
    return v


def _opt(obj: JSONObject, key: str, typ: type, path: str, where: str) -> Any:
    if key not in obj or obj[key] is None:
        return None
    return _need(obj, key, typ, path, where)
