"""The run's media bytes in plain Python: kept once while recording, lent to the codecs when they must produce them.

``MediaBook`` (record, fork) keeps the bytes of every media part a recorded
request or answer carried, once per digest, within a cap on the run's total
(``BLACKBOX_MEDIA_MAX_BYTES``, default 256 MiB). What is over the cap, or holds a
credential the run used, is listed as not kept (digest, type, size, why): the
steps still name it by digest, so a strict replay still compares it; only a
replay that must serve those bytes back says they are missing. ``seal`` writes
the items the run's steps name to ``RUN.media.json`` and returns the terminal
event's ``media`` seal. The file format is ``cassette/media.py``'s.
"""

from __future__ import annotations

import base64
import logging
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from blackbox_mitm.cassette.media import KIND, VERSION, digests_in, media_ref, spooled_line, write_media
from blackbox_mitm.cassette.records import FileSeal, MediaDocument, MediaEntry, MediaNotKept
from blackbox_mitm.errors import ConfigError

__all__ = ["DEFAULT_MEDIA_MAX_BYTES", "MediaBook", "media_max_bytes"]

log = logging.getLogger(__name__)

DEFAULT_MEDIA_MAX_BYTES = 256 * 1024 * 1024  # every stored item of the run together (decoded bytes)
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/x-")


def media_max_bytes(environ: Mapping[str, str] | None = None) -> int:
    """The cap from ``BLACKBOX_MEDIA_MAX_BYTES`` (bytes), else the default; ``ConfigError`` for a value that is not a size."""
    raw = (os.environ if environ is None else environ).get("BLACKBOX_MEDIA_MAX_BYTES", "").strip()
    if not raw:
        return DEFAULT_MEDIA_MAX_BYTES
    if not raw.isdigit():
        raise ConfigError(f"BLACKBOX_MEDIA_MAX_BYTES must be a number of bytes (the cap on a run's stored media), not {raw!r}")
    return int(raw)


class MediaBook:
    """The media of one recording; thread-safe. ``seed``: a parent's media document (a fork's copied steps name its items)."""

    def __init__(
        self,
        *,
        max_bytes: int | None = None,
        secrets: Iterable[str] = (),
        seed: MediaDocument | None = None,
        spool: Path | None = None,
        fsync: bool = True,
    ) -> None:
        self.max_bytes = media_max_bytes() if max_bytes is None else max_bytes
        self.spool = spool  # each new item, appended and fsynced: what `blackbox recover` keeps of a killed recording
        self.fsync = fsync
        self.secrets = {s for s in secrets if s}
        self.items: dict[str, MediaEntry] = {}
        self.not_kept: dict[str, MediaNotKept] = {}
        self.kept_bytes = 0
        self._lock = threading.Lock()
        for digest, entry in ((seed.get("media") if seed else None) or {}).items():
            self.items[digest] = entry.copy()
            self.kept_bytes += int(entry.get("size") or 0)
        for left_out in (seed.get("notKept") if seed else None) or []:
            self.not_kept.setdefault(str(left_out.get("sha256")), left_out.copy())
        if spool is not None:
            spool.write_bytes(b"")  # a new recording holds the cassette's journal: anything there is a dead run's
            self._write_spool(self.items)  # a fork's copied items too: the child's copied steps name them

    def add(self, found: Mapping[str, tuple[str, bytes]], *, secrets: Iterable[str] = ()) -> None:
        """Keep each item once (a digest already kept, or refused, costs nothing more); new ones go to the spool first.

        ``secrets``: the credentials the run has used so far (the recorder's), besides the book's own.
        """
        known = self.secrets.union(s for s in secrets if s)
        with self._lock:
            new: dict[str, MediaEntry] = {}
            for digest, (media_type, data) in found.items():
                if digest in self.items or digest in self.not_kept:
                    continue
                why = self._why_not(media_type, data, known)
                if why is not None:
                    self.not_kept[digest] = {"sha256": digest, "mediaType": media_type, "size": len(data), "why": why}
                    log.info("blackbox: the %s %s… (%d bytes) is not kept: %s", media_type, digest[:12], len(data), why)
                    continue
                new[digest] = {"mediaType": media_type, "size": len(data), "data": base64.b64encode(data).decode("ascii")}
                self.kept_bytes += len(data)
            self._write_spool(new)
            self.items.update(new)

    def _write_spool(self, items: Mapping[str, MediaEntry]) -> None:
        if self.spool is None or not items:
            return
        with open(self.spool, "ab") as f:
            f.write(b"".join(spooled_line(d, e) for d, e in items.items()))
            f.flush()
            if self.fsync:
                os.fsync(f.fileno())

    def discard(self) -> None:
        """The run is dropped (or its media file written): the spool goes."""
        if self.spool is not None:
            self.spool.unlink(missing_ok=True)

    def _why_not(self, media_type: str, data: bytes, secrets: set[str]) -> str | None:
        if self.kept_bytes + len(data) > self.max_bytes:
            return f"the run's media reached the {self.max_bytes:,}-byte cap (BLACKBOX_MEDIA_MAX_BYTES raises it)"
        if media_type.startswith(_TEXT_TYPES) and any(s.encode() in data for s in secrets):
            return "it holds a credential the run used"
        return None

    def lines(self) -> list[str]:
        """What was not kept, one line each (the recording's notes)."""
        with self._lock:
            return [f"the {e.get('mediaType')} {d[:12]}… ({e.get('size', 0):,} bytes): {e.get('why')}" for d, e in self.not_kept.items()]

    def document(self, run_id: str, payloads: Iterable[Any]) -> MediaDocument:
        """The media document for the items ``payloads`` name (what a failed call carried is not the run's)."""
        named = digests_in(list(payloads))
        with self._lock:
            return {
                "kind": KIND,
                "version": VERSION,
                "run": run_id,
                "media": {d: self.items[d] for d in sorted(named) if d in self.items},
                "notKept": [self.not_kept[d] for d in sorted(named) if d in self.not_kept and d not in self.items],
            }

    def seal(self, cassette: str | Path, run_id: str, payloads: Iterable[Any]) -> FileSeal | None:
        """Write the media beside ``cassette``; the terminal event's ``media`` (None: the steps name none)."""
        document = self.document(run_id, payloads)
        if document["media"] or document["notKept"]:
            write_media(cassette, document)
        self.discard()
        return media_ref(cassette, document) if document["media"] or document["notKept"] else None
