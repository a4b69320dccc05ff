"""Our own records beside the steps, as types: the exchanges and media files, their seals and listing rows.

The step payloads are ``cassette/payloads.py``'s; these are the other JSON
documents Blackbox writes and reads: ``RUN.exchanges.json``
(``cassette/exchanges.py``: ``ExchangesDocument`` of ``Exchange``s whose bodies
are ``StoredBody``s), ``RUN.media.json`` (``cassette/media.py``:
``MediaDocument`` of ``MediaEntry``s and ``MediaNotKept``s), the seal a terminal
event carries for each (``FileSeal``), and the rows ``blackbox show`` and
``blackbox view`` list them as (``ExchangeRow``, ``MediaRow``). Like the
payloads they are ``TypedDict``s: plain JSON data whose keys the types name.

``JSONObject`` is the one name for a JSON object whose shape is not ours (a
provider's wire body, a user's tool arguments, a JSON value read from a file
before it is checked): code that takes one says so, and says nothing more.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

__all__ = [
    "Exchange",
    "ExchangeRequest",
    "ExchangeResponse",
    "ExchangeRow",
    "ExchangesDocument",
    "FileSeal",
    "JSONObject",
    "MediaDocument",
    "MediaEntry",
    "MediaNotKept",
    "MediaRow",
    "StoredBody",
]

#: Arbitrary JSON whose shape is not ours: a provider's wire body, a user's tool arguments, unchecked file content.
JSONObject = dict[str, Any]


class FileSeal(TypedDict):
    """A terminal event's ``exchanges`` or ``media``: the file beside the cassette, how many items, its document's SHA-256."""

    file: str
    count: int
    sha256: str


# --- RUN.exchanges.json --------------------------------------------------------------------


class StoredBody(TypedDict):
    """A body stored once under its SHA-256: its text (``utf-8``) or its bytes (``base64``)."""

    encoding: str
    data: str


class ExchangeRequest(TypedDict):
    bytes: int  # the body's size as sent
    digest: str  # the SHA-256 of the body as stored (secrets scrubbed, redaction applied)
    body: NotRequired[str]  # a small body's digest in ``bodies``


class ExchangeResponse(TypedDict):
    status: int
    headers: dict[str, str]  # only the kept headers (cassette/exchanges.py KEPT_HEADERS)
    bytes: int
    body: NotRequired[str]  # its digest in ``bodies``; absent for an empty or a not-kept body
    notKept: NotRequired[str]  # why the body was not kept
    incomplete: NotRequired[bool]  # the stream was still open when the run ended


class Exchange(TypedDict):
    index: int
    timestamp: int  # ms since the epoch, when the request was sent
    durationMs: int
    method: str
    url: str  # credential query values replaced
    host: str
    path: str
    request: ExchangeRequest
    response: ExchangeResponse


class ExchangesDocument(TypedDict):
    kind: str  # "blackbox-exchanges"
    version: int
    run: str
    exchanges: list[Exchange]
    bodies: dict[str, StoredBody]
    notKept: list[str]


class ExchangeRow(TypedDict):
    """One exchange as ``blackbox show`` and ``blackbox view`` list it."""

    index: int
    method: str
    host: str
    path: str
    status: int
    bytes: int
    offsetMs: int | float  # since the run started
    durationMs: int
    notKept: str | None


# --- RUN.media.json ------------------------------------------------------------------------


class MediaEntry(TypedDict):
    """One stored item (keyed by its SHA-256 in ``MediaDocument.media``)."""

    mediaType: str
    size: int
    data: str  # base64


class MediaNotKept(TypedDict):
    sha256: str
    mediaType: str | None
    size: int | None
    why: str


class MediaDocument(TypedDict):
    kind: str  # "blackbox-media"
    version: int
    run: str
    media: dict[str, MediaEntry]
    notKept: list[MediaNotKept]


class MediaRow(TypedDict):
    """One item as ``blackbox show`` and ``blackbox view`` list it: stored (``kept``) or not, and why."""

    sha256: str
    mediaType: str | None
    size: int | None
    kept: bool
    why: NotRequired[str]  # an item not kept: why
    src: NotRequired[str]  # ``blackbox view``: a small image's bytes as a data: URL, shown on the page
