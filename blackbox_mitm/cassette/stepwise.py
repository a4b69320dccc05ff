"""Loading a big cassette one step at a time: bounded memory, the same trace as a whole-document parse.

``orjson.loads`` of a whole cassette holds the file's bytes, orjson's own parse
tree and the Python objects at once: 3.8x the file at its peak. ``load_stepwise``
reads the file (or a compressed file's decompressed text) in 1 MiB pieces and
parses one step at a time from them, so what it holds is the steps parsed so far
and one step's text: the peak is the trace itself plus a little.

How a step's end is found without a JSON scanner in Python: each step after the
first opens with ``{"id": "<trace id>:<index>"`` (the spec's key order, which this
writer and the JavaScript one use, indented or compact), which one ``bytes.find``
locates. The text between one step's start and the next step's ``{`` is handed to
orjson, and a slice that parses as one object *is* the step (a JSON object has
exactly one end); one that does not is a false match, and the search goes on.

Anything this cannot read exactly as the whole-document parse would — another
key order, ``steps`` not the last field, a step that is not plain well-formed
JSON, a structure error — makes it answer ``None`` before anything is returned,
and the caller parses the whole document as before (which then names the
problem). So it changes how much memory a load takes, never what a load returns
or which errors it raises.
"""

from __future__ import annotations

import gc
import hashlib
import math
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from blackbox_mitm.cassette import compression
from blackbox_mitm.cassette.jsonfile import MAX_DEPTH, JsonLimitError, _deeper_than, decode_json, max_bytes
from blackbox_mitm.cassette.records import JSONObject
from blackbox_mitm.cassette.trace import STEP_TYPES, Trace, TraceStep

__all__ = ["FileSource", "load_stepwise"]

_PIECE = 1 << 20
FREEZE_BYTES = 8 << 20  # a cassette this big or bigger (its plain text) is frozen out of the cyclic collector's walks once loaded
COLLECT_BYTES = 1 << 20  # a file this big or bigger on disk may be: the garbage of the moment is collected first
_STEPS_KEY = re.compile(rb'"steps"\s*:\s*\[')
_BEFORE_ID = re.compile(rb'\}\s*,\s*\{\s*"id"\s*:\s*\Z')
_MAX_TIME_MS = 8.64e15
_HEADER_TYPES: dict[str, tuple[type, ...]] = {"id": (str,), "createdAt": (int, float)}


class _Fallback(Exception):
    """This file is not one the step-by-step reader can read exactly: parse the whole document instead."""


class FileSource(bytes):
    """Stands in for a cassette's bytes (``verify``'s repeated-key rule) without holding them.

    ``count`` answers from the counts taken while the file was read; ``decode``
    reads the file again — only when the counts say a key may repeat.
    """

    quotes: int
    escaped_quotes: int
    path: Path
    sha256: str  # of the plain text read (``verified_cache``: the same bytes verify the same)

    def count(self, sub: Any, *args: Any) -> int:
        if sub == b'"' and not args:
            return self.quotes
        if sub == b"\\u0022" and not args:
            return self.escaped_quotes
        return 0

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        from blackbox_mitm.cassette.jsonfile import read_file

        return compression.decode(self.path, read_file(self.path)).decode(encoding, errors)


def load_stepwise(path: Path) -> tuple[Trace, FileSource] | None:
    """The trace at ``path`` parsed step by step, and a stand-in for its bytes; None to parse it whole instead."""
    pieces = _pieces(path)
    if pieces is None:
        return None
    # Tens of thousands of small parses each allocate fresh containers, and every few
    # hundred of them start a cyclic collection over all that came before; JSON values
    # hold no cycles, so the collector is paused for the load (and restored after).
    paused = gc.isenabled()
    if _stored_size(path) >= COLLECT_BYTES:
        gc.collect()  # what is garbage now is collected now, not frozen below with the trace
    gc.disable()
    reader = _Reader(pieces, path)
    try:
        return reader.read()
    except _Fallback:
        return None
    finally:
        if reader.read_bytes >= FREEZE_BYTES:
            # A big trace is millions of objects that live as long as the run: left to the
            # collector, its next full collections walk every one of them (about 0.25 s each
            # for 100 MB, over a second of a replay's start). Frozen, they are skipped; they are
            # still freed as usual when nothing refers to them (JSON values hold no cycles).
            gc.freeze()
        if paused:
            gc.enable()


