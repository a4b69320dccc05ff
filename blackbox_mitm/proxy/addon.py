"""The mitmproxy addon: turns flows into plain requests for the session, and answers into flows.

Thin on purpose. Everything it decides comes from ``session.engine.Session``;
what is mitmproxy-specific lives here: options (``blackbox_*``, declared in
``load`` and validated in ``configure``), which hosts are intercepted, answering
a flow locally, the streaming tee for server-sent events, and the end of the run
when the proxy itself stops (``mitmdump -s addon/blackbox_addon.py``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mitmproxy import ctx, exceptions, http

from blackbox_mitm.cassette.trace import now_ms
from blackbox_mitm.codecs import codec_for_path, codec_named, provider_for_path
from blackbox_mitm.codecs.base import SseEvent
from blackbox_mitm.codecs.refusals import row
from blackbox_mitm.codecs.sse import SseParser
from blackbox_mitm.errors import BlackboxError, BlackboxUnsupportedError
from blackbox_mitm.proxy.decoding import stream_decoder
from blackbox_mitm.proxy.pacing import StreamPacer
from blackbox_mitm.session.engine import Answer, Forward, ModelRequest, Session, Ticket

__all__ = ["DEFAULT_HOSTS", "BlackboxAddon"]

log = logging.getLogger("blackbox")

DEFAULT_HOSTS = ("api.openai.com", "api.anthropic.com")
MODES = ("record", "replay")
MATCH_MODES = ("strict", "sequence")
_HOST_KEY = "blackbox.host"
_TICKET_KEY = "blackbox.ticket"
_PACED_KEY = "blackbox.paced"
_STREAM_KEY = "blackbox.stream"
_PROVIDER_BY_HOST = {"api.openai.com": "openai", "api.anthropic.com": "anthropic"}


@dataclass
class _StreamState:
    ticket: Ticket
    events: list[SseEvent] = field(default_factory=list)
    done: bool = False


class BlackboxAddon:
    """Record, replay or fork model calls. Built from options (mitmdump) or given a session (CLI)."""

    def __init__(self, session: Session | None = None, *, replaying: bool | None = None, on_done: Callable[[], None] | None = None) -> None:
        self.session = session
        self._owns_session = session is None
        self._replaying = bool(replaying)
        self._on_done = on_done
        self.hosts: set[str] = set(DEFAULT_HOSTS)
        self.offline = True
        self.stream_delay_ms = 0
        self._pacer: StreamPacer | None = None

    # -- options ----------------------------------------------------------------------

    def load(self, loader: Any) -> None:
        loader.add_option("blackbox_mode", str, "", "Blackbox mode: record | replay (empty: the addon is inactive).")
        loader.add_option("blackbox_cassette", str, "", "The cassette file (trace format v2) to write or replay.")
        loader.add_option("blackbox_overwrite", bool, False, "Record over an existing cassette.")
        loader.add_option("blackbox_hosts", Sequence[str], list(DEFAULT_HOSTS), "Provider hosts whose model calls are recorded/replayed.")
        loader.add_option("blackbox_match", str, "strict", "Replay matching: strict | sequence.")
        loader.add_option(
            "blackbox_offline", bool, True, "Replay: answer every other host locally with an error; nothing leaves the machine."
        )
        loader.add_option("blackbox_report", str, "", "Replay: write the end-of-run status as JSON to this file.")
        loader.add_option("blackbox_stream_delay_ms", int, 0, "Replay: pause between streamed events (0: as fast as possible).")

    def configure(self, updated: set[str]) -> None:
        opts = ctx.options
        if "blackbox_mode" in updated and opts.blackbox_mode not in ("", *MODES):
            raise exceptions.OptionsError(f"blackbox_mode must be one of {', '.join(MODES)}, not {opts.blackbox_mode!r}")
        if "blackbox_match" in updated and opts.blackbox_match not in MATCH_MODES:
            raise exceptions.OptionsError(f"blackbox_match must be strict or sequence, not {opts.blackbox_match!r}")
        if "blackbox_stream_delay_ms" in updated and opts.blackbox_stream_delay_ms < 0:
            raise exceptions.OptionsError("blackbox_stream_delay_ms must be 0 or more")
        if "blackbox_hosts" in updated:
            hosts = {h.strip().lower() for h in opts.blackbox_hosts if h.strip()}
            if not hosts:
                raise exceptions.OptionsError("blackbox_hosts must name at least one provider host")
            self.hosts = hosts
        if "blackbox_offline" in updated:
            self.offline = bool(opts.blackbox_offline)
        if "blackbox_stream_delay_ms" in updated:
            self.stream_delay_ms = int(opts.blackbox_stream_delay_ms)
        if self._owns_session and updated & {"blackbox_mode", "blackbox_cassette", "blackbox_match", "blackbox_overwrite"}:
            self._build_session_from_options()
        if self.session is not None and "connection_strategy" in opts and opts.connection_strategy != "lazy":
            # Never dial an upstream before the request hook decided: replay answers locally.
            opts.update(connection_strategy="lazy")

    def _build_session_from_options(self) -> None:
        from blackbox_mitm.session.build import record_session, replay_session

        opts = ctx.options
        if not opts.blackbox_mode:
            self.session = None
            return
        if not opts.blackbox_cassette:
            raise exceptions.OptionsError("blackbox_cassette must name the cassette file (set blackbox_cassette=RUN.json)")
        try:
            if opts.blackbox_mode == "record":
                self.session = record_session(opts.blackbox_cassette, overwrite=opts.blackbox_overwrite)
                self._replaying = False
            else:
                self.session = replay_session(opts.blackbox_cassette, match=opts.blackbox_match)
                self._replaying = True
                if "upstream_cert" in opts and opts.upstream_cert:
                    opts.update(upstream_cert=False)
        except BlackboxError as exc:
            raise exceptions.OptionsError(str(exc)) from exc
        log.info("blackbox: %s %s", opts.blackbox_mode, opts.blackbox_cassette)

    # -- flows --------------------------------------------------------------------------

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        # Before map_remote rewrites the destination in its request hook.
        flow.metadata[_HOST_KEY] = flow.request.pretty_host.lower()

    def request(self, flow: http.HTTPFlow) -> None:
        if self.session is None or flow.response or flow.error or not flow.live:
            return
        host = flow.metadata.get(_HOST_KEY) or flow.request.pretty_host.lower()
        if host not in self.hosts:
            if self._replaying and self.offline:
                self._note(f"offline: refused {flow.request.method} {host}{flow.request.path} (replay never contacts other hosts)")
                flow.response = http.Response.make(
                    502,
                    f"blackbox replay is offline: {host} was not contacted. Only model calls to {', '.join(sorted(self.hosts))} are "
                    "answered (from the cassette). To let other traffic through: blackbox replay --allow-network, or blackbox_offline=false.\n",
                    {"content-type": "text/plain; charset=utf-8", "x-should-retry": "false"},
                )
            return
        path = flow.request.path
        codec = codec_for_path(path) if flow.request.method == "POST" else None
        if codec is None:
            self._non_model(flow, host, path)
            return
        req = ModelRequest(
            path=path,
            headers=_lower_headers(flow.request.headers),
            body=flow.request.get_content(strict=False) or b"",
            received_ms=now_ms(),
        )
        action = self.session.on_request(req)
        if isinstance(action, Answer):
            if action.stream and self.stream_delay_ms > 0:
                self._pace(flow, action)
            else:
                flow.response = _make_response(action)
        elif isinstance(action, Forward):
            flow.metadata[_TICKET_KEY] = action.ticket
            if action.body is not None:
                flow.request.content = action.body

    def _non_model(self, flow: http.HTTPFlow, host: str, path: str) -> None:
        provider = provider_for_path(path) or _PROVIDER_BY_HOST.get(host) or "openai"
        bare = path.split("?", 1)[0].rstrip("/")
        if bare.endswith("/responses"):
            r = row("openai.responses_api")
            err = codec_named("openai").encode_error(str(BlackboxUnsupportedError(bare, r.reason)))
            self._note(f"refused {flow.request.method} {host}{path}: {r.reason}")
            flow.response = http.Response.make(err.status, err.body, err.headers)
            return
        if self._replaying:
            err = codec_named(provider).encode_error(
                f"blackbox replay: {flow.request.method} {bare} is not a model call and is not in the recording", status=404
            )
            self._note(f"answered 404 to non-model endpoint {flow.request.method} {host}{path}")
            flow.response = http.Response.make(err.status, err.body, err.headers)
        else:
            self._note(f"passed through non-model endpoint {flow.request.method} {host}{path} (not recorded)")

    def _pace(self, flow: http.HTTPFlow, answer: Answer) -> None:
        """A replayed stream delivered event by event: mitmproxy streams only what comes from an upstream,
        so the answer is played back by a loopback server (``proxy/pacing.py``) and the flow is sent there."""
        if self._pacer is None:
            self._pacer = StreamPacer(self.stream_delay_ms)
        self._pacer.delay_ms = self.stream_delay_ms
        flow.request.url = self._pacer.register(answer.status, answer.headers, answer.body)
        flow.metadata[_PACED_KEY] = True

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        if flow.metadata.get(_PACED_KEY) and flow.response is not None:
            flow.response.stream = True  # pass each paced event on as it comes
            return
        ticket = flow.metadata.get(_TICKET_KEY)
        if ticket is None or flow.response is None or self.session is None:
            return
        ctype = flow.response.headers.get("content-type", "")
        if flow.response.status_code >= 400 or not ctype.lower().startswith("text/event-stream"):
            return
        state = _StreamState(ticket)
        flow.metadata[_STREAM_KEY] = state
        decode = stream_decoder(flow.response.headers.get("content-encoding", ""))
        parser = SseParser()
        session = self.session

        def tee(chunk: bytes) -> bytes:
            if state.done:
                return chunk
            if chunk == b"":
                state.done = True
                session.on_call_failed(ticket, "the stream ended before its final event")
                return chunk
            try:
                new = parser.feed(decode(chunk))
            except Exception as exc:  # a corrupt encoding: the call is not recordable
                state.done = True
                session.on_call_failed(ticket, f"could not decode the stream ({exc})")
                return chunk
            state.events.extend(new)
            if any(ticket.codec.is_stream_end(ev) for ev in new):
                state.done = True
                # Recorded (fsynced) before the final event reaches the agent.
                self._finish_stream(session, state)
            return chunk

        flow.response.stream = tee

    def _finish_stream(self, session: Session, state: _StreamState) -> None:
        ticket = state.ticket
        try:
            body = ticket.codec.aggregate_stream(state.events)
        except BlackboxError as exc:
            session.on_call_failed(ticket, str(exc))
            return
        try:
            answer = session.on_response(ticket, 200, body)
        except Exception as exc:  # never let it escape into mitmproxy's stream handling (on_response has ended the call)
            reason = f"a streamed answer could not be recorded: {type(exc).__name__}: {exc}"
            log.warning("blackbox: %s", reason)
            session.notes.append(reason)
            if session.recorder is not None:
                session.recorder.note_unrecordable(reason)  # the agent has it, the cassette does not
            return
        if answer is not None and session.recorder is not None:
            # Already streamed to the agent: it cannot be refused any more, so the run is marked.
            session.recorder.note_unrecordable(answer.body.decode("utf-8", "replace")[:300])

    async def response(self, flow: http.HTTPFlow) -> None:
        ticket = flow.metadata.get(_TICKET_KEY)
        if ticket is None or self.session is None or flow.response is None:
            return
        if _STREAM_KEY in flow.metadata:
            return  # handled by the tee
        status = flow.response.status_code
        body = flow.response.get_content(strict=False)
        answer = await asyncio.to_thread(self.session.on_response, ticket, status, body, response_ms=now_ms())
        if answer is not None:
            flow.response = _make_response(answer)

    def error(self, flow: http.HTTPFlow) -> None:
        ticket = flow.metadata.get(_TICKET_KEY)
        if ticket is None or self.session is None:
            return
        state = flow.metadata.get(_STREAM_KEY)
        if state is not None and state.done:
            return
        message = flow.error.msg if flow.error else "unknown error"
        if state is None:  # no streamed body began: the call failed before (or instead of) its response
            self.session.on_call_failed(ticket, message, streamed=False)
            return
        state.done = True
        self.session.on_call_failed(ticket, f"the connection failed: {message}")

    def done(self) -> None:
        if self._pacer is not None:
            self._pacer.stop()
        if self._on_done is not None:
            self._on_done()
        elif self._owns_session and self.session is not None:
            from blackbox_mitm.session.build import finish_proxy_session

            finish_proxy_session(self.session, report=ctx.options.blackbox_report or None)

    def _note(self, line: str) -> None:
        log.info("blackbox: %s", line)


def _lower_headers(headers: http.Headers) -> dict[str, str]:
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


def _make_response(answer: Answer) -> http.Response:
    return http.Response.make(answer.status, answer.body, answer.headers)
