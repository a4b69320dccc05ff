"""The run's media bytes: one file beside the cassette, content-addressed, sealed into the hash chain.

A media part in a payload (``{"type": "image", "mediaType", "sha256", "size"}``,
``cassette/extensions.py``) names its bytes by their SHA-256. The bytes live in
``RUN.media.json`` beside ``RUN.json`` (``RUN.media.json.zst`` beside
``RUN.json.zst``: compressed the way the cassette is), each once, however often
the history re-sends them::

    {"kind": "blackbox-media", "version": 1, "run": "<trace id>",
     "media": {"<sha256>": {"mediaType", "size", "data": "<base64>"}},
     "notKept": [{"sha256", "mediaType"?, "size", "why"}]}

The run's terminal ``metadata`` event carries ``"media": {"file", "count",
"sha256"}`` (the SHA-256 of the document's canonical JSON), like the exchanges'
seal (``cassette/exchanges.py``): the terminal step is hashed and chained, so the
bytes are under the chain, and each entry is checked against its own digest.

While a run records, each new item is also appended to ``RUN.json.media-spool``
(one JSON line per item, ``fsync``ed before the step that names it is journaled):
``blackbox recover`` turns it into the media file of a recording that was killed
(``recover_media``), and a run that ends removes it.

While a codec decodes a request or an answer, ``collecting`` gathers the bytes
its media parts carry (``note_bytes``, called by ``extensions.media_part``); while
one encodes, ``resolving`` lends it the stored bytes (``bytes_for``). Both are
context variables, so concurrent calls never see each other's.
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
from blackbox_mitm.cassette.media_bytes import MissingMedia, bytes_for, collecting, note_bytes, resolving
from blackbox_mitm.cassette.records import FileSeal, MediaDocument, MediaEntry, MediaRow
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.errors import CassetteError

__all__ = [
    "KIND",
    "MEDIA_KINDS",
    "VERSION",
    "MissingMedia",
    "bytes_for",
    "collecting",
    "digests_in",
    "is_media_file",
    "load_media",
    "media_path",
    "media_ref",
    "media_ref_of",
    "note_bytes",
    "resolving",
    "verify_media",
    "write_media",
]

KIND = "blackbox-media"
VERSION = 1
MEDIA_KINDS = ("image", "document", "audio", "video")

# -- which digests a run's payloads name -----------------------------------------------------


def digests_in(value: Any) -> dict[str, Mapping[str, Any]]:
    """Every media part with a ``sha256`` anywhere in ``value`` (a payload, or a list of them), by digest."""
    out: dict[str, Mapping[str, Any]] = {}
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            digest = v.get("sha256")
            if v.get("type") in MEDIA_KINDS and isinstance(digest, str):
                out.setdefault(digest, v)
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return out


# -- the file ------------------------------------------------------------------------------


def media_path(cassette: str | os.PathLike[str]) -> Path:
    """``runs/a.json`` -> ``runs/a.media.json``; ``runs/a.json.zst`` -> ``runs/a.media.json.zst``."""
    p = Path(cassette)
    plain = compression.plain_name(p)
    suffix = p.name[len(plain.name) :]
    return p.with_name(f"{plain.name.removesuffix('.json')}.media.json{suffix}")


def is_media_file(name: str) -> bool:
    """``RUN.media.json`` (``.gz``, ``.zst``): a run's media, not a cassette (goldens, listings skip it)."""
    return compression.plain_name(Path(name)).name.endswith(".media.json")


def document_digest(document: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_bytes(document)).hexdigest()


def media_ref(cassette: str | os.PathLike[str], document: MediaDocument) -> FileSeal:
    """What the terminal event says about the media: the file's name, how many, the document's digest."""
    return {"file": media_path(cassette).name, "count": len(document.get("media") or {}), "sha256": document_digest(document)}


def media_ref_of(trace: Trace) -> FileSeal | None:
    """The terminal event's ``media`` (None: the run kept none, or predates media)."""
    last = trace.steps[-1] if trace.steps else None
    if last is None or last.type != "metadata" or not isinstance(last.payload, dict):
        return None
    ref = last.payload.get("media")
    return cast(FileSeal, ref) if isinstance(ref, dict) else None  # as found: ``load_media`` checks it


def write_media(cassette: str | os.PathLike[str], document: MediaDocument) -> Path:
    """Write the document beside ``cassette`` (atomically, compressed like it); returns the path."""
    from blackbox_mitm.cassette.store import encode_json, write_atomic

    path = media_path(cassette)
    data = encode_json(document, indent=True) + b"\n"
    return write_atomic(path, compression.encode(path, data), overwrite=True)


def load_media(cassette: str | os.PathLike[str], trace: Trace) -> MediaDocument | None:
    """The media document the trace's terminal event seals, checked (None: it seals none); ``CassetteError`` otherwise."""
    ref = media_ref_of(trace)
    if ref is None:
        return None
    problems, document = _read_checked(Path(cassette), ref, digests_in([s.payload for s in trace.steps]))
    if problems:
        raise CassetteError(f"the run's media do not verify: {problems[0]}", path=str(cassette))
    return document


def verify_media(cassette: str | os.PathLike[str], trace: Trace) -> list[str]:
    """Every problem with the media file the terminal event names (empty: it verifies, or there is none)."""
    ref = media_ref_of(trace)
    if ref is None:
        return []
    return _read_checked(Path(cassette), ref, digests_in([s.payload for s in trace.steps]))[0]


