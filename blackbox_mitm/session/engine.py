"""One run through the proxy, in plain Python: what to do with each model call.

The mitmproxy addon turns a flow into a ``ModelRequest`` and asks the session.
The answer is either an ``Answer`` (a response made here: a replayed call, a
refusal, a divergence) or a ``Forward`` (send it upstream, then hand the
response to ``on_response``). The same engine serves every mode, as the run's
``RunPlan`` (session/plan.py) says:

* record — nothing to replay; every call goes upstream and is recorded;
* replay — every call is answered from the cassette; past its end, refused;
* fork   — a prefix is answered from the parent cassette (strictly matched),
  with an edit at the cut; after the cut calls go upstream (``--live``) or to a
  script of answers, and the child run is recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from blackbox_mitm.cassette.media import collecting, resolving
from blackbox_mitm.cassette.payloads import order_tool_results
from blackbox_mitm.cassette.trace import now_ms
from blackbox_mitm.codecs import codec_for, one_turn_roles, stream_content_type, unservable_stop
from blackbox_mitm.codecs.base import CallIds, ChainingCodec, Codec, DecodedRequest
from blackbox_mitm.errors import BlackboxError, BlackboxUnsupportedError
from blackbox_mitm.matcher import Divergence, Exhausted, RecordedCalls, Served
from blackbox_mitm.matcher.outcomes import RecordedCall
from blackbox_mitm.matcher.profiles import profile_for, with_profile
from blackbox_mitm.matcher.turns import with_one_turn
from blackbox_mitm.session.answers import AnswerIntake
from blackbox_mitm.session.answers import error_answer as _error
from blackbox_mitm.session.calls import Answer, Forward, ModelRequest, Ticket
from blackbox_mitm.session.echoed_ids import EchoedIds
from blackbox_mitm.session.exchanges import ExchangeServer
from blackbox_mitm.session.numbers import refuse_unrepresentable_numbers
from blackbox_mitm.session.plan import Refuse, RunMode, RunPlan, Script, Upstream
from blackbox_mitm.session.recorder import Privacy, RecordFailed, RunRecorder, SecretLeak, scrub, secrets_from_request
from blackbox_mitm.session.release import DEFAULT_SETTLE_MS, Hold, ReleaseOrder

__all__ = ["Answer", "Forward", "ModelRequest", "Session", "Ticket"]

log = logging.getLogger(__name__)


class Session(AnswerIntake):
    """The decisions of one run, as its ``RunPlan`` says (session/plan.py). Thread-safe: concurrent flows may call it.

    What went wrong along the way (refusals, answers not written or not recorded, notes) is kept by ``RunLog``; a
    forwarded call's answer becomes steps by ``AnswerIntake`` (session/answers.py).
    """

    def __init__(
        self,
        plan: RunPlan,
        *,
        run_id: str,
        recorder: RunRecorder | None = None,  # the run written as it goes (None: nothing is recorded)
        privacy: Privacy | None = None,  # redaction, placeholders, credentials: the recorder's when there is one
        ids: CallIds | None = None,
    ) -> None:
        if recorder is not None and privacy is not None and privacy is not recorder.privacy:
            raise ValueError("a session and its recorder share one Privacy")
        super().__init__(recorder)
        self.plan = plan
        self.run_id = run_id
        self.privacy = recorder.privacy if recorder is not None else privacy or Privacy()
        self.ids = ids or CallIds()
        self.echoed_ids = EchoedIds()  # the run's mapped ids in request text (session/echoed_ids.py)
        replay = plan.prefix
        self.order = (  # an answer asked for a moment ago settles first (session/release.py)
            ReleaseOrder(replay.calls, gap_ms=plan.order_gap_ms, settle_ms=DEFAULT_SETTLE_MS)
            if replay is not None and plan.order_gap_ms is not None
            else None
        )
        self._profile_chosen = False  # the agent's profile (matcher.profiles), from its first call's User-Agent
        self.forwarded_calls = 0
        self.scripted_calls = 0
        self.diverged_in_prefix = False
        self.exchange_server: ExchangeServer | None = None  # a replay's other HTTP exchanges (session/exchanges.py ExchangeServer)
        self.media_store: Mapping[str, Any] | None = None  # the recorded run's media bytes by digest (cassette/media.py), lent to encoders
        # New tool calls never reuse a call-N the run already holds.
        for call in replay.calls if replay is not None else ():
            self.ids.register_calls(call.output)
        for step in recorder.trace.steps if recorder is not None else ():
            if step.type == "model_output":
                self.ids.register_calls(step.payload)

    # -- the plan, read -------------------------------------------------------------

    @property
    def mode(self) -> RunMode:
        """record | replay | fork, from the plan."""
        return self.plan.mode

    @property
    def replay(self) -> RecordedCalls | None:
        """The recorded calls answered from (a replay's, a fork's prefix), or None."""
        return self.plan.prefix

    @property
    def match_mode(self) -> str:
        return self.plan.match

    @property
    def cut(self) -> int | None:
        return self.plan.cut

    @property
    def cassette_path(self) -> Path | None:
        """The cassette the recorder writes (None: nothing is recorded)."""
        journal = self.recorder.journal if self.recorder is not None else None
        return journal.cassette if journal is not None else None

    @property
    def secrets(self) -> frozenset[str]:
        """The credentials known so far: never quoted in a report."""
        return self.privacy.secrets

    # -- requests -----------------------------------------------------------------

    def on_request(self, req: ModelRequest) -> Answer | Forward:
        """Answer a model call here, or say to forward it. Never raises: whatever fails is answered locally."""
        codec = req.codec if req.codec is not None else codec_for(req.method, req.path)
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
        edit = self.plan.edit
        if edit is not None and edit.tool_result is not None:
            body = self._rewrite_tool_result(codec, body, edit.tool_result)
        decoded = self._decode(codec, body, req)
        if isinstance(decoded, Answer):
            return decoded
        # Echoed call ids as call-N, tool results in call order, then redaction: what is recorded is what is matched.
        neutral = self.echoed_ids.rewrite(decoded.model_input, self.ids.known())
        decoded.model_input = self.privacy.redactor.payload(dict(order_tool_results(neutral)))
        if self.replay is not None:
            answer = self._from_recording(codec, decoded, req)
            if answer is not None:
                return answer
        # Past the recording: the cut of a fork, or a plain recording.
        secrets = secrets_from_request(req.headers, req.query)
        tail = self.plan.tail
        if isinstance(tail, Script):
            return self._answer_from_script(codec, decoded, req, secrets, tail)
        if isinstance(tail, Upstream):
            with self._lock:
                self.in_flight += 1
                self.forwarded_calls += 1
            if self.replay is not None and isinstance(codec, ChainingCodec):  # live after a replayed prefix:
                # state the provider never saw is written out
                with resolving(self.media_store):
                    body = codec.forward_body(body, self.ids) or body
            return Forward(Ticket(codec, decoded, req.received_ms, secrets), body if body is not req.body else None)
        return _error(codec, "blackbox: this proxy does not forward model calls")  # pragma: no cover

    def _decode(self, codec: Codec, body: bytes, req: ModelRequest) -> DecodedRequest | Answer:
        """The request as a neutral model_input, or the refusal the agent gets instead."""
        try:
            refuse_unrepresentable_numbers(body)  # 1e400, NaN: a cassette could not give them back
            with collecting() as media:  # the bytes of its media parts, for the run's media file
                decoded = codec.decode_request(body, self.ids, path=req.bare_path, query=req.query)
            decoded.media = media
            return decoded
        except BlackboxUnsupportedError as exc:
            message = exc.client_message
        except BlackboxError as exc:
            message = f"blackbox: {exc}"
        except RecursionError:
            message = BlackboxUnsupportedError("body", "the request body is nested too deeply to be read").client_message
        self._note_refusal(message)
        return _error(codec, message)

    def _from_recording(self, codec: Codec, decoded: DecodedRequest, req: ModelRequest) -> Answer | None:
        """The recorded answer, a divergence, or the end of the recording (None: the tail answers)."""
        assert self.replay is not None
        self._choose_profile(req.headers, codec)
        # The environment's values as placeholders, as they were recorded (the codecs keep the live request:
        # their state, such as Gemini's call places, is keyed by what the agent sends; the recorder neutralizes).
        env = self.privacy.env
        compared = decoded.model_input if env is None else env.neutral(decoded.model_input)
        result = self.replay.match(compared, mode=self._mode_now(), ordered=True)  # ordered above, once
        if isinstance(result, Served):
            call = result.call
            output: Mapping[str, Any] = dict(call.output)
            edit = self.plan.edit
            if edit is not None and edit.response is not None and call.output_step == edit.response[0]:
                output = edit.response[1]  # already in the child, at the cut
            elif edit is not None and call.output_step > edit.cut and self.recorder is not None:
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
            self.privacy.learn(secrets)
            message = scrub(result.human(), self.secrets)  # a report never quotes a credential
            log.warning("blackbox: %s", message)
            return _error(codec, message, error_type="replay_divergence", status=400)
        assert isinstance(result, Exhausted)
        if not isinstance(self.plan.tail, Refuse):
            return None
        message = (
            f"blackbox replay of run {self.run_id}: the agent made a model call the recording does not hold "
            f"(all {len(self.replay.calls)} recorded calls were served); it overran its recording"
        )
        log.warning("%s", message)
        return _error(codec, message, error_type="replay_exhausted", status=400)

    def _choose_profile(self, headers: Mapping[str, str], codec: Codec) -> None:
        """On the first call, before anything is matched: the agent's profile (by its User-Agent) and its codec's one-turn
        roles (``matcher.turns``) join the rules."""
        assert self.replay is not None
        with self._lock:
            if self._profile_chosen:
                return
            self._profile_chosen = True
            profile = profile_for(headers)
            profiled = with_profile(self.replay.rules, profile)
            agent = profile.name if profile is not None and profiled is not self.replay.rules else None
            if self.replay.use_rules(with_one_turn(profiled, one_turn_roles(codec))) and agent is not None:
                log.info("blackbox: the %s profile's masks are on (User-Agent %s)", agent, headers.get("user-agent"))

    def _mode_now(self) -> str:
        """Strict up to the cut; after an edit the agent has seen something new, so in order."""
        cut = self.plan.cut
        if cut is None or self.replay is None:
            return self.plan.match
        expected = self.replay.next_expected()
        if expected is not None and expected.output_step > cut:
            return "sequence"
        return self.plan.match

    def _answer_from_script(self, codec: Codec, decoded: DecodedRequest, req: ModelRequest, secrets: set[str], tail: Script) -> Answer:
        try:
            output = tail.source()
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
        pace = self.plan.pace
        if pace is None or call.input_timestamp is None:
            return 0.0
        return max(0.0, float(call.timestamp) - float(call.input_timestamp)) * pace

    def _answer(
        self,
        codec: Codec,
        decoded: DecodedRequest,
        output: Mapping[str, Any],
        timestamp: int | float,
        *,
        delay_ms: float = 0.0,
        hold: Hold | None = None,
    ) -> Answer:
        created = int(timestamp)
        unservable = unservable_stop(codec, output)
        if unservable is not None:  # a stop this client's API has no word for (a paused turn): named, not misserved
            self._note_refusal(unservable.client_message)
            return _error(codec, unservable.client_message)
        if self.privacy.env is not None:  # the recorded placeholders as this run's values: the agent reads its own paths
            output = self.privacy.env.restore(output)
        if decoded.stream:
            with resolving(self.media_store):  # an answer's media: the recorded bytes
                body = codec.encode_stream(output, request=decoded, ids=self.ids, created_ms=created)
            headers = {"content-type": stream_content_type(codec), "cache-control": "no-cache"}
            return Answer(200, headers, body, stream=True, replayed=True, delay_ms=delay_ms, hold=hold)
        with resolving(self.media_store):
            obj = codec.encode_response(output, request=decoded, ids=self.ids, created_ms=created)
        return Answer(200, {"content-type": "application/json"}, orjson.dumps(obj), replayed=True, delay_ms=delay_ms, hold=hold)

    # -- responses to forwarded calls: AnswerIntake (session/answers.py) ----------------

    # -- helpers ------------------------------------------------------------------------

    def _write_failed(self, codec: Codec, exc: BaseException) -> Answer:
        return _error(codec, self._note_write_failed(exc), status=500, error_type="blackbox_record_failed")

    def _rewrite_tool_result(self, codec: Codec, body: bytes, edit: tuple[str, str]) -> bytes:
        call_id, text = edit
        try:
            rewritten = codec.rewrite_tool_result(body, self.ids, call_id, text)
        except BlackboxError:
            return body
        return body if rewritten is None else rewritten
