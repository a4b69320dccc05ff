"""Turns completed model calls into cassette steps, durably, in the spec's order.

For each completed call the recorder appends, as one journal batch:

1. ``tool_call`` / ``tool_result`` for every earlier tool call whose result this
   request carries, in call order (the network-level view of a tool round);
2. ``model_input`` (the normalized request) and ``model_output`` (the answer).

The batch is ``fsync``ed before the caller lets the agent see the response. A
call whose steps would contain an API key the recorder knows is refused
(``SecretLeak``) and nothing of it is written. ``finish`` appends the terminal
metadata event and writes the cassette. With a ``Redactor`` (``session.redact``)
every payload — the batch and the terminal event — is redacted before it is
hashed or written.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from blackbox_mitm.cassette.journal import Journal
from blackbox_mitm.cassette.payloads import Metadata, tool_calls_of
from blackbox_mitm.cassette.trace import Trace, TraceStep, now_ms
from blackbox_mitm.codecs.base import DecodedRequest
from blackbox_mitm.errors import BlackboxError, RecordFailed, SecretLeak
from blackbox_mitm.session.privacy import (
    Privacy,
    payload_bytes,
    scrub,
    secret_env_names,
    secrets_from_environ,
    secrets_from_request,
    unchanged,
)

if TYPE_CHECKING:
    from blackbox_mitm.session.exchanges import ExchangeBook
    from blackbox_mitm.session.media import MediaBook

__all__ = [
    "Privacy",
    "RecordFailed",
    "RunRecorder",
    "SecretLeak",
    "Written",
    "scrub",
    "secret_env_names",
    "secrets_from_environ",
    "secrets_from_request",
]


@dataclass(frozen=True, slots=True)
class Written:
    """A call's steps as written to the journal: its line (to wait for) and where its steps begin in the trace."""

    steps: list[TraceStep]
    line: int
    before: int


@dataclass(slots=True)
class _Pending:
    call: dict[str, Any]
    call_written: bool = False


