"""``session/decoding``: a streamed body's Content-Encoding undone chunk by chunk, as the SSE tee receives it."""

from __future__ import annotations

import gzip
import zlib

import brotli
import pytest

from blackbox_mitm.session.decoding import stream_decoder

EVENTS = b"".join(b'data: {"n": %d, "text": "%s"}\n\n' % (i, b"x" * (i % 50)) for i in range(400))


def _fed(decode: object, body: bytes, size: int = 97) -> bytes:
    assert callable(decode)
    return b"".join(decode(body[i : i + size]) for i in range(0, len(body), size))


@pytest.mark.parametrize(
    ("encoding", "encoded"),
    [
        ("gzip", gzip.compress(EVENTS)),
        ("x-gzip", gzip.compress(EVENTS)),
        ("deflate", zlib.compress(EVENTS)),  # with the zlib header
        ("deflate", zlib.compress(EVENTS)[2:-4]),  # raw deflate, as some servers send it
        ("br", brotli.compress(EVENTS)),
        ("identity", EVENTS),
        ("", EVENTS),
    ],
)
def test_each_encoding_is_decoded_across_chunk_boundaries(encoding: str, encoded: bytes) -> None:
    assert _fed(stream_decoder(encoding), encoded) == EVENTS


def test_zstd_and_stacked_encodings_are_undone_last_first() -> None:
    import importlib

    try:
        zstd = importlib.import_module("compression.zstd")
    except ImportError:
        zstd = importlib.import_module("backports.zstd")
    assert _fed(stream_decoder("zstd"), zstd.compress(EVENTS)) == EVENTS
    stacked = brotli.compress(gzip.compress(EVENTS))  # Content-Encoding: gzip, br (gzip applied first)
    assert _fed(stream_decoder("gzip, BR"), stacked) == EVENTS


def test_an_unknown_encoding_and_a_corrupt_gzip_stream_raise() -> None:
    with pytest.raises(ValueError, match="unsupported content-encoding 'compress'"):
        stream_decoder("compress")
    with pytest.raises(zlib.error):
        stream_decoder("gzip")(b"not gzip at all")
