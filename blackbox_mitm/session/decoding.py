"""Incremental Content-Encoding decoders for streamed responses.

mitmproxy hands a ``flow.response.stream`` callable the chunks after HTTP
de-chunking but before content decoding, so a gzip'd event stream arrives as
gzip. Each decoder here takes a chunk and returns the plain bytes decoded so far.
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable

__all__ = ["stream_decoder"]


def stream_decoder(content_encoding: str) -> Callable[[bytes], bytes]:
    encodings = [e.strip().lower() for e in content_encoding.split(",") if e.strip() and e.strip().lower() != "identity"]
    decoders = [_one(e) for e in reversed(encodings)]

    def decode(chunk: bytes) -> bytes:
        for d in decoders:
            chunk = d(chunk)
        return chunk

    return decode


def _one(encoding: str) -> Callable[[bytes], bytes]:
    if encoding in ("gzip", "x-gzip", "deflate"):
        # wbits 47: accept a gzip or a zlib header. Raw deflate (no header) is retried below.
        obj = zlib.decompressobj(47)
        raw: list[zlib._Decompress] = []

        def gz(chunk: bytes) -> bytes:
            if raw:
                return raw[0].decompress(chunk)
            try:
                return obj.decompress(chunk)
            except zlib.error:
                if encoding != "deflate":
                    raise
                raw.append(zlib.decompressobj(-15))
                return raw[0].decompress(chunk)

        return gz
    if encoding == "br":
        import brotli

        br = brotli.Decompressor()
        return lambda chunk: br.process(chunk)
    if encoding == "zstd":
        try:
            zstd = importlib.import_module("compression.zstd")  # Python 3.14
        except ImportError:
            zstd = importlib.import_module("backports.zstd")  # a mitmproxy dependency

        zd = zstd.ZstdDecompressor()
        return lambda chunk: zd.decompress(chunk)
    raise ValueError(f"unsupported content-encoding {encoding!r}")
