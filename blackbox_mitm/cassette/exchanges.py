"""The run's other HTTP(S) exchanges: one file beside the cassette, sealed into the hash chain.

Everything the agent fetched through the proxy that was not a model call (a
``curl`` of a page, a WebFetch, an MCP server over HTTP, Claude Code's own
settings and ``count_tokens`` calls) is kept in ``RUN.exchanges.json`` beside
``RUN.json`` (``RUN.exchanges.json.zst`` beside ``RUN.json.zst``: compressed
the way the cassette is). The document::

    {"kind": "blackbox-exchanges", "version": 1, "run": "<trace id>",
     "exchanges": [{"index", "timestamp", "durationMs", "method", "url", "host", "path",
                    "request": {"bytes", "digest", "body"?},
                    "response": {"status", "headers", "bytes", "body"?, "notKept"?}}, …],
     "bodies": {"<sha256>": {"encoding": "utf-8" | "base64", "data"}},
     "notKept": ["…what was not kept, and why…"]}

A body is stored once under its SHA-256 (``body`` names the digest), so a file
fetched twice costs once. The run's terminal ``metadata`` event carries
``"exchanges": {"file", "count", "sha256"}``: the SHA-256 of the document's
canonical JSON. The terminal step is hashed and chained, so the exchanges are
under the chain; a reader that predates them sees one more key in the terminal
event and verifies every step as before (docs/cassette.md).
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from blackbox_mitm.cassette import compression
from blackbox_mitm.cassette.canonical import canonical_bytes
from blackbox_mitm.cassette.jsonfile import decode_json, read_file
from blackbox_mitm.cassette.records import ExchangeRow, ExchangesDocument, FileSeal, StoredBody
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.errors import CassetteError

__all__ = [
    "KIND",
    "VERSION",
    "body_bytes",
    "digest_of",
    "document_digest",
    "exchanges_path",
    "exchanges_ref",
    "exchanges_ref_of",
    "is_exchanges_file",
    "load_exchanges",
    "verify_exchanges",
    "write_exchanges",
]

KIND = "blackbox-exchanges"
VERSION = 1
#: Header names a recorded response keeps (everything else, Set-Cookie above all, is dropped).
KEPT_HEADERS = ("content-type", "content-encoding", "location", "mcp-session-id", "mcp-protocol-version", "content-disposition")
#: Header names never kept in an exchange, whatever else changes.
NEVER_KEPT = ("set-cookie", "cookie", "authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key")


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def exchanges_path(cassette: str | os.PathLike[str]) -> Path:
    """``runs/a.json`` -> ``runs/a.exchanges.json``; ``runs/a.json.zst`` -> ``runs/a.exchanges.json.zst``."""
    p = Path(cassette)
    plain = compression.plain_name(p)
    suffix = p.name[len(plain.name) :]  # "", ".gz" or ".zst"
    stem = plain.name.removesuffix(".json")
    return p.with_name(f"{stem}.exchanges.json{suffix}")


def is_exchanges_file(name: str) -> bool:
    """``RUN.exchanges.json`` (``.gz``, ``.zst``): a run's exchanges, not a cassette (goldens, listings skip it)."""
    return compression.plain_name(Path(name)).name.endswith(".exchanges.json")


def document_digest(document: Mapping[str, Any]) -> str:
    return digest_of(canonical_bytes(document))


def exchanges_ref(cassette: str | os.PathLike[str], document: ExchangesDocument) -> FileSeal:
    """What the terminal event says about the exchanges: the file's name, how many, the document's digest."""
    return {"file": exchanges_path(cassette).name, "count": len(document.get("exchanges") or []), "sha256": document_digest(document)}


def exchanges_ref_of(trace: Trace) -> FileSeal | None:
    """The terminal event's ``exchanges`` (None: the run kept none, or predates them)."""
    last = trace.steps[-1] if trace.steps else None
    if last is None or last.type != "metadata" or not isinstance(last.payload, dict):
        return None
    ref = last.payload.get("exchanges")
    return cast(FileSeal, ref) if isinstance(ref, dict) else None  # as found: ``load_exchanges`` checks it


def write_exchanges(cassette: str | os.PathLike[str], document: ExchangesDocument) -> Path:
    """Write the document beside ``cassette`` (atomically, compressed like it); returns the path."""
    from blackbox_mitm.cassette.store import encode_json, write_atomic

    path = exchanges_path(cassette)
    data = encode_json(document, indent=True) + b"\n"
    return write_atomic(path, compression.encode(path, data), overwrite=True)


def load_exchanges(cassette: str | os.PathLike[str], ref: Mapping[str, Any]) -> ExchangesDocument:
    """The exchanges document ``ref`` (the terminal event's ``exchanges``) names, checked; ``CassetteError`` otherwise."""
    problems, document = _read_checked(Path(cassette), ref)
    if problems:
        raise CassetteError(f"the run's exchanges do not verify: {problems[0]}", path=str(cassette))
    assert document is not None
    return document


def verify_exchanges(cassette: str | os.PathLike[str], ref: Any) -> list[str]:
    """Every problem with the exchanges file the terminal event names (empty: it verifies)."""
    return _read_checked(Path(cassette), ref)[0]


