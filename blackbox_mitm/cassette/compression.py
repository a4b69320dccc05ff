"""Compressed cassettes and journals: ``RUN.json.gz`` (gzip) and ``RUN.json.zst`` (zstd), chosen by file name.

A compressed cassette holds exactly the bytes of its plain twin, compressed: the
hash chain is over the canonical payloads as always, so ``RUN.json.zst`` verifies,
shows, diffs and replays exactly as ``RUN.json`` does. Every reader and writer
goes through here at the one point where bytes meet a file:

* ``encode(path, data)`` / ``decode(path, data)``: a whole cassette, by the name's
  suffix (``.gz``, ``.zst``; anything else is plain JSON). Decoding is capped at
  ``jsonfile.max_bytes()`` decompressed (1 GiB, ``$BLACKBOX_MAX_CASSETTE_BYTES``):
  a zip bomb is a ``CompressedCassetteError`` past the cap, not an exhausted
  machine. A ``.gz`` that is not gzip, a ``.zst`` cut short, and a plain-named
  file that is really compressed are named errors too.
* ``journal_member(cassette, data)``: one journal write (the header line, or one
  batch of steps) as one gzip member or one zstd frame. Both formats allow
  members/frames to be concatenated, so the journal stays append-only, and
  ``journal_plain`` reads it back member by member: a last member cut off (the
  recorder died mid-write) is dropped whole, every complete one is kept.

zstd uses a window of 8 MiB with long-distance matching: a model call re-sends
the tool definitions, system prompt and whole history of the call before it, so
the previous step is almost always within reach.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from pathlib import Path

import zstandard

from blackbox_mitm.errors import CompressedCassetteError

__all__ = [
    "GZIP",
    "PLAIN",
    "ZSTD",
    "CompressedCassetteError",
    "decode",
    "encode",
    "first_line",
    "iter_decoded",
    "journal_member",
    "journal_plain",
    "kind_of",
    "plain_name",
    "sniff",
]

PLAIN = "plain"
GZIP = "gzip"
ZSTD = "zstd"
SUFFIXES = {".gz": GZIP, ".zst": ZSTD}
#: The suffix each kind's file name ends with.
SUFFIX_OF = {GZIP: ".gz", ZSTD: ".zst", PLAIN: ""}

_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_GZIP_LEVEL = 6
_ZSTD_LEVEL = 9
_ZSTD_JOURNAL_LEVEL = 3
_ZSTD_WINDOW_LOG = 23
# zstd's densest block (an RLE block) turns 4 input bytes into 128 KiB: feeding at
# most remaining/_ZSTD_MAX_RATIO input bytes at a time keeps the output near the cap.
_ZSTD_MAX_RATIO = 32 * 1024
_MIN_FEED = 256
_MAX_FEED = 1 << 20
_FEED = 1 << 18


def kind_of(path: str | os.PathLike[str]) -> str:
    """``gzip``, ``zstd`` or ``plain``, from the file name (a journal takes its cassette's)."""
    name = Path(path).name.removesuffix(".journal")
    return SUFFIXES.get(Path(name).suffix, PLAIN)


def plain_name(path: str | os.PathLike[str]) -> Path:
    """``run.json.zst`` -> ``run.json``: the name of the plain twin."""
    p = Path(path)
    return p.with_name(p.name.removesuffix(SUFFIX_OF[kind_of(p)])) if kind_of(p) != PLAIN else p


def sniff(data: bytes) -> str:
    """The format the bytes are in, from their first bytes (JSON never starts with either magic)."""
    if data.startswith(_GZIP_MAGIC):
        return GZIP
    if data.startswith(_ZSTD_MAGIC):
        return ZSTD
    return PLAIN


def encode(path: str | os.PathLike[str], data: bytes) -> bytes:
    """``data`` as the file ``path`` holds it: compressed when its name says so."""
    kind = kind_of(path)
    if kind == GZIP:
        return _gzip_member(data)
    if kind == ZSTD:
        params = zstandard.ZstdCompressionParameters.from_level(
            _ZSTD_LEVEL, window_log=_ZSTD_WINDOW_LOG, enable_ldm=True, write_content_size=True
        )
        return zstandard.ZstdCompressor(compression_params=params).compress(data)
    return data


def journal_member(cassette: str | os.PathLike[str], data: bytes) -> bytes:
    """One journal write as its journal holds it: a gzip member or zstd frame of its own, or the bytes."""
    kind = kind_of(cassette)
    if kind == GZIP:
        return _gzip_member(data)
    if kind == ZSTD:
        return zstandard.ZstdCompressor(level=_ZSTD_JOURNAL_LEVEL).compress(data)
    return data


def _gzip_member(data: bytes) -> bytes:
    # mtime 0: the same cassette compresses to the same bytes.
    c = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def decode(path: str | os.PathLike[str], data: bytes, *, limit: int | None = None) -> bytes:
    """The plain JSON bytes of the file ``path`` whose bytes are ``data``; ``CompressedCassetteError`` when they are not.

    ``limit``: the most decompressed bytes accepted (default ``jsonfile.max_bytes()``).
    """
    kind = kind_of(path)
    if kind == PLAIN:
        found = sniff(data)
        if found != PLAIN:
            raise CompressedCassetteError(
                f"the file is {found}-compressed but its name does not say so; rename it to end in "
                f"{Path(path).name}{SUFFIX_OF[found]} (Blackbox picks the format by the name), or run `blackbox decompress`",
                path=str(path),
            )
        return data
    chunks, cut = _members(kind, data, path=str(path), limit=_limit(limit))
    if cut:
        raise CompressedCassetteError(
            f"the {kind} data is cut short (the file is truncated); restore it from version control, or re-record the run",
            path=str(path),
        )
    plain = b"".join(chunks)
    _refuse_nested(kind, plain, path=str(path))
    return plain


def _refuse_nested(kind: str, plain: bytes, *, path: str) -> None:
    """A file compressed twice: its decompressed content is no JSON but another compressed stream."""
    inner = sniff(plain[:4])
    if inner != PLAIN:
        raise CompressedCassetteError(
            f"the decompressed content is not JSON: it looks like another {inner} stream (the file was compressed twice); "
            f"decompress it once more, then name it by what it holds",
            path=path,
        )


def journal_plain(cassette: str | os.PathLike[str], data: bytes, *, path: str, limit: int | None = None) -> tuple[bytes, bool]:
    """A journal's plain lines, and whether its last member was cut off (and dropped).

    A plain journal is returned up to its first NUL byte (its lines never hold
    one: what follows is the zeros written ahead of them, or, after a crash, writes
    no ``fsync`` covered: ``cassette/journal.py``), its torn last line ``recovery``'s
    to drop; a compressed one is read member by member, and only complete members
    count.
    """
    kind = kind_of(cassette)
    if kind == PLAIN:
        end = data.find(b"\0")
        if end < 0:
            return data, False
        return data[:end], bool(data[end:].strip(b"\0"))  # a write past the zeros: dropped
    chunks, cut = _members(kind, data, path=path, limit=_limit(limit))
    return b"".join(chunks), cut


def _limit(limit: int | None) -> int:
    if limit is not None:
        return limit
    from blackbox_mitm.cassette.jsonfile import max_bytes

    return max_bytes()


def _members(kind: str, data: bytes, *, path: str, limit: int) -> tuple[list[bytes], bool]:
    """The decompressed bytes of each complete member/frame, and whether a last one was cut short."""
    out: list[bytes] = []
    member: list[bytes] = []
    for piece in _stream(kind, data, path=path, limit=limit):
        if piece is _CUT:
            return out, True
        if piece is _END:
            out.append(b"".join(member))
            member = []
        else:
            member.append(piece)
    return out, False


def iter_decoded(path: str | os.PathLike[str], data: bytes, *, limit: int | None = None) -> Iterator[bytes]:
    """``decode``, in pieces of at most 1 MiB: the plain text of a compressed file, never held whole."""
    kind = kind_of(path)
    if kind == PLAIN:
        yield decode(path, data)
        return
    first = True
    for piece in _stream(kind, data, path=str(path), limit=_limit(limit)):
        if first and piece is not _END and piece is not _CUT:
            _refuse_nested(kind, piece, path=str(path))
            first = False
        if piece is _CUT:
            raise CompressedCassetteError(
                f"the {kind} data is cut short (the file is truncated); restore it from version control, or re-record the run",
                path=str(path),
            )
        if piece is not _END:
            yield piece


_END = b"<end of member>"
_CUT = b"<member cut short>"


def _stream(kind: str, data: bytes, *, path: str, limit: int) -> Iterator[bytes]:
    """Each member's output in pieces, ``_END`` after each complete member, ``_CUT`` (then stop) for one cut short."""
    magic = _GZIP_MAGIC if kind == GZIP else _ZSTD_MAGIC
    if not data.startswith(magic):
        what = "empty" if not data else "not " + kind
        raise CompressedCassetteError(
            f"the file is {what} data, though its name ends in {SUFFIX_OF[kind]}; restore it from version control, "
            f"or name it by what it holds (a plain cassette ends in .json)",
            path=path,
        )
    total = 0
    rest = memoryview(data)
    while rest.nbytes:
        try:
            for chunk in _gzip_pieces(rest, limit - total) if kind == GZIP else _zstd_pieces(rest, limit - total):
                if isinstance(chunk, int):
                    rest = rest[rest.nbytes - chunk :]  # what follows this member
                    break
                total += len(chunk)
                if total > limit:
                    raise CompressedCassetteError(_too_big(kind, limit), path=path)
                yield chunk
            else:
                yield _CUT
                return
        except (zlib.error, zstandard.ZstdError) as exc:
            raise CompressedCassetteError(f"the {kind} data is damaged ({exc}); restore it from version control", path=path) from exc
        yield _END
        if rest.nbytes and rest[: len(magic)].tobytes() != magic:
            if not bytes(rest).strip(b"\0"):
                return  # zero padding after the last member (some tools write it)
            raise CompressedCassetteError(_garbage(kind), path=path)


def _gzip_pieces(data: memoryview, budget: int) -> Iterator[bytes | int]:
    """One gzip member's output in bounded pieces, then the count of input bytes left after it."""
    d = zlib.decompressobj(31)
    at = 0
    while at < data.nbytes:
        pending: bytes | memoryview = data[at : at + _FEED]
        at += _FEED
        while pending:
            piece = d.decompress(pending, max(1, min(_MAX_FEED, budget + 1)))
            pending = d.unconsumed_tail
            if piece:
                yield piece
                budget -= len(piece)
            if d.eof:
                yield len(d.unused_data) + max(0, data.nbytes - at)
                return
            if not piece:
                break


def _zstd_pieces(data: memoryview, budget: int) -> Iterator[bytes | int]:
    """One zstd frame's output in pieces of about 1 MiB: the input is fed in slices sized by the ratio seen so far.

    zstd's decompressor returns everything a slice holds, so a slice is never
    larger than what could blow far past the cap (``_ZSTD_MAX_RATIO``), nor than
    what gives about ``_MAX_FEED`` of output at the ratio met so far.
    """
    d = zstandard.ZstdDecompressor(max_window_size=1 << 27).decompressobj()
    at = 0
    fed = produced = 0
    while at < data.nbytes:
        ratio = max(1, produced // fed) if fed else _ZSTD_MAX_RATIO
        feed = max(_MIN_FEED, min(_MAX_FEED // ratio, max(budget, 0) // _ZSTD_MAX_RATIO, _MAX_FEED))
        piece = d.decompress(data[at : at + feed])
        at += feed
        fed += feed
        produced += len(piece)
        if piece:
            yield piece
            budget -= len(piece)
        if d.eof:
            yield len(d.unused_data) + max(0, data.nbytes - at)
            return


def _too_big(kind: str, limit: int) -> str:
    return (
        f"the {kind} data decompresses to more than the {limit:,} bytes a reader accepts (a cassette that large, or a "
        "compression bomb); if it really is a cassette, raise the limit with BLACKBOX_MAX_CASSETTE_BYTES"
    )


def _garbage(kind: str) -> str:
    return f"bytes that are not {kind} follow the {kind} data (the file was damaged or appended to); restore it from version control"


def first_line(head: bytes) -> bytes:
    """The first line of a journal whose first bytes are ``head``, plain or compressed (sniffed: no name at hand)."""
    kind = sniff(head)
    if kind == PLAIN:
        return head.split(b"\n", 1)[0]
    try:
        if kind == GZIP:
            text = zlib.decompressobj(31).decompress(head, 1 << 20)
        else:
            text = zstandard.ZstdDecompressor().decompressobj().decompress(head[: 1 << 16])
    except (zlib.error, zstandard.ZstdError):
        return b""
    return text.split(b"\n", 1)[0]
