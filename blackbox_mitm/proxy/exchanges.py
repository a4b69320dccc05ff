"""The mitmproxy side of the run's other HTTP(S) exchanges (``session/exchanges.py`` decides).

Recording: a request that is not a model call is marked in ``request``; its
response is streamed through a tee that keeps the body up to the cap (a 200 MB
download passes through whole, and only its size is kept), and ``response``
(or ``error``, for a stream still open when the run ends) hands it to the
session's ``ExchangeBook``. Replaying: the request is answered from the
session's ``ExchangeServer``, or refused offline, as before.
"""

from __future__ import annotations

import logging
from typing import Any

from mitmproxy import http

from blackbox_mitm.cassette.trace import now_ms
from blackbox_mitm.proxy.sse_hold import SseHold
from blackbox_mitm.session.engine import Session
from blackbox_mitm.session.exchanges import ExchangeBook, Served
from blackbox_mitm.session.recorder import secrets_from_request

__all__ = ["URL_KEY", "ExchangeTransport", "offline_refusal"]

log = logging.getLogger(__name__)

URL_KEY = "blackbox.url"  # the URL the client asked for, before map_remote
_KEEP_KEY = "blackbox.exchange"
_HELD_KEY = "blackbox.held"


class _Tee:
    """Passes a response body on chunk by chunk, keeping it up to ``limit`` bytes (then only counting)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: list[bytes] = []
        self.size = 0
        self.over = False

    def __call__(self, chunk: bytes) -> bytes:
        self.size += len(chunk)
        if not self.over:
            if self.size > self.limit:
                self.over = True
                self.chunks.clear()
            else:
                self.chunks.append(chunk)
        return chunk

    def body(self) -> bytes | None:
        return None if self.over else b"".join(self.chunks)


def _request_body(flow: http.HTTPFlow) -> bytes:
    """The request body decoded from its content-encoding (the raw bytes when that fails): digested the same way at replay."""
    try:
        return flow.request.get_content(strict=False) or b""
    except ValueError:
        return flow.request.raw_content or b""


def _headers(flow_headers: http.Headers) -> dict[str, str]:
    return {k.lower(): v for k, v in flow_headers.items(multi=False)}


class ExchangeTransport:
    """Keeps and serves the flows that are not model calls.

    ``local_upstreams``: the addon's set of loopback servers an offline replay may reach (the SSE hold joins it).
    """

    def __init__(self, local_upstreams: set[tuple[str, int]]) -> None:
        self.local_upstreams = local_upstreams
        self._hold: SseHold | None = None

    def record(self, flow: http.HTTPFlow, session: Session, *, model_host: bool) -> bool:
        """Mark a request to be kept (True) when the session's policy wants it."""
        book = _book(session)
        if book is None or not book.wants(model_host=model_host):
            return False
        flow.metadata[_KEEP_KEY] = {"started": now_ms(), "request": _request_body(flow), "book": book}
        return True

    def serve(self, flow: http.HTTPFlow, session: Session) -> Served | str | None:
        """The recorded answer made into the flow's response, or why there is none (None: no exchanges to serve)."""
        server = session.exchange_server
        if server is None:
            return None
        url = flow.metadata.get(URL_KEY) or flow.request.pretty_url
        secrets = secrets_from_request(_headers(flow.request.headers), url.partition("?")[2])
        body = _request_body(flow)
        found = server.answer(flow.request.method, url, body, secrets=secrets)
        if isinstance(found, Served) and found.held:
            self._held(flow, found, body)
        elif isinstance(found, Served):
            if self._hold is not None:
                self._hold.release(body)  # an MCP HTTP+SSE request answered: its response event may go
            response = http.Response.make(found.status, b"", found.headers)
            response.raw_content = found.body  # as recorded: still in its content-encoding, if it had one
            response.headers["content-length"] = str(len(found.body))
            flow.response = response
            flow.is_replay = "response"
        return found

    def _held(self, flow: http.HTTPFlow, found: Served, body: bytes) -> None:
        """A stream that was open when the recording ended: played back from a loopback server, event by event."""
        if self._hold is None:
            self._hold = SseHold()
            self.local_upstreams.add(("127.0.0.1", self._hold.port))
        self._hold.release(body)  # a POST answered by its own stream: the events answering it may go
        flow.request.url = self._hold.register(found.status, found.headers, found.body)
        flow.metadata[_HELD_KEY] = True
        flow.is_replay = "response"

    def stop(self) -> None:
        if self._hold is not None:
            self._hold.stop()
            self._hold = None

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        if flow.metadata.get(_HELD_KEY) and flow.response is not None:
            flow.response.stream = True  # each event as it is released
            return
        kept = flow.metadata.get(_KEEP_KEY)
        if kept is None or flow.response is None:
            return
        book: ExchangeBook = kept["book"]
        tee = _Tee(book.exchange_max_bytes)
        kept["tee"] = tee
        flow.response.stream = tee

    def response(self, flow: http.HTTPFlow) -> None:
        self._keep(flow, incomplete=False)

    def error(self, flow: http.HTTPFlow) -> None:
        self._keep(flow, incomplete=True)

    def _keep(self, flow: http.HTTPFlow, *, incomplete: bool) -> None:
        kept: dict[str, Any] | None = flow.metadata.pop(_KEEP_KEY, None)
        if kept is None or flow.response is None:
            return
        book: ExchangeBook = kept["book"]
        tee: _Tee | None = kept.get("tee")
        if tee is None:
            body: bytes | None = flow.response.raw_content or b""
            size = len(body or b"")
        else:
            body, size = tee.body(), tee.size
        headers = _headers(flow.response.headers)
        url = flow.metadata.get(URL_KEY) or flow.request.pretty_url
        query = url.partition("?")[2]
        try:
            entry = book.add(
                method=flow.request.method,
                url=url,
                request_body=kept["request"],
                status=flow.response.status_code,
                headers=headers,
                body=body,
                started_ms=kept["started"],
                body_size=size,
                secrets=secrets_from_request(_headers(flow.request.headers), query),
                incomplete=incomplete,
            )
        except Exception:  # never break the agent's traffic over what is kept
            log.exception("blackbox: an exchange could not be kept")
            book.note(f"{flow.request.method} {url}: could not be kept (an internal error; see the log)")
            return
        if entry is None:  # a credential endpoint: the book's note says so
            log.info("blackbox: not kept (a credential endpoint): %s %s", flow.request.method, flow.request.pretty_host)
            return
        log.info(
            "blackbox: kept exchange %d: %s %s%s -> %s",
            entry["index"],
            entry["method"],
            entry["host"],
            entry["path"],
            entry["response"]["status"],
        )


def offline_refusal(host: str, why: str, hosts: set[str]) -> http.Response:
    """The 502 an offline replay answers a request it does not hold with (``why``: " (the reason)" or "")."""
    return http.Response.make(
        502,
        f"blackbox replay is offline: {host} was not contacted{why}. Only model calls to {', '.join(sorted(hosts))} and "
        "the exchanges the recording holds are answered (from the cassette). To let other traffic through: "
        "blackbox replay --allow-network, or blackbox_offline=false.\n",
        {"content-type": "text/plain; charset=utf-8", "x-should-retry": "false"},
    )


def _book(session: Session) -> ExchangeBook | None:
    recorder = session.recorder
    return None if recorder is None else recorder.exchanges