def _read_checked(cassette: Path, ref: Any, named: Mapping[str, Any]) -> tuple[list[str], MediaDocument | None]:
    if not isinstance(ref.get("file"), str) or not isinstance(ref.get("sha256"), str):
        return ["the terminal event's `media` must be {file, count, sha256}"], None
    name = str(ref["file"])
    if "/" in name or "\\" in name or name in ("", ".", ".."):
        return [f"the terminal event names the media file {name!r}, which is not a file beside the cassette"], None
    path = cassette.with_name(name)
    keep = "the run's images, documents and audio live there (keep it beside the cassette)"
    try:
        document = decode_json(compression.decode(path, read_file(path, what="a media file")))
    except CassetteError as exc:
        return [f"{name}: {exc}; {keep}"], None
    except (OSError, ValueError) as exc:
        return [f"{name}: cannot be read ({exc}); {keep}"], None
    if not isinstance(document, dict) or document.get("kind") != KIND:
        return [f'{name}: is not a Blackbox media file (no "kind": "{KIND}")'], None
    found = document_digest(document)
    if found != ref["sha256"]:
        seal = f"{name}: its SHA-256 {found[:12]}… is not the {str(ref['sha256'])[:12]}… the terminal event seals: the media were changed after recording"
        return [*_check_entries(name, document, named), seal], None  # an item that changed is named first, by its digest
    return _check_entries(name, document, named), cast(MediaDocument, document)  # a caller that uses it needs no problems


def _check_entries(name: str, document: Mapping[str, Any], named: Mapping[str, Any]) -> list[str]:
    """``document`` as read (not yet a ``MediaDocument``): every way it is not one."""
    media = document.get("media")
    not_kept = document.get("notKept")
    if not isinstance(media, dict) or not isinstance(not_kept, list):
        return [f"{name}: must hold `media` (an object) and `notKept` (a list)"]
    problems: list[str] = []
    for digest, entry in media.items():
        try:
            data = base64.b64decode(entry["data"], validate=True)
        except (KeyError, TypeError, ValueError):
            problems.append(f"{name}: media {digest}: not {{mediaType, size, data}} with base64 data")
            continue
        if hashlib.sha256(data).hexdigest() != digest:
            problems.append(f"{name}: media {digest}: its bytes do not have that SHA-256 (they were changed after recording)")
        elif entry.get("size") != len(data):
            problems.append(f"{name}: media {digest}: size {entry.get('size')!r} is not its {len(data):,} bytes")
    left_out = {e.get("sha256") for e in not_kept if isinstance(e, dict)}
    for digest, part in named.items():
        if digest not in media and digest not in left_out:
            problems.append(f"{name}: the {part.get('type')} {digest} a step names is neither stored nor listed as not kept")
    return problems


# -- the spool: what an interrupted recording kept ---------------------------------------------


def spool_path(cassette: str | os.PathLike[str]) -> Path:
    """``runs/a.json`` -> ``runs/a.json.media-spool`` (beside the journal, ``RUN.json.journal``)."""
    p = Path(cassette)
    return p.with_name(p.name + ".media-spool")


def spooled_line(digest: str, entry: MediaEntry) -> bytes:
    from blackbox_mitm.cassette.store import encode_json

    return encode_json({"sha256": digest, **entry}) + b"\n"


def recover_media(cassette: str | os.PathLike[str], trace: Trace) -> FileSeal | None:
    """The media file of an interrupted recording, from its spool: written beside the cassette; its seal (None: no spool).

    Only complete lines whose bytes have their digest are kept (a line cut off by the kill is dropped); a digest
    a step names that the spool does not hold is listed as not kept. The spool is removed.
    """
    spool = spool_path(cassette)
    try:
        raw = spool.read_bytes()
    except FileNotFoundError:
        return None
    items: dict[str, MediaEntry] = {}
    for line in raw.split(b"\n"):
        try:
            entry = decode_json(line)
            data = base64.b64decode(entry["data"], validate=True)
        except (CassetteError, ValueError, TypeError, KeyError):
            continue
        digest = entry.pop("sha256", None)
        if isinstance(digest, str) and hashlib.sha256(data).hexdigest() == digest:
            items[digest] = entry
    named = digests_in([s.payload for s in trace.steps])
    lost = "the recording was interrupted before its bytes were kept"
    document: MediaDocument = {
        "kind": KIND,
        "version": VERSION,
        "run": trace.id,
        "media": {d: items[d] for d in sorted(named) if d in items},
        "notKept": [
            {"sha256": d, "mediaType": named[d].get("mediaType"), "size": named[d].get("size"), "why": lost}
            for d in sorted(named)
            if d not in items
        ],
    }
    ref = None
    if document["media"] or document["notKept"]:
        write_media(cassette, document)
        ref = media_ref(cassette, document)
    spool.unlink()
    return ref


# -- listing (``blackbox show``) ----------------------------------------------------------------


def media_rows(document: MediaDocument) -> list[MediaRow]:
    """One row per stored item (digest, media type, size), then one per item not kept (with why)."""
    rows: list[MediaRow] = [
        {"sha256": d, "mediaType": e.get("mediaType"), "size": e.get("size"), "kept": True}
        for d, e in (document.get("media") or {}).items()
        if isinstance(e, dict)
    ]
    rows += [cast(MediaRow, {**e, "kept": False}) for e in document.get("notKept") or [] if isinstance(e, dict)]
    return rows


def render_media(rows: list[MediaRow]) -> str:
    kept = [r for r in rows if r["kept"]]
    total = sum(int(r.get("size") or 0) for r in kept)
    lines = [f"\nmedia: {len(kept)} stored once each ({total:,} bytes)"]
    for r in rows:
        tail = "" if r["kept"] else f"  [not kept: {r.get('why')}]"
        lines.append(f"  {r['sha256'][:12]}…  {r.get('mediaType') or '?':<20} {int(r.get('size') or 0):>12,} bytes{tail}")
    return "\n".join(lines) + "\n"