class RunRecorder:
    """Appends a run's steps to its trace and journal; thread-safe."""

    def __init__(self, trace: Trace, journal: Journal | None, *, privacy: Privacy | None = None) -> None:
        self.trace = trace
        self.journal = journal
        # Redaction and the environment's placeholders, applied to every payload before it is hashed or written;
        # the credentials a step must never hold. The session shares it.
        self.privacy = privacy or Privacy()
        self.model_calls = 0
        self.unrecordable: list[str] = []
        self._lock = threading.Lock()
        self._pending: OrderedDict[str, _Pending] = OrderedDict()
        self._last_output: Mapping[str, Any] | None = None
        self.exchanges: ExchangeBook | None = None  # the run's other HTTP exchanges (session/exchanges.py ExchangeBook), sealed by finish
        self.media: MediaBook | None = None  # the run's media bytes (session/media.py MediaBook), sealed by finish
        self._seed_pending_from_prefix()

    # -- recording ------------------------------------------------------------------

    def record_call(
        self,
        request: DecodedRequest,
        output: Mapping[str, Any],
        *,
        request_ms: int,
        response_ms: int | None = None,
        secrets: set[str] | None = None,
    ) -> list[TraceStep]:
        """Write the steps one completed model call adds; fsynced before returning (``write_call``, then ``wait_durable``)."""
        written = self.write_call(request, output, request_ms=request_ms, response_ms=response_ms, secrets=secrets)
        self.wait_durable(written)
        return written.steps

    def write_call(
        self,
        request: DecodedRequest,
        output: Mapping[str, Any],
        *,
        request_ms: int,
        response_ms: int | None = None,
        secrets: set[str] | None = None,
    ) -> Written:
        """Write the steps one completed model call adds, not yet fsynced: pass the result to ``wait_durable``.

        ``request.model_input`` is redacted already (the session redacts each request once, before it is matched);
        the answer is redacted here, once, and the tool steps are taken from the two. The helpers below run under
        the recorder's lock, in this order: neutral answer, tool steps, leak check, media, journal, settle. The wait
        for the fsync that covers the batch comes after, outside it (overlapping calls share one).
        """
        with self._lock:
            self.privacy.learn(secrets or set())
            neutral, written = self._neutral_answer(output)
            staged, done = self._tool_steps(request, neutral, request_ms)
            staged.append(("model_input", neutral(request.model_input), request_ms))
            staged.append(("model_output", written, response_ms if response_ms is not None else now_ms()))
            self._refuse_secrets(staged)
            if self.media is not None and request.media:  # spooled before the steps that name it are journaled
                self.media.add(request.media, secrets=self.privacy.secrets)  # once per digest, however often re-sent
            steps, line, before = self._write(staged)
            self._settle(done, written, output)
        return Written(steps, line, before)

    def wait_durable(self, written: Written) -> None:
        """Return once the call's journal line is fsynced; if it cannot be, its steps leave the trace too."""
        if self.journal is None:
            return
        try:
            self.journal.wait_durable(written.line)
        except BlackboxError as exc:
            raise self._not_durable(written, exc) from exc

    async def wait_durable_async(self, written: Written) -> None:
        """``wait_durable`` on an event loop, which it never blocks: the fsync runs on a worker thread, shared."""
        if self.journal is None:
            return
        try:
            await self.journal.wait_durable_async(written.line)
        except BlackboxError as exc:
            raise self._not_durable(written, exc) from exc

    def _not_durable(self, written: Written, exc: BlackboxError) -> RecordFailed:
        with self._lock:  # every call after the last durable one fails alike, so the trace ends with what the journal holds
            del self.trace.steps[written.before :]
        return RecordFailed(f"the call could not be written to the journal ({exc})")

    def _neutral_answer(self, output: Mapping[str, Any]) -> tuple[Callable[[Any], Any], Any]:
        """The environment's placeholders as a function, and the answer as it is written (neutral, then redacted)."""
        env, redactor = self.privacy.env, self.privacy.redactor
        neutral: Callable[[Any], Any] = env.neutral if env is not None else unchanged
        written = redactor.payload(neutral(output)) if redactor else neutral(output)
        return neutral, written

    def _tool_steps(
        self, request: DecodedRequest, neutral: Callable[[Any], Any], request_ms: int
    ) -> tuple[list[tuple[str, Any, int]], list[str]]:
        """The ``tool_call`` / ``tool_result`` steps of the pending calls this request answers, and their ids."""
        results = {p.get("toolCallId"): p for p in request.tool_results()}
        staged: list[tuple[str, Any, int]] = []
        done: list[str] = []
        for call_id, pending in self._pending.items():
            result = results.get(call_id)
            if result is None:
                continue
            call = pending.call  # as it was written
            if not pending.call_written:
                staged.append(
                    (
                        "tool_call",
                        {"toolCallId": call_id, "toolName": call.get("toolName"), "toolInput": call.get("toolInput")},
                        request_ms,
                    )
                )
            payload: dict[str, Any] = {"toolCallId": call_id, "toolName": result.get("toolName", call.get("toolName"))}
            if "error" in result:
                payload["error"] = result["error"]
            else:
                payload["result"] = result.get("result")
            staged.append(("tool_result", neutral(payload), request_ms))
            done.append(call_id)
        return staged, done

    def _write(self, staged: list[tuple[str, Any, int]]) -> tuple[list[TraceStep], int, int]:
        """Append ``staged`` to the trace and write it to the journal as one batch (fsynced by ``wait_durable``).

        Returns the steps, the batch's journal line and the trace's length before it; on failure the trace is as it was.
        """
        before = len(self.trace.steps)
        try:
            steps = [self.trace.append(kind, payload, timestamp=ts) for kind, payload, ts in staged]
            line = self.journal.write(steps) if self.journal is not None else 0
        except (OSError, BlackboxError) as exc:
            del self.trace.steps[before:]  # the trace stays what the journal holds
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise RecordFailed(f"the call could not be written to the journal ({detail})") from exc
        return steps, line, before

    def _settle(self, done: list[str], written: Any, output: Mapping[str, Any]) -> None:
        """After the batch is durable: the answered calls leave the pending set, the answer's own calls join it."""
        for call_id in done:
            del self._pending[call_id]
        for call in tool_calls_of(written):
            self._pending[str(call.get("toolCallId"))] = _Pending(call)
        self._last_output = output
        self.model_calls += 1

    def _refuse_secrets(self, staged: list[tuple[str, Any, int]]) -> None:
        known = self.privacy.secrets
        if not known:
            return
        # Each credential as raw UTF-8 and as it reads inside a JSON string: built once per call, not per payload.
        needles = [(secret, secret.encode(), payload_bytes(secret)[1:-1]) for secret in known]
        for kind, payload, _ in staged:
            blob = payload_bytes(payload)
            for secret, raw, escaped in needles:
                if raw in blob or escaped in blob:
                    raise SecretLeak(
                        f"blackbox refused to record this call: its {kind} would contain the API key "
                        f"({secret[:4]}…); keep credentials out of prompts and tool results"
                    )

    def note_unrecordable(self, reason: str) -> None:
        """A call the agent saw but the cassette cannot hold (a streamed refusal): the run is marked."""
        with self._lock:
            self.unrecordable.append(reason)

    # -- the end ----------------------------------------------------------------------

    def terminal_event(self, *, exit_code: int | None, in_flight: int = 0, proxy_only: bool = False) -> Metadata:
        if self.unrecordable:
            return {"event": "run_failed", "status": "error", "reason": "agent_error", "message": "; ".join(self.unrecordable)}
        if in_flight and exit_code is not None:
            return {"event": "run_failed", "status": "error", "reason": "calls_in_flight", "exitCode": exit_code, "inFlight": in_flight}
        if exit_code is not None and exit_code != 0:
            return {"event": "run_failed", "status": "error", "reason": "process_exit", "exitCode": exit_code}
        last = self._last_output
        if last is not None and last.get("type") == "final_answer":
            return {"event": "run_completed", "status": "success", "result": last.get("text", "")}
        if proxy_only:
            return {
                "event": "run_failed",
                "status": "error",
                "reason": "proxy_stopped",
                "message": "the proxy stopped before the agent's last model call was answered with a final answer",
            }
        return {"event": "run_completed", "status": "success", "result": ""}

    def finish(
        self, cassette: str | os.PathLike[str] | None, *, exit_code: int | None, in_flight: int = 0, proxy_only: bool = False
    ) -> Path | None:
        with self._lock:
            event: dict[str, Any] = dict(self.terminal_event(exit_code=exit_code, in_flight=in_flight, proxy_only=proxy_only))
            if self.privacy.env is not None:
                event = self.privacy.env.neutral(event)
            event = self.privacy.redactor.payload(event)
            event = self._seal_exchanges(event)
            event = self._seal_media(event)
            step = self.trace.append("metadata", event)
            if self.journal is not None:
                self.journal.append([step])
                return self.journal.finish()
            return None

    def _seal_exchanges(self, event: dict[str, Any]) -> dict[str, Any]:
        """Write the run's other exchanges beside the cassette; the terminal event names and seals them."""
        if self.exchanges is None or self.journal is None:
            return event
        try:
            ref = self.exchanges.seal(self.journal.cassette, self.trace.id)
        except (OSError, BlackboxError) as exc:  # the model steps are still written; the run says what was lost
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return {**event, "exchangesLost": f"the run's other HTTP exchanges could not be written ({detail})"}
        return event if ref is None else {**event, "exchanges": ref}

    def _seal_media(self, event: dict[str, Any]) -> dict[str, Any]:
        """Write the media the steps name beside the cassette; the terminal event names and seals them."""
        if self.media is None or self.journal is None:
            return event
        try:
            ref = self.media.seal(self.journal.cassette, self.trace.id, (s.payload for s in self.trace.steps))
        except (OSError, BlackboxError) as exc:  # the steps still name every item by digest
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return {**event, "mediaLost": f"the run's media bytes could not be written ({detail})"}
        return event if ref is None else {**event, "media": ref}

    def discard(self) -> None:
        """Drop the run (a fork whose prefix did not re-run as recorded): no cassette is written."""
        with self._lock:
            if self.journal is not None:
                self.journal.discard()  # removes this recorder's own journal, never another's
                self.journal = None
            if self.media is not None:
                self.media.discard()

    # -- fork prefixes --------------------------------------------------------------

    def _seed_pending_from_prefix(self) -> None:
        """A copied prefix may end inside a tool round: its unanswered calls are pending."""
        last_output_at = None
        for step in reversed(self.trace.steps):
            if step.type == "model_output":
                last_output_at = step.index
                break
        if last_output_at is None:
            return
        output = self.trace.steps[last_output_at].payload
        self._last_output = output if isinstance(output, dict) else None
        called = set()
        answered = set()
        for step in self.trace.steps[last_output_at + 1 :]:
            if isinstance(step.payload, dict):
                if step.type == "tool_call":
                    called.add(step.payload.get("toolCallId"))
                elif step.type == "tool_result":
                    answered.add(step.payload.get("toolCallId"))
        for call in tool_calls_of(output):
            call_id = call.get("toolCallId")
            if call_id not in answered:
                self._pending[str(call_id)] = _Pending(call, call_written=call_id in called)
