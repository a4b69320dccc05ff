"""What passes between the proxy and the session for one model call: the request, and what to do with it.

``ModelRequest`` is a call as the proxy read it; the session answers it with an
``Answer`` (made here) or a ``Forward`` (send it upstream), whose ``Ticket``
comes back with the provider's response. Plain data; ``session.engine``
re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from blackbox_mitm.cassette.trace import now_ms
from blackbox_mitm.codecs.base import Codec, DecodedRequest
from blackbox_mitm.session.release import Hold

__all__ = ["Answer", "Forward", "ModelRequest", "Ticket"]


@dataclass(slots=True)
class ModelRequest:
    path: str  # with its query string
    headers: dict[str, str]  # lower-case names
    body: bytes
    received_ms: int = field(default_factory=now_ms)
    method: str = "POST"
    codec: Codec | None = None  # the codec the proxy chose for it (None: the registry chooses here, by method and path)

    @property
    def query(self) -> str:
        return self.path.partition("?")[2].split("#", 1)[0]

    @property
    def bare_path(self) -> str:
        return self.path.partition("?")[0].split("#", 1)[0]


@dataclass(slots=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    stream: bool = False  # an SSE body
    replayed: bool = False  # an answer made from the recording or a script (not an error)
    delay_ms: float = 0.0  # --pace: deliver it over this long (a stream's events spread over it)
    hold: Hold | None = None  # a call that overlapped others: released in the recorded completion order (session/release.py)


@dataclass(slots=True)
class Ticket:
    """What ``on_response`` needs to record a forwarded call."""

    codec: Codec
    request: DecodedRequest
    received_ms: int
    secrets: set[str]


@dataclass(slots=True)
class Forward:
    ticket: Ticket
    body: bytes | None = None  # the rewritten request body, when a fork edits what the model sees
