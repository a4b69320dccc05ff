"""A flow's headers as the session reads them: one dict, names lower-cased, repeated fields joined."""

from __future__ import annotations

from mitmproxy import http

__all__ = ["lower_headers"]


def lower_headers(headers: http.Headers) -> dict[str, str]:
    """Header names lower-cased, repeated fields joined — one pass over the raw fields.

    (``Headers.items()`` looks every name up again: quadratic in the header count,
    a measurable share of a replayed call; see docs/benchmarks.md.)
    """
    out: dict[str, str] = {}
    for raw_key, raw_value in headers.fields:
        key = raw_key.decode("utf-8", "surrogateescape").lower()
        value = raw_value.decode("utf-8", "surrogateescape")
        out[key] = f"{out[key]}, {value}" if key in out else value
    return out
