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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from blackbox_mitm.cassette.trace import now_ms
from blackbox_mitm.codecs import codec_for, stream_content_type
from blackbox_mitm.codecs.base import CallIds, ChainingCodec, Codec, DecodedRequest
from blackbox_mitm.errors import BlackboxError, BlackboxUnsupportedError
from blackbox_mitm.matcher import Divergence, Exhausted, RecordedCalls, Served
from blackbox_mitm.matcher.masks import NO_RULES, CompareRules
from blackbox_mitm.matcher.outcomes import RecordedCall
from blackbox_mitm.matcher.profiles import profile_for, with_profile
from blackbox_mitm.session.echoed_ids import EchoedIds
from blackbox_mitm.session.environment import EnvSubstitution
from blackbox_mitm.session.exchanges import ExchangeServer
from blackbox_mitm.session.numbers import refuse_unrepresentable_numbers
from blackbox_mitm.session.recorder import RecordFailed, RunRecorder, SecretLeak, scrub, secrets_from_environ, secrets_from_request
from blackbox_mitm.session.redact import Redactor
from blackbox_mitm.session.release import DEFAULT_GAP_MS, DEFAULT_SETTLE_MS, Hold, ReleaseOrder
from blackbox_mitm.session.transcript import order_tool_results

__all__ = ["Answer", "Forward", "ModelRequest", "Session", "Ticket"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ModelRequest:
    path: str  # with its query string
    headers: dict[str, str]  # lower-case names
    body: bytes
    received_ms: int = field(default_factory=now_ms)
    method: str = "POST"

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
        rules: CompareRules = NO_RULES,  # masks: what strict matching does not compare
        redactor: Redactor | None = None,  # applied to every request before it is matched or recorded
        pace: float | None = None,  # --pace: None as fast as possible, else the factor on each recorded call's time
        order_gap_ms: float | None = DEFAULT_GAP_MS,  # --order-gap: overlapping answers in recorded order, this far apart; None: off
        env: EnvSubstitution | None = None,  # the run's environment as placeholders (session.environment)
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
        self.echoed_ids = EchoedIds()  # the run's mapped ids in request text (session/echoed_ids.py)
        self.response_edit = response_edit
        self.tool_result_edit = tool_result_edit
        self.rules = rules
        self.redactor = redactor or Redactor()
        self.pace = pace
        self.order = (  # an answer asked for a moment ago settles first (session/release.py)
            ReleaseOrder(replay.calls, gap_ms=order_gap_ms, settle_ms=DEFAULT_SETTLE_MS)
            if replay is not None and order_gap_ms is not None
            else None
        )
        self.env = env
        self._profile_chosen = False  # the agent's profile (matcher.profiles), from its first call's User-Agent
        self.in_flight = 0
        self.forwarded_calls = 0
        self.scripted_calls = 0
        self.refused: list[str] = []  # requests and answers refused (the agent got an error)
        self.failed_writes: list[str] = []  # answers that could not be made durable (the agent got an error)
        self.unrecorded: list[str] = []  # answers the agent got that the cassette does not hold
        self.notes: list[str] = []
        self.diverged_in_prefix = False
        self.secrets: set[str] = secrets_from_environ()  # never quoted in a report
        self.exchange_server: ExchangeServer | None = None  # a replay's other HTTP exchanges (session/exchanges.py ExchangeServer)
        self._lock = threading.Lock()
        # New tool calls never reuse a call-N the run already holds.
        for call in replay.calls if replay is not None else ():
            self.ids.register_calls(call.output)
        for step in recorder.trace.steps if recorder is not None else ():
            if step.type == "model_output":
                self.ids.register_calls(step.payload)

    # -- requests -----------------------------------------------------------------

    def on_request(self, req: ModelRequest) -> Answer | Forward:
        """Answer a model call here, or say to forward it. Never raises: whatever fails is answered locally."""
        codec = codec_for(req.method, req.path)
        if codec is None:  # pragma: no cover - the addon only sends model paths
            raise ValueError(f"not a model path: {req.path}")
        try:
            return self._on_request(codec, req)
        except Exception as exc:  # a bug or an input nothing expected: answered here, never forwarded
            log.exception("blackbox: a model call could not be handled")
            message = f"blackbox could not handle this model call ({type(exc).__name__}: {exc}); it was not forwarded"
            self._note_refusal(message)
            return _error(codec, message)

    def _on_request(self, codec: Codec, req: ModelRequest) -> Answer | Forward:
        body = req.body
        if self.tool_result_edit is not None:
            body = self._rewrite_tool_result(codec, body)
        decoded = self._decode(codec, body, req)
        if isinstance(decoded, Answer):
            return decoded
        # Echoed call ids as call-N, tool results in call order, then redaction: what is recorded is what is matched.
        neutral = self.echoed_ids.rewrite(decoded.model_input, self.ids.known())
        decoded.model_input = self.redactor.payload(dict(order_tool_results(neutral)))
        if self.replay is not None:
            answer = self._from_recording(codec, decoded, req)
            if answer is not None:
                return answer
        # Past the recording: the cut of a fork, or a plain recording.
        secrets = secrets_from_request(req.headers, req.query)
        if self.tail == "script":
            return self._answer_from_script(codec, decoded, req, secrets)
        if self.tail == "upstream":
            with self._lock:
                self.in_flight += 1
                self.forwarded_calls += 1
            if self.replay is not None and isinstance(codec, ChainingCodec):  # live after a replayed prefix:
                # state the provider never saw is written out
                body = codec.forward_body(body, self.ids) or body
            return Forward(Ticket(codec, decoded, req.received_ms, secrets), body if body is not req.body else None)
        return _error(codec, "blackbox: this proxy does not forward model calls")  # pragma: no cover

    def _decode(self, codec: Codec, body: bytes, req: ModelRequest) -> DecodedRequest | Answer:
        """The request as a neutral model_input, or the refusal the agent gets instead."""
        try:
            refuse_unrepresentable_numbers(body)  # 1e400, NaN: a cassette could not give them back
            return codec.decode_request(body, self.ids, path=req.bare_path, query=req.query)
        except BlackboxUnsupportedError as exc:
            message = str(exc)
        except BlackboxError as exc:
            message = f"blackbox: {exc}"
        except RecursionError:
            message = "BlackboxUnsupportedError: body: the request body is nested too deeply to be read"
        self._note_refusal(message)
        return _error(codec, message)

    def _from_recording(self, codec: Codec, decoded: DecodedRequest, req: ModelRequest) -> Answer | None:
        """The recorded answer, a divergence, or the end of the recording (None: the tail answers)."""
        assert self.replay is not None
        self._choose_profile(req.headers)
        # The environment's values as placeholders, as they were recorded (the codecs keep the live request:
        # their state, such as Gemini's call places, is keyed by what the agent sends; the recorder neutralizes).
        compared = decoded.model_input if self.env is None else self.env.neutral(decoded.model_input)
        result = self.replay.match(compared, mode=self._mode_now())
        if isinstance(result, Served):
            call = result.call
            output = dict(call.output)
            if self.response_edit is not None and call.output_step == self.response_edit[0]:
                output = self.response_edit[1]  # already in the child, at the cut
            elif self.cut is not None and call.output_step > self.cut and self.recorder is not None:
                # Past the cut the agent has seen the edit: recorded answers play on in order, into the child.
                try:
                    self.recorder.record_call(
                        decoded, output, request_ms=req.received_ms, secrets=secrets_from_request(req.headers, req.query)
                    )
                except SecretLeak as exc:
                    return _error(codec, str(exc))
                except RecordFailed as exc:
                    return self._write_failed(codec, exc)
            hold = self._hold(call.number)
            return self._answer(codec, decoded, output, call.timestamp, delay_ms=self._delay(call), hold=hold)
        if isinstance(result, Divergence):
            secrets = secrets_from_request(req.headers, req.query)
            with self._lock:
                if self.recorder is not None:
                    self.diverged_in_prefix = True
                self.secrets |= secrets
            message = scrub(result.human(), self.secrets)  # a report never quotes a credential
            log.warning("blackbox: %s", message)
            return _error(codec, message, error_type="replay_divergence", status=400)
        assert isinstance(result, Exhausted)
        if self.tail != "refuse":
            return None
        message = (
            f"blackbox replay of run {self.run_id}: the agent made a model call the recording does not hold "
            f"(all {len(self.replay.calls)} recorded calls were served); it overran its recording"
        )
        log.warning("%s", message)
        return _error(codec, message, error_type="replay_exhausted", status=400)

    def _choose_profile(self, headers: Mapping[str, str]) -> None:
        """On the first call: the agent's profile masks (by its User-Agent) join the rules, before anything is matched."""
        assert self.replay is not None
        with self._lock:
            if self._profile_chosen:
                return
            self._profile_chosen = True
            profile = profile_for(headers)
            rules = with_profile(self.rules, profile)
            if rules is not self.rules and self.replay.use_rules(rules):
                self.rules = rules
                log.info(
                    "blackbox: the %s profile's masks are on (User-Agent %s)", profile.name if profile else "", headers.get("user-agent")
                )

    def _mode_now(self) -> str:
        """Strict up to the cut; after an edit the agent has seen something new, so in order."""
        if self.cut is None or self.replay is None:
            return self.match_mode
        expected = self.replay.next_expected()
        if expected is not None and expected.output_step > self.cut:
            return "sequence"
        return self.match_mode

    def _answer_from_script(self, codec: Codec, decoded: DecodedRequest, req: ModelRequest, secrets: set[str]) -> Answer:
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
            except RecordFailed as exc:
                return self._write_failed(codec, exc)
        return self._answer(codec, decoded, output, now_ms())

    def _hold(self, number: int) -> Hold | None:
        """The release rule's hold on call ``number``'s answer (None: sent at once, its arrival still noted)."""
        if self.order is None:
            return None
        if self.order.concerns(number):
            return self.order.hold(number)
        self.order.arrived(number)  # a request that may gate an overlapping answer (session/release.py)
        return None

    def _delay(self, call: RecordedCall) -> float:
        """--pace: how long the recorded call took (its model_output's timestamp less its model_input's), scaled."""
        if self.pace is None or call.input_timestamp is None:
            return 0.0
        return max(0.0, float(call.timestamp) - float(call.input_timestamp)) * self.pace

    def _answer(
        self,
        codec: Codec,
        decoded: DecodedRequest,
        output: dict[str, Any],
        timestamp: int | float,
        *,
        delay_ms: float = 0.0,
        hold: Hold | None = None,
    ) -> Answer:
        created = int(timestamp)
        if self.env is not None:  # the recorded placeholders as this run's values: the agent reads its own paths
            output = self.env.restore(output)
        if decoded.stream:
            body = codec.encode_stream(output, request=decoded, ids=self.ids, created_ms=created)
            headers = {"content-type": stream_content_type(codec), "cache-control": "no-cache"}
            return Answer(200, headers, body, stream=True, replayed=True, delay_ms=delay_ms, hold=hold)
        obj = codec.encode_response(output, request=decoded, ids=self.ids, created_ms=created)
        return Answer(200, {"content-type": "application/json"}, orjson.dumps(obj), replayed=True, delay_ms=delay_ms, hold=hold)

    # -- responses to forwarded calls -------------------------------------------------

    def on_response(self, ticket: Ticket, status: int, body: bytes | None, *, response_ms: int | None = None) -> Answer | None:
        """Record a forwarded call's whole response. None: let it through. An Answer replaces it (a refusal)."""
        try:
            if status >= 400 or body is None:
                log.info("blackbox: provider answered %s; passed to the agent, not recorded", status)
                return None
            refusal = self._record_answer(ticket, body, response_ms)
            if refusal is None:
                return None
            message, status = refusal
            return _error(ticket.codec, message, status=status)
        finally:
            self.call_done()

    def on_stream_complete(self, ticket: Ticket, whole: Mapping[str, Any], *, response_ms: int | None = None) -> str | None:
        """Record a streamed answer (the object its events add up to) before its final event goes out.

        None: send the final event. A message: the answer is refused, or could not be written; the
        agent is sent the provider's error event with it instead.
        """
        try:
            refusal = self._record_answer(ticket, whole, response_ms)
            return None if refusal is None else refusal[0]
        finally:
            self.call_done()

    def _record_answer(self, ticket: Ticket, body: bytes | Mapping[str, Any], response_ms: int | None) -> tuple[str, int] | None:
        """The one path by which an answer becomes steps: None when recorded, else why the agent gets an error (and its status)."""
        try:
            if isinstance(body, bytes):
                refuse_unrepresentable_numbers(body, what="response")
            output = ticket.codec.decode_response(body, self.ids, ticket.request)
            if self.recorder is not None:
                self.recorder.record_call(
                    ticket.request, output, request_ms=ticket.received_ms, response_ms=response_ms, secrets=ticket.secrets
                )
            return None
        except (BlackboxUnsupportedError, SecretLeak) as exc:
            self._note_refusal(str(exc))
            return str(exc), 400
        except RecordFailed as exc:
            return self._note_write_failed(exc), 500
        except RecursionError:
            message = "BlackboxUnsupportedError: body: the response is nested too deeply to be recorded"
            self._note_refusal(message)
            return message, 400
        except Exception as exc:  # never pass an answer on that the cassette does not hold
            log.exception("blackbox: an answer could not be recorded")
            return self._note_write_failed(exc), 500

    def call_done(self) -> None:
        with self._lock:
            self.in_flight = max(0, self.in_flight - 1)

    def on_call_failed(self, ticket: Ticket, reason: str, *, streamed: bool = True) -> None:
        """A forwarded call that did not complete (connection failed, stream cut off, error event): not a step."""
        if streamed:
            log.warning("blackbox: a streamed model call did not complete (%s); it was not recorded", reason)
            self.note(f"a streamed call did not complete: {reason}")
        else:
            log.warning("blackbox: a forwarded model call failed (%s); it was not recorded", reason)
            self.note(f"a model call failed: {reason}")
        self.call_done()

    def note(self, line: str) -> None:
        with self._lock:
            self.notes.append(line)

    def note_unrecorded(self, reason: str) -> None:
        """An answer reached the agent that the cassette does not hold: the run is marked."""
        log.error("blackbox: %s", reason)
        with self._lock:
            self.unrecorded.append(reason)
        if self.recorder is not None:
            self.recorder.note_unrecordable(reason)

    def problems(self) -> list[str]:
        """What makes a recording incomplete: refusals, answers not written, answers not recorded."""
        with self._lock:
            return [*(f"refused: {r}" for r in self.refused), *self.failed_writes, *self.unrecorded]

    # -- helpers ------------------------------------------------------------------------

    def _note_refusal(self, message: str) -> None:
        log.warning("blackbox: refused: %s", message)
        with self._lock:
            self.refused.append(message)

    def _note_write_failed(self, exc: BaseException) -> str:
        reason = f"blackbox could not record this model call, so it is not passed on: {exc}"
        log.error("blackbox: %s", reason)
        with self._lock:
            self.failed_writes.append(reason)
        if self.recorder is not None:
            self.recorder.note_unrecordable(reason)
        return reason

    def _write_failed(self, codec: Codec, exc: BaseException) -> Answer:
        return _error(codec, self._note_write_failed(exc), status=500, error_type="blackbox_record_failed")

    def _rewrite_tool_result(self, codec: Codec, body: bytes) -> bytes:
        assert self.tool_result_edit is not None
        call_id, text = self.tool_result_edit
        try:
            rewritten = codec.rewrite_tool_result(body, self.ids, call_id, text)
        except BlackboxError:
            return body
        return body if rewritten is None else rewritten


def _error(codec: Codec, message: str, *, status: int = 400, error_type: str | None = None) -> Answer:
    err = codec.encode_error(message, status=status, error_type=error_type)
    return Answer(err.status, dict(err.headers), err.body)
