"""One run through the proxy, in plain Python: what to do with each model call.

The mitmproxy addon turns a flow into a ``ModelRequest`` and asks the session.
The answer is either an ``Answer`` (a response made here: a replayed call, a
refusal, a divergence) or a ``Forward`` (send it upstream, then hand the
response to ``on_response``). The same engine serves every mode:

* record — nothing to replay; every call goes upstream and is recorded;
* replay — every call is answered from the cassette; past its end, refused;
* fork   — a prefix is answered from the parent cassette (strictly matched),
  with an edit at the cut; after the cut calls go upstream (``--live``) or to a
  script of answers, and the child run is recorded.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import orjson

from blackbox_mitm.cassette.trace import now_ms
from blackbox_mitm.codecs import codec_for_path
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.errors import BlackboxError, BlackboxUnsupportedError
from blackbox_mitm.matcher import Divergence, Exhausted, RecordedCalls, Served
from blackbox_mitm.session.recorder import RunRecorder, SecretLeak, secrets_from_headers

__all__ = ["Answer", "Forward", "ModelRequest", "Session", "Ticket"]

log = logging.getLogger("blackbox")


@dataclass(slots=True)
class ModelRequest:
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    received_ms: int = field(default_factory=now_ms)


@dataclass(slots=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    stream: bool = False  # an SSE body


@dataclass(slots=True)
class Ticket:
    """What ``on_response`` needs to record a forwarded call."""

    codec: ModuleType
    request: DecodedRequest
    received_ms: int
    secrets: set[str]


@dataclass(slots=True)
class Forward:
    ticket: Ticket
    body: bytes | None = None  # the rewritten request body, when a fork edits what the model sees


ScriptSource = Callable[[], dict[str, Any]]


class Session:
    """The decisions of one run. Thread-safe: concurrent flows may call it."""

    def __init__(
        self,
        *,
        run_id: str,
        recorder: RunRecorder | None = None,
        replay: RecordedCalls | None = None,
        match: str = "strict",
        tail: str = "refuse",  # "refuse" | "upstream" | "script"
        script: ScriptSource | None = None,
        ids: CallIds | None = None,
        response_edit: tuple[int, dict[str, Any]] | None = None,
        tool_result_edit: tuple[str, str] | None = None,  # (call-N, the text the model sees)
        cassette_path: str | os.PathLike[str] | None = None,
        cut: int | None = None,
    ) -> None:
        if tail not in ("refuse", "upstream", "script"):
            raise ValueError(f"unknown tail {tail!r}")
        if tail == "script" and script is None:
            raise ValueError("a script tail needs a script")
        self.run_id = run_id
        self.cassette_path = cassette_path
        self.cut = cut
        self.recorder = recorder
        self.replay = replay
        self.match_mode = match
        self.tail = tail
        self.script = script
        self.ids = ids or CallIds()
        self.response_edit = response_edit
        self.tool_result_edit = tool_result_edit
        self.in_flight = 0
        self.forwarded_calls = 0
        self.scripted_calls = 0
        self.refused: list[str] = []
        self.notes: list[str] = []
        self.diverged_in_prefix = False
        self._lock = threading.Lock()
        # New tool calls never reuse a call-N the run already holds.
        for call in replay.calls if replay is not None else ():
            self.ids.register_calls(call.output)
        for step in recorder.trace.steps if recorder is not None else ():
            if step.type == "model_output":
                self.ids.register_calls(step.payload)

    # -- requests -----------------------------------------------------------------

    def on_request(self, req: ModelRequest) -> Answer | Forward:
        codec = codec_for_path(req.path)
        if codec is None:  # pragma: no cover - the addon only sends model paths
            raise ValueError(f"not a model path: {req.path}")
        body = req.body
        if self.tool_result_edit is not None:
            body = self._rewrite_tool_result(codec, body)
        try:
            decoded = codec.decode_request(body, self.ids)
        except BlackboxUnsupportedError as exc:
            self._note_refusal(str(exc))
            return _error(codec, str(exc))
        except BlackboxError as exc:
            self._note_refusal(str(exc))
            return _error(codec, f"blackbox: {exc}")

        if self.replay is not None:
            result = self.replay.match(decoded.model_input, mode=self._mode_now())
            if isinstance(result, Served):
                call = result.call
                output = dict(call.output)
                if self.response_edit is not None and call.output_step == self.response_edit[0]:
                    output = self.response_edit[1]  # already in the child, at the cut
                elif self.cut is not None and call.output_step > self.cut and self.recorder is not None:
                    # Past the cut the agent has seen the edit: recorded answers play on in order, into the child.
                    try:
                        self.recorder.record_call(decoded, output, request_ms=req.received_ms, secrets=secrets_from_headers(req.headers))
                    except SecretLeak as exc:
                        return _error(codec, str(exc))
                return self._answer(codec, decoded, output, call.timestamp)
            if isinstance(result, Divergence):
                with self._lock:
                    if self.recorder is not None:
                        self.diverged_in_prefix = True
                message = result.human()
                log.warning("blackbox: %s", message)
                return _error(codec, message, error_type="replay_divergence", status=400)
            assert isinstance(result, Exhausted)
            if self.tail == "refuse":
                message = (
                    f"blackbox replay of run {self.run_id}: the agent made a model call the recording does not hold "
                    f"(all {len(self.replay.calls)} recorded calls were served); it overran its recording"
                )
                log.warning("%s", message)
                return _error(codec, message, error_type="replay_exhausted", status=400)
        # Past the recording: the cut of a fork, or a plain recording.
        secrets = secrets_from_headers(req.headers)
        if self.tail == "script":
            return self._answer_from_script(codec, decoded, req, secrets)
        if self.tail == "upstream":
            with self._lock:
                self.in_flight += 1
                self.forwarded_calls += 1
            return Forward(Ticket(codec, decoded, req.received_ms, secrets), body if body is not req.body else None)
        return _error(codec, "blackbox: this proxy does not forward model calls")  # pragma: no cover

    def _mode_now(self) -> str:
        """Strict up to the cut; after an edit the agent has seen something new, so in order."""
        if self.cut is None or self.replay is None:
            return self.match_mode
        expected = self.replay.next_expected()
        if expected is not None and expected.output_step > self.cut:
            return "sequence"
        return self.match_mode

    def _answer_from_script(self, codec: ModuleType, decoded: DecodedRequest, req: ModelRequest, secrets: set[str]) -> Answer:
        assert self.script is not None
        try:
            output = self.script()
        except IndexError:
            message = f"blackbox fork of run {self.run_id}: the script of answers ran out ({self.scripted_calls} answers were served); add answers to the script"
            log.warning("%s", message)
            return _error(codec, message, error_type="script_exhausted")
        with self._lock:
            self.scripted_calls += 1
        if self.recorder is not None:
            try:
                self.recorder.record_call(decoded, output, request_ms=req.received_ms, secrets=secrets)
            except SecretLeak as exc:
                return _error(codec, str(exc))
        return self._answer(codec, decoded, output, now_ms())

    def _answer(self, codec: ModuleType, decoded: DecodedRequest, output: dict[str, Any], timestamp: int | float) -> Answer:
        created = int(timestamp)
        if decoded.stream:
            body = codec.encode_stream(output, request=decoded, ids=self.ids, created_ms=created)
            return Answer(200, {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}, body, stream=True)
        obj = codec.encode_response(output, request=decoded, ids=self.ids, created_ms=created)
        return Answer(200, {"content-type": "application/json"}, orjson.dumps(obj))

    # -- responses to forwarded calls -------------------------------------------------

    def on_response(self, ticket: Ticket, status: int, body: bytes | None, *, response_ms: int | None = None) -> Answer | None:
        """Record a forwarded call's response. None: let it through. An Answer replaces it (a refusal)."""
        try:
            if status >= 400 or body is None:
                log.info("blackbox: provider answered %s; passed to the agent, not recorded", status)
                return None
            try:
                output = ticket.codec.decode_response(body, self.ids, ticket.request)
            except BlackboxUnsupportedError as exc:
                self._note_refusal(str(exc))
                return _error(ticket.codec, str(exc))
            if self.recorder is not None:
                try:
                    self.recorder.record_call(
                        ticket.request, output, request_ms=ticket.received_ms, response_ms=response_ms, secrets=ticket.secrets
                    )
                except SecretLeak as exc:
                    self._note_refusal(str(exc))
                    return _error(ticket.codec, str(exc))
            return None
        finally:
            self.call_done()

    def call_done(self) -> None:
        with self._lock:
            self.in_flight = max(0, self.in_flight - 1)

    def on_call_failed(self, ticket: Ticket, reason: str, *, streamed: bool = True) -> None:
        """A forwarded call that did not complete (connection failed, stream cut off, error event): not a step."""
        if streamed:
            log.warning("blackbox: a streamed model call did not complete (%s); it was not recorded", reason)
            self.notes.append(f"a streamed call did not complete: {reason}")
        else:
            log.warning("blackbox: a forwarded model call failed (%s); it was not recorded", reason)
            self.notes.append(f"a model call failed: {reason}")
        self.call_done()

    # -- helpers ------------------------------------------------------------------------

    def _note_refusal(self, message: str) -> None:
        log.warning("blackbox: refused: %s", message)
        with self._lock:
            self.refused.append(message)

    def _rewrite_tool_result(self, codec: ModuleType, body: bytes) -> bytes:
        assert self.tool_result_edit is not None
        call_id, text = self.tool_result_edit
        try:
            rewritten = codec.rewrite_tool_result(body, self.ids, call_id, text)
        except BlackboxError:
            return body
        return body if rewritten is None else rewritten


def _error(codec: ModuleType, message: str, *, status: int = 400, error_type: str | None = None) -> Answer:
    err = codec.encode_error(message, status=status, error_type=error_type)
    return Answer(err.status, dict(err.headers), err.body)
