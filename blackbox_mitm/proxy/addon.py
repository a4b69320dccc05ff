"""The mitmproxy addon: turns flows into plain requests for the session, and answers into flows.

Thin on purpose. Everything it decides comes from ``session.engine.Session``
(and a streamed answer's recording from ``session.stream.StreamCapture``); what
is mitmproxy-specific lives here: options (``blackbox_*``, declared, validated
and turned into a session by ``proxy/options.py``, called from ``load`` and
``configure``), which hosts are intercepted, answering a flow locally, the
offline guard (``proxy/offline.py``, a child addon: in an offline replay no
server connection is ever opened, whatever the client sends), and the end of
the run when the proxy itself stops (``mitmdump -s addon/blackbox_addon.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from mitmproxy import ctx, http

from blackbox_mitm.cassette.trace import now_ms
from blackbox_mitm.codecs import codec_for, error_codec_for, host_matches, stream_content_type
from blackbox_mitm.proxy import options
from blackbox_mitm.proxy.exchanges import URL_KEY, ExchangeTransport, offline_refusal
from blackbox_mitm.proxy.flows import body_stream, destination, lower_headers, make_response
from blackbox_mitm.proxy.hosts import DEFAULT_HOSTS, HostTable, host_table
from blackbox_mitm.proxy.offline import OfflineGuard
from blackbox_mitm.proxy.pacing import StreamPacer
from blackbox_mitm.proxy.websocket import WebSocketTransport, is_upgrade
from blackbox_mitm.session.engine import Answer, Forward, ModelRequest, Session
from blackbox_mitm.session.exchanges import Served
from blackbox_mitm.session.router import RouteRefused, RunRouter, run_from_proxy_authorization
from blackbox_mitm.session.stream import StreamCapture

__all__ = ["DEFAULT_HOSTS", "BlackboxAddon"]

log = logging.getLogger(__name__)

_HOST_KEY = "blackbox.host"
_TICKET_KEY = "blackbox.ticket"
_PACED_KEY = "blackbox.paced"
_STREAM_KEY = "blackbox.stream"
_HOLD_KEY = "blackbox.hold"
_SESSION_KEY = "blackbox.session"


class BlackboxAddon:
    """Record, replay or fork model calls. Built from options (mitmdump) or given a session (CLI)."""

    def __init__(
        self,
        session: Session | None = None,
        *,
        on_done: Callable[[], None] | None = None,
        router: RunRouter | None = None,
    ) -> None:
        self.session = session
        self.router = router  # several runs, each named in a client's proxy credentials
        self._owns_session = session is None and router is None
        self._client_runs: dict[str, str | None] = {}  # client connection id -> the run its CONNECT named
        self._on_done = on_done
        self.hosts: set[str] = set()
        self.host_codecs: dict[str, str] = {}  # hosts named with the codec they speak (codecs.codec_for's ``named``)
        self._hosts_option: tuple[str, ...] = DEFAULT_HOSTS  # blackbox_hosts, as given (its default until configured)
        self._use(host_table(self._hosts_option, base=()))
        self.offline = True
        self.stream_delay_ms = 0
        self._pacer: StreamPacer | None = None
        # Loopback servers of our own that an offline replay may connect to (the pacer, a WebSocket replayer).
        self.local_upstreams: set[tuple[str, int]] = set()
        self._ws = WebSocketTransport()  # model calls over WebSockets (proxy/websocket.py)
        # Its own small addon, a child of this one (mitmproxy's ``addons``): in an offline replay nothing leaves.
        self.guard = OfflineGuard(lambda: self.replaying and self.offline, self.local_upstreams)
        self.addons = [self.guard]
        self._exchanges = ExchangeTransport(self.local_upstreams)  # every other HTTP exchange, kept and served (proxy/exchanges.py)

    def use_hosts(self, specs: Iterable[str]) -> list[str]:
        """Intercept the providers' hosts and ``specs`` (``HOST`` or ``HOST=CODEC``); the hosts, in order.

        The CLI's way in (``proxy_for``, ``router_proxy``): ``specs`` are the project config's and the flags'.
        """
        table = host_table(specs)
        self._use(table)
        return list(table.hosts)

    def _use(self, table: HostTable) -> None:
        """Intercept ``table``'s hosts (the one place ``hosts`` / ``host_codecs`` are set, from ``proxy.hosts``)."""
        self.hosts = set(table.hosts)
        self.host_codecs = dict(table.codecs)

    # -- options ----------------------------------------------------------------------

    def load(self, loader: Any) -> None:
        options.declare(loader)

    def configure(self, updated: set[str]) -> None:
        opts = ctx.options
        options.check(opts, updated)
        if "blackbox_hosts" in updated:
            table = options.hosts_option(opts)
            self._hosts_option = tuple(opts.blackbox_hosts)
            self._use(table)
        if "blackbox_offline" in updated:
            self.offline = bool(opts.blackbox_offline)
        if "blackbox_stream_delay_ms" in updated:
            self.stream_delay_ms = int(opts.blackbox_stream_delay_ms)
        if self._owns_session and updated & options.SESSION_OPTIONS:
            self.session = options.session_from_options(opts, self._hosts_option, self._use)
        if self.session is not None and "connection_strategy" in opts and opts.connection_strategy != "lazy":
            # Never dial an upstream before the request hook decided: replay answers locally.
            opts.update(connection_strategy="lazy")

    @property
    def replaying(self) -> bool:
        """A replay (its plan's mode, or the router's): other hosts are served from the recording or refused."""
        if self.router is not None:
            return self.router.mode == "replay"
        return self.session is not None and self.session.mode == "replay"

    # -- flows --------------------------------------------------------------------------

    def http_connect(self, flow: http.HTTPFlow) -> None:
        """A tunnel's proxy credentials name its run (``HTTPS_PROXY=http://<run>@HOST:PORT``)."""
        if self.router is not None:
            self._client_runs[flow.client_conn.id] = run_from_proxy_authorization(flow.request.headers.get("proxy-authorization"))

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        # Before map_remote rewrites the destination in its request hook.
        flow.metadata[_HOST_KEY], flow.metadata[URL_KEY] = destination(flow.request)

    def _session_of(self, flow: http.HTTPFlow) -> Session | None:
        """The session a flow belongs to: the one run, or the run its client named (None: answered here)."""
        if self.router is None:
            return self.session
        found: Session | None = flow.metadata.get(_SESSION_KEY)
        if found is not None:
            return found
        run = self._client_runs.get(flow.client_conn.id)
        if run is None:
            run = run_from_proxy_authorization(flow.request.headers.get("proxy-authorization"))
        try:
            session = self.router.session_for(run)
        except RouteRefused as exc:
            host = flow.metadata.get(_HOST_KEY) or flow.request.pretty_host.lower()
            err = error_codec_for(flow.request.path, host, self.host_codecs).encode_error(
                f"blackbox proxy: {exc}", status=407 if run is None else 404
            )
            flow.response = http.Response.make(err.status, err.body, err.headers)
            self._note(f"refused {flow.request.method} {host}{flow.request.path}: {exc}")
            return None
        flow.metadata[_SESSION_KEY] = session
        return session

    def request(self, flow: http.HTTPFlow) -> None:
        if (self.session is None and self.router is None) or flow.response or flow.error or not flow.live:
            return
        session = self._session_of(flow)
        if session is None:
            return
        host = flow.metadata.get(_HOST_KEY) or flow.request.pretty_host.lower()
        if not host_matches(host, self.hosts):  # names, and patterns (bedrock-runtime.*.amazonaws.com)
            self._other_host(flow, session, host)
            return
        path = flow.request.path
        upgrade = is_upgrade(flow.request)
        # The one place a flow's codec is chosen (the calls on a model socket are POSTs to its path); the request
        # carries it to the session.
        codec = codec_for("POST" if upgrade else flow.request.method, path, host, self.host_codecs)
        if upgrade and self._ws.upgrade(flow, session, codec, delay_ms=self.stream_delay_ms):
            if self._ws.local_upstream is not None:
                self.local_upstreams.add(self._ws.local_upstream)  # the offline guard lets the replayed-socket server in
            return
        if codec is None or upgrade:  # an upgrade no socket companion takes is not a model call
            self._non_model(flow, host, path)
            return
        try:
            body = flow.request.get_content(strict=True) or b""
        except ValueError as exc:  # a content-encoding that cannot be decoded: answered here, never forwarded
            err = codec.encode_error(f"blackbox: the request body could not be decoded ({exc}); it was not forwarded")
            flow.response = http.Response.make(err.status, err.body, err.headers)
            session.note(f"refused {flow.request.method} {host}{path}: the body could not be decoded")
            return
        req = ModelRequest(
            path=path, headers=lower_headers(flow.request.headers), body=body, received_ms=now_ms(), method=flow.request.method, codec=codec
        )
        action = session.on_request(req)
        if isinstance(action, Answer):
            if action.delay_ms > 0 or (action.stream and self.stream_delay_ms > 0):
                self._pace(flow, action)  # a held answer's end waits its turn in the pacer
            else:
                flow.response = make_response(action)
                if action.hold is not None and not action.hold.now():
                    flow.metadata[_HOLD_KEY] = action.hold  # sent once released: the response hook waits for it
                if action.replayed:
                    flow.is_replay = "response"  # mitmweb marks it as an answer made here
        elif isinstance(action, Forward):
            flow.metadata[_TICKET_KEY] = action.ticket
            if action.body is not None:
                flow.request.content = action.body

    def _other_host(self, flow: http.HTTPFlow, session: Session, host: str) -> None:
        """A request to a host that is not a model API: kept (record), served or refused (offline replay)."""
        if not self.replaying:
            self._exchanges.record(flow, session, model_host=False)
            return
        found = self._exchanges.serve(flow, session)
        if isinstance(found, Served):
            self._note(f"answered from the recording: {flow.request.method} {host}{flow.request.path}")
            return
        if self.offline:
            why = f" ({found})" if isinstance(found, str) else ""
            self._note(f"offline: refused {flow.request.method} {host}{flow.request.path}{why} (replay never contacts other hosts)")
            flow.response = offline_refusal(host, why, self.hosts)

    def _non_model(self, flow: http.HTTPFlow, host: str, path: str) -> None:
        codec = error_codec_for(path, host, self.host_codecs)
        bare = path.split("?", 1)[0].rstrip("/")
        session = self._session_of(flow)
        if self.replaying and session is not None and isinstance(self._exchanges.serve(flow, session), Served):
            self._note(f"answered from the recording: non-model endpoint {flow.request.method} {host}{path}")
            return
        if self.replaying:
            err = codec.encode_error(
                f"blackbox replay: {flow.request.method} {bare} is not a model call and is not in the recording", status=404
            )
            self._note(f"answered 404 to non-model endpoint {flow.request.method} {host}{path}")
            flow.response = http.Response.make(err.status, err.body, err.headers)
        elif session is not None and self._exchanges.record(flow, session, model_host=True):
            self._note(f"passed through non-model endpoint {flow.request.method} {host}{path} (kept as an exchange)")
        else:
            self._note(f"passed through non-model endpoint {flow.request.method} {host}{path} (not recorded)")

    def _pace(self, flow: http.HTTPFlow, answer: Answer) -> None:
        """A replayed stream delivered event by event: mitmproxy streams only what comes from an upstream,
        so the answer is played back by a loopback server (``proxy/pacing.py``) and the flow is sent there."""
        if self._pacer is None:
            self._pacer = StreamPacer(self.stream_delay_ms)
        self._pacer.delay_ms = self.stream_delay_ms
        total = answer.delay_ms if answer.delay_ms > 0 else None  # --pace: as long as the recorded call took
        flow.request.url = self._pacer.register(
            answer.status, answer.headers, answer.body, total_ms=total, stream=answer.stream, hold=answer.hold
        )
        self.local_upstreams.add(("127.0.0.1", self._pacer.port))
        flow.metadata[_PACED_KEY] = True

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        self._exchanges.responseheaders(flow)
        if flow.metadata.get(_PACED_KEY) and flow.response is not None:
            flow.response.stream = True  # pass each paced event on as it comes
            flow.is_replay = "response"  # made here from the recording (mitmweb marks it)
            return
        ticket = flow.metadata.get(_TICKET_KEY)
        session = self._session_of(flow) if ticket is not None else None
        if ticket is None or flow.response is None or session is None:
            return
        ctype = flow.response.headers.get("content-type", "").lower()
        streamed = ctype.startswith(("text/event-stream", stream_content_type(ticket.codec).split(";")[0]))
        if flow.response.status_code >= 400 or not streamed:
            return
        capture = StreamCapture(session, ticket, flow.response.headers.get("content-encoding", ""))
        flow.metadata[_STREAM_KEY] = capture
        if capture.decodes:  # the agent is sent the decoded events
            flow.response.headers.pop("content-encoding", None)
            flow.response.headers.pop("content-length", None)
        flow.response.stream = body_stream(capture.tee)

    async def response(self, flow: http.HTTPFlow) -> None:
        self._exchanges.response(flow)
        hold = flow.metadata.pop(_HOLD_KEY, None)
        if hold is not None:  # an answer made here for a call that overlapped others: in the recorded completion order
            await hold.wait_async()
            return
        ticket = flow.metadata.get(_TICKET_KEY)
        session = self._session_of(flow) if ticket is not None else None
        if ticket is None or session is None or flow.response is None:
            return
        if _STREAM_KEY in flow.metadata:
            return  # handled by the tee
        status = flow.response.status_code
        try:
            body = flow.response.get_content(strict=True)
        except ValueError:
            body = flow.response.raw_content if status >= 400 else None
            if status < 400:
                session.note("an answer's content-encoding could not be decoded; it was not recorded")
                err = ticket.codec.encode_error("blackbox: the provider's answer could not be decoded, so it was not recorded", status=502)
                session.call_done()
                flow.response = http.Response.make(err.status, err.body, err.headers)
                return
        # Recorded here on the loop (decode, steps, journal line); then the wait for the fsync. The run's only call
        # in flight waits right here, as nothing else waits on the loop, and a hop to a worker thread costs more than
        # the fsync itself (benchmarks/record_slice.py). Overlapping calls await it instead, so that no fsync holds
        # up the others' traffic: they share one, run on a worker thread (a hop per fsync, not per call).
        settling = session.take_response(ticket, status, body, response_ms=now_ms())
        if self.router is None and session.in_flight <= 1:
            answer = settling.settle()
        else:
            answer = await settling.settle_async()
        if answer is not None:
            flow.response = make_response(answer)

    def error(self, flow: http.HTTPFlow) -> None:
        self._exchanges.error(flow)
        ticket = flow.metadata.get(_TICKET_KEY)
        session = self._session_of(flow) if ticket is not None else None
        if ticket is None or session is None:
            return
        capture = flow.metadata.get(_STREAM_KEY)
        if capture is not None and capture.done:
            return
        message = flow.error.msg if flow.error else "unknown error"
        if capture is None:  # no streamed body began: the call failed before (or instead of) its response
            session.on_call_failed(ticket, message, streamed=False)
            return
        capture.done = True
        session.on_call_failed(ticket, f"the connection failed: {message}")

    async def websocket_message(self, flow: http.HTTPFlow) -> None:
        session = flow.metadata.get(_SESSION_KEY) or self.session
        if session is not None:
            await self._ws.message(flow, session)

    def websocket_end(self, flow: http.HTTPFlow) -> None:
        session = flow.metadata.get(_SESSION_KEY) or self.session
        if session is not None:
            self._ws.end(flow, session)

    def done(self) -> None:
        self._ws.stop()
        self._exchanges.stop()
        if self._pacer is not None:
            self._pacer.stop()
        if self._on_done is not None:
            self._on_done()
        elif self._owns_session and self.session is not None:
            from blackbox_mitm.session.build import finish_proxy_session

            finish_proxy_session(self.session, report=ctx.options.blackbox_report or None)
        elif self.router is not None:
            for run, report in self.router.finish_all().items():
                log.warning("blackbox: run %s: %s", run, report.get("verdict") or report.get("cassette") or report.get("error"))

    def _note(self, line: str) -> None:
        log.info("blackbox: %s", line)
