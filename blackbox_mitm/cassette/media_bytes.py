"""A media part's bytes while a call is decoded or encoded: gathered from the request, lent to the encoders.

Context variables, so the codecs need no media argument: ``extensions.media_part`` notes each
part's bytes while a session collects them (``collecting``), and an encoder asks for the bytes of a
recorded part by digest from the store a session lends (``resolving``). Kept apart from
``cassette/media.py`` (the media file beside the cassette) so that the payload types, which the
store imports, do not import the file layer. Plain Python.
"""

from __future__ import annotations

import base64
import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from blackbox_mitm.errors import CassetteError

__all__ = ["MissingMedia", "bytes_for", "collecting", "note_bytes", "resolving"]

#: digest -> (media type, bytes), gathered while a codec decodes (None: nobody is collecting).
_COLLECTED: contextvars.ContextVar[dict[str, tuple[str, bytes]] | None] = contextvars.ContextVar("blackbox_media_collected", default=None)
#: digest -> bytes, lent to a codec while it encodes (None: no store).
_STORE: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar("blackbox_media_store", default=None)


class MissingMedia(CassetteError):
    """A served answer (or a request rebuilt upstream) needs bytes the run did not keep."""


def note_bytes(digest: str, media_type: str | None, data: bytes) -> None:
    """A codec saw these bytes (``extensions.media_part``): kept when someone is collecting."""
    found = _COLLECTED.get()
    if found is not None and digest not in found:
        found[digest] = (media_type or "application/octet-stream", data)


@contextmanager
def collecting() -> Iterator[dict[str, tuple[str, bytes]]]:
    """Gather the bytes of every media part decoded inside the block: ``{digest: (media type, bytes)}``."""
    found: dict[str, tuple[str, bytes]] = {}
    token = _COLLECTED.set(found)
    try:
        yield found
    finally:
        _COLLECTED.reset(token)


@contextmanager
def resolving(store: Mapping[str, Any] | None) -> Iterator[None]:
    """Lend ``store`` (digest -> bytes, or a media document's ``media`` object) to the encoders inside the block."""
    token = _STORE.set(store)
    try:
        yield
    finally:
        _STORE.reset(token)


def bytes_for(part: Mapping[str, Any]) -> bytes:
    """The bytes of a media part, from the store ``resolving`` lent; ``MissingMedia`` when they are not there."""
    digest = part.get("sha256")
    store = _STORE.get()
    entry = store.get(digest) if store is not None and isinstance(digest, str) else None
    if isinstance(entry, bytes):
        return entry
    if isinstance(entry, Mapping) and isinstance(entry.get("data"), str):
        return base64.b64decode(entry["data"])
    where = (
        "the run keeps no media file"
        if store is None
        else "the run's media file does not hold it (it was over the cap, or the run predates media)"
    )
    raise MissingMedia(f"the {part.get('type', 'media')} {str(digest)[:12]}… ({part.get('mediaType', '?')}) is needed here, but {where}")