def _stored_size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _pieces(path: Path) -> Iterator[bytes] | None:
    """The file's plain text in pieces, or None when ``read_file`` should see it (and name what is wrong)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes() or st.st_size == 0:
            os.close(fd)
            return None
    except OSError:
        os.close(fd)
        return None
    if compression.kind_of(path) == compression.PLAIN:
        return _plain_pieces(fd)
    with os.fdopen(fd, "rb") as f:
        stored = f.read(max_bytes() + 1)
    return compression.iter_decoded(path, stored)


def _plain_pieces(fd: int) -> Iterator[bytes]:
    with os.fdopen(fd, "rb") as f:
        first = f.read(_PIECE)
        if compression.sniff(first) != compression.PLAIN:
            raise _Fallback  # compressed under a plain name: the whole-document path says so
        total = len(first)
        yield first
        while piece := f.read(_PIECE):
            total += len(piece)
            if total > max_bytes():
                raise _Fallback
            yield piece


class _Reader:
    """One pass over the pieces: the header, then each step, then the closing brackets."""

    def __init__(self, pieces: Iterator[bytes], path: Path) -> None:
        self.pieces = pieces
        self.path = path
        # A bytearray: appending a piece and dropping a parsed prefix cost the piece, not the
        # whole buffer, so a step (or a header) that never ends — a compression bomb of
        # whitespace — costs time linear in what was read, up to the size cap.
        self.buf = bytearray()
        self.eof = False
        self.quotes = 0
        self.escaped = 0
        self.digest = hashlib.sha256()
        self.read_bytes = 0

    def more(self, keep_from: int) -> int:
        """Read the next piece, dropping the buffer before ``keep_from``; how far the buffer moved (-1 at the end)."""
        try:
            piece = next(self.pieces)
        except StopIteration:
            self.eof = True
            return -1
        del self.buf[:keep_from]
        self.buf += piece
        self.digest.update(piece)
        self.read_bytes += len(piece)
        return keep_from

    def count(self, start: int, end: int) -> None:
        """Count the quotes of ``buf[start:end]`` (in place: no copy)."""
        self.quotes += self.buf.count(b'"', start, end)
        self.escaped += self.buf.count(b"\\u0022", start, end)

    def read(self) -> tuple[Trace, FileSource]:
        start = self.header()
        index = 0
        while True:
            start, done = self.step(start, index)
            index += 1
            if done:
                break
        source = FileSource()
        source.quotes, source.escaped_quotes, source.path = self.quotes, self.escaped, self.path
        source.sha256 = self.digest.hexdigest()
        return self.trace, source

    def header(self) -> int:
        m = _STEPS_KEY.search(self.buf)
        while m is None:
            searched = len(self.buf)
            if self.more(0) < 0:
                raise _Fallback
            m = _STEPS_KEY.search(self.buf, max(0, searched - 64))  # only what is new (and the key's reach back)
        first = self.skip_space(m.end())
        head = bytes(self.buf[: m.start()]).rstrip()
        if not head.endswith(b","):
            raise _Fallback
        data = _loads(head[:-1] + b"}")
        if not isinstance(data, dict) or data.get("version") != 2 or isinstance(data.get("version"), bool) or "steps" in data:
            raise _Fallback
        for key, types in _HEADER_TYPES.items():
            if not isinstance(data.get(key), types) or isinstance(data.get(key), bool):
                raise _Fallback
        for key in ("parentId", "forkedFromStepId"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise _Fallback
        if not _is_time(data["createdAt"]):
            raise _Fallback
        self.count(0, first)
        env = data.get("environment")
        self.trace = Trace(
            id=data["id"],
            createdAt=data["createdAt"],
            parentId=data.get("parentId"),
            forkedFromStepId=data.get("forkedFromStepId"),
            environment=env if isinstance(env, dict) else None,
        )
        if self.buf[first : first + 1] != b"{":
            raise _Fallback  # no steps, or not an object: the whole-document path words it
        return first

    def skip_space(self, at: int) -> int:
        """Where the first byte that is not JSON whitespace from ``at`` on is (reading on as needed)."""
        while True:
            rest = self.buf[at:].lstrip(b" \t\r\n") if at < len(self.buf) else b""
            if rest:
                return len(self.buf) - len(rest)
            at = len(self.buf)
            if self.more(0) < 0:
                raise _Fallback

    def step(self, start: int, index: int) -> tuple[int, bool]:
        """Parse the step that starts at ``start``; the next one's start, and whether this was the last."""
        needle = orjson.dumps(f"{self.trace.id}:{index + 1}")
        at = start
        while True:
            hit = self.buf.find(needle, at)
            if hit < 0:
                searched = len(self.buf)
                if self.eof or self.more(start) < 0:
                    return self.last(start, index), True
                start, at = 0, max(0, searched - start - len(needle))  # the buffer now begins at this step
                continue
            m = _BEFORE_ID.search(self.buf, max(start, hit - 256), hit)
            if m is not None:
                end = m.start() + 1
                if self.add(start, end, index):
                    nxt = self.buf.index(b"{", end)
                    return nxt, False
            at = hit + 1

    def last(self, start: int, index: int) -> int:
        tail = bytes(self.buf[start:]).rstrip()
        if not tail.endswith(b"}"):
            raise _Fallback
        tail = tail[:-1].rstrip()
        if not tail.endswith(b"]"):
            raise _Fallback
        body = tail[:-1].rstrip()
        if not self.add(start, start + len(body), index):
            raise _Fallback
        return len(self.buf)

    def add(self, start: int, end: int, index: int) -> bool:
        """Append the step ``buf[start:end]`` holds; False when it is not exactly one step object.

        Only its quotes are counted: what lies between steps (``,`` and whitespace,
        the closing brackets) holds none, or the whole-document path reads the file.
        """
        try:
            with memoryview(self.buf) as view:
                s = orjson.loads(view[start:end])
        except orjson.JSONDecodeError:
            try:
                s = decode_json(bytes(self.buf[start:end]))  # a lone surrogate (``"\\ud83d"``): the standard library reads it
            except JsonLimitError:
                raise _Fallback from None
            except ValueError:
                return False  # not one JSON value: a false match
        if not isinstance(s, dict):
            return False
        if _deeper_than(s, MAX_DEPTH - 2):
            raise _Fallback
        step = _step(s, index, self.trace)
        self.trace.steps.append(step)
        self.count(start, end)
        return True


def _step(s: JSONObject, index: int, trace: Trace) -> TraceStep:
    """The step, when it has every field with the type the loader requires (anything else: the whole-document path)."""
    try:
        step = TraceStep(s["id"], s["index"], s["type"], s["timestamp"], s["payload"], s["prevHash"], s["hash"])
    except KeyError:
        raise _Fallback from None
    ok = (
        isinstance(step.id, str)
        and type(step.index) is int
        and step.index == index
        and step.type in STEP_TYPES
        and (step.prevHash is None or isinstance(step.prevHash, str))
        and isinstance(step.hash, str)
        and not isinstance(step.timestamp, bool)
        and isinstance(step.timestamp, (int, float))
        and _is_time(step.timestamp)
    )
    if not ok:
        raise _Fallback
    return step


def _is_time(v: int | float) -> bool:
    return (isinstance(v, int) or math.isfinite(v)) and -_MAX_TIME_MS <= v <= _MAX_TIME_MS


def _loads(text: bytes) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        raise _Fallback from None
