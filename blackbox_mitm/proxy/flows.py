"""A flow on the hot path, read and answered cheaply: its headers, its destination, and a replayed answer's Response;
and a body tee made safe for mitmproxy's streaming (``body_stream``).

Each does what a mitmproxy property or constructor does, without the per-call work
that dominated a replayed call's profile (docs/benchmarks.md): ``lower_headers``
instead of ``Headers.items()``, ``destination`` instead of parsing the ``Host``
header twice a call, ``make_response`` instead of ``Response.make``'s type checks.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mitmproxy import http
from mitmproxy.net.http import status_codes

from blackbox_mitm.session.calls import Answer

__all__ = ["body_stream", "destination", "lower_headers", "make_response"]


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


_DESTINATIONS: dict[tuple[Any, ...], tuple[str, str]] = {}
_DESTINATIONS_KEPT = 1024


def destination(request: http.Request) -> tuple[str, str]:
    """``(pretty_host lower-cased, pretty_url)`` of a request, as mitmproxy's properties give them.

    Both parse the ``Host`` header (an IDNA check of the name) on every call, a large share
    of a replayed call's cost; what they depend on besides the path is the same for every
    request of a connection, so the host and the URL without its path are kept per key.
    """
    data = request.data
    if data.method == b"CONNECT":
        return request.pretty_host.lower(), request.pretty_url
    key = (
        data.http_version,
        data.authority,
        data.scheme,
        data.host,
        data.port,
        tuple(value for name, value in data.headers.fields if name.lower() == b"host"),
    )
    path = request.path
    suffix = path if path != "*" else ""
    found = _DESTINATIONS.get(key)
    if found is None:
        url = request.pretty_url
        if not url.endswith(suffix):  # pragma: no cover - pretty_url always ends with the path
            return request.pretty_host.lower(), url
        found = (request.pretty_host.lower(), url[: len(url) - len(suffix)])
        if len(_DESTINATIONS) >= _DESTINATIONS_KEPT:
            _DESTINATIONS.clear()
        _DESTINATIONS[key] = found
    return found[0], found[1] + suffix


# Headers whose presence makes ``Response.make`` re-encode the body or keep its length unset: the slow path.
_ENCODING_HEADERS = frozenset({"content-encoding", "transfer-encoding"})


def make_response(answer: Answer) -> http.Response:
    """The answer as a response: what ``http.Response.make`` builds, built directly.

    ``Response.make`` type-checks every field of the new ``ResponseData`` (mitmproxy's
    ``check_option_type``, in ``MessageData.__post_init__``) and sets the length through
    ``set_content``: together the largest single cost of a replayed call (docs/benchmarks.md).
    The fields are ours and well typed, so the data is made without the checks; an answer
    with a content- or transfer-encoding (the body would be re-encoded) takes ``make``.
    """
    body = answer.body
    if type(body) is not bytes:
        return http.Response.make(answer.status, body, answer.headers)
    fields: list[tuple[bytes, bytes]] = []
    length = str(len(body)).encode()
    has_length = False
    for name, value in answer.headers.items():
        lowered = name.lower()
        if lowered in _ENCODING_HEADERS:
            return http.Response.make(answer.status, body, answer.headers)
        if lowered == "content-length":
            if has_length:
                continue  # make() keeps one content-length: the first one's place
            has_length = True
            fields.append((name.encode("utf-8", "surrogateescape"), length))
            continue
        fields.append((name.encode("utf-8", "surrogateescape"), value.encode("utf-8", "surrogateescape")))
    if not has_length:
        fields.append((b"content-length", length))
    now = time.time()
    data = object.__new__(http.ResponseData)
    vars(data).update(
        http_version=b"HTTP/1.1",
        headers=http.Headers(fields),
        content=body,
        trailers=None,
        timestamp_start=now,
        timestamp_end=now,
        status_code=answer.status,
        reason=status_codes.RESPONSES.get(answer.status, "").encode(),
    )
    response = object.__new__(http.Response)
    response.data = data
    return response


def body_stream(tee: Callable[[bytes], bytes]) -> Callable[[bytes], bytes | list[bytes]]:
    """``tee`` as a ``flow.response.stream``: a body chunk it turns into nothing is sent as nothing.

    mitmproxy sends what a stream callable returns for a body chunk as a chunk of its own, and a chunked
    response's chunk of ``b""`` is its last (``0\\r\\n\\r\\n``): the agent would take the body as ended, and read the
    real end as the next response's status line. A tee returns ``b""`` for a chunk that holds half an event, or a
    gzip member's trailer alone. At the body's end (``b""`` in) mitmproxy already sends nothing for ``b""``.
    """

    def stream(chunk: bytes) -> bytes | list[bytes]:
        out = tee(chunk)
        return out if out or not chunk else []

    return stream