def _read_checked(cassette: Path, ref: Any) -> tuple[list[str], ExchangesDocument | None]:
    if not isinstance(ref, Mapping) or not isinstance(ref.get("file"), str) or not isinstance(ref.get("sha256"), str):
        return ["the terminal event's `exchanges` must be {file, count, sha256}"], None
    name = str(ref["file"])
    if "/" in name or "\\" in name or name in ("", ".", ".."):
        return [f"the terminal event names the exchanges file {name!r}, which is not a file beside the cassette"], None
    path = cassette.with_name(name)
    try:
        raw = compression.decode(path, read_file(path, what="an exchanges file"))
        document = decode_json(raw)
    except CassetteError as exc:
        return [f"{name}: {exc}; the run's other HTTP exchanges live there (keep it beside the cassette)"], None
    except (OSError, ValueError) as exc:
        return [f"{name}: cannot be read ({exc}); the run's other HTTP exchanges live there (keep it beside the cassette)"], None
    if not isinstance(document, dict) or document.get("kind") != KIND:
        return [f'{name}: is not a Blackbox exchanges file (no "kind": "{KIND}")'], None
    found = document_digest(document)
    if found != ref["sha256"]:
        return [
            f"{name}: its SHA-256 {found[:12]}… is not the {str(ref['sha256'])[:12]}… the terminal event seals: "
            "the exchanges were changed after recording"
        ], None
    return _check_document(name, document), cast(ExchangesDocument, document)  # a caller that uses it needs no problems


def _check_document(name: str, document: Mapping[str, Any]) -> list[str]:
    """``document`` as read (not yet an ``ExchangesDocument``): every way it is not one."""
    problems: list[str] = []
    bodies = document.get("bodies")
    exchanges = document.get("exchanges")
    if not isinstance(bodies, dict) or not isinstance(exchanges, list):
        return [f"{name}: must hold `exchanges` (a list) and `bodies` (an object)"]
    for digest, body in bodies.items():
        try:
            data = body_bytes(body)
        except (ValueError, TypeError):
            problems.append(f"{name}: body {digest[:12]}…: not {{encoding, data}} in utf-8 or base64")
            continue
        if digest_of(data) != digest:
            problems.append(f"{name}: body {digest[:12]}…: its content does not have that SHA-256")
    for i, ex in enumerate(exchanges):
        if not isinstance(ex, dict) or ex.get("index") != i:
            problems.append(f"{name}: exchange {i}: not an exchange at its position")
            continue
        for side in ("request", "response"):
            ref = (ex.get(side) or {}).get("body")
            if ref is not None and ref not in bodies:
                problems.append(f"{name}: exchange {i}: its {side} body {str(ref)[:12]}… is not in `bodies`")
        headers = (ex.get("response") or {}).get("headers") or {}
        leaked = [h for h in headers if str(h).lower() in NEVER_KEPT]
        if leaked:
            problems.append(f"{name}: exchange {i}: holds the {leaked[0]} header; credentials and cookies are never kept")
    return problems


def body_bytes(body: Mapping[str, Any]) -> bytes:
    """A stored body's bytes; ``ValueError`` when it is not ``{encoding, data}``."""
    data = body.get("data")
    if not isinstance(data, str):
        raise ValueError("no data")
    if body.get("encoding") == "base64":
        return base64.b64decode(data, validate=True)
    if body.get("encoding") == "utf-8":
        return data.encode("utf-8")
    raise ValueError("unknown encoding")


def stored_body(data: bytes) -> StoredBody:
    """How a body is written: its text when it is UTF-8, else base64."""
    try:
        return {"encoding": "utf-8", "data": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"encoding": "base64", "data": base64.b64encode(data).decode("ascii")}


# -- listing (``blackbox show``, ``blackbox view``) --------------------------------------------


def exchange_rows(document: ExchangesDocument, origin: int | float) -> list[ExchangeRow]:
    """One row per exchange: index, method, host, path, status, size, time since the run started, what was not kept."""
    rows: list[ExchangeRow] = []
    for ex in document.get("exchanges") or []:
        response = ex.get("response") or {}
        rows.append(
            {
                "index": ex.get("index"),
                "method": ex.get("method"),
                "host": ex.get("host"),
                "path": ex.get("path"),
                "status": response.get("status"),
                "bytes": response.get("bytes", 0),
                "offsetMs": max(0, (ex.get("timestamp") or origin) - origin),
                "durationMs": ex.get("durationMs"),
                "notKept": response.get("notKept"),
            }
        )
    return rows


def render_exchanges(rows: list[ExchangeRow], not_kept: list[str]) -> str:
    """The exchanges as text, apart from the model steps."""
    from blackbox_mitm.cassette.timeline import format_offset

    lines = [f"\nother HTTP exchanges: {len(rows)} (served by an offline replay)\n"]
    if rows:
        lines.append("#  method  status      size      time  where")
        for r in rows:
            size = f"{r['bytes']:,}"
            gone = "  [body not kept]" if r.get("notKept") else ""
            lines.append(
                f"{r['index']:<2} {r['method']:<7} {r['status']!s:>6} {size:>9} {format_offset(r['offsetMs']):>9}  {r['host']}{r['path']}{gone}"
            )
    for line in not_kept:
        lines.append(f"not kept: {line}")
    return "\n".join(lines) + "\n"
