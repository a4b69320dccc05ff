"""A run's recorded model calls: each model_input step paired with the model_output step that answered it.

Outputs pair with pending inputs first-in first-out, so a recording of one call
at a time pairs each input with the next output; a model_input that no
model_output answered is not a call (nothing could be served), and an output
with no input is passed over. Each call also counts the tool_call / tool_result
steps recorded since the previous model call (the tool round its request
carries). ``matcher.recorded.RecordedCalls`` serves them; the release rule
(``session.release``) and the reports read them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from blackbox_mitm.cassette.trace import Trace, TraceStep
from blackbox_mitm.matcher.digests import PieceDigester
from blackbox_mitm.matcher.masks import NO_RULES, CompareRules
from blackbox_mitm.matcher.normalize import request_digest
from blackbox_mitm.matcher.outcomes import RecordedCall

__all__ = ["recorded_calls_of"]

_TOOL_STEPS = ("tool_call", "tool_result")


def recorded_calls_of(
    trace: Trace,
    *,
    upto: int | None = None,
    rules: CompareRules = NO_RULES,
    digester: PieceDigester | None = None,
    digests: bool = True,
) -> list[RecordedCall]:
    """The recorded model calls of ``trace`` in recorded order (the module docstring); digests under ``rules``.

    ``digester`` (for ``rules``) makes the digests with its memo: a recorded run's history repeats call after call.
    ``digests=False``: every call's ``digest`` is ``""`` (counting the calls, or ``RecordedCalls`` digesting them as needed).
    """
    digest_of = _digest_of(rules, digester, digests)
    steps = trace.steps
    calls: list[RecordedCall] = []
    pending: deque[tuple[int, int]] = deque()  # (model_input step, tool steps before it)
    tool_steps = 0
    for step in steps:  # one pass; a long run's tens of thousands of steps, so the loop does as little as it can
        kind = step.type
        if upto is not None and step.index >= upto:
            break
        if kind == "model_input":
            pending.append((step.index, tool_steps))
            tool_steps = 0
        elif kind == "model_output":
            tool_steps = 0
            if pending:  # else an output with no input: nothing asked for it
                input_index, before = pending.popleft()
                calls.append(_recorded_call(len(calls), steps[input_index], step, before, digest_of))
        elif kind in _TOOL_STEPS:
            tool_steps += 1
    return calls


def _digest_of(rules: CompareRules, digester: PieceDigester | None, digests: bool) -> Callable[[Mapping[str, Any]], str] | None:
    """How a recorded model_input is digested: not at all (None: ``""``), with ``digester``'s memo, or under ``rules``."""
    if not digests:
        return None
    if digester is not None:
        return digester.digest
    return lambda model_input: request_digest(model_input, rules)


def _recorded_call(
    number: int, input_step: TraceStep, output_step: TraceStep, before: int, digest_of: Callable[[Mapping[str, Any]], str] | None
) -> RecordedCall:
    """Call ``number``: the model_input step and the model_output step that answered it."""
    payload, answer = input_step.payload, output_step.payload
    model_input: Mapping[str, Any] = payload if isinstance(payload, dict | Mapping) else {}  # dict first: a loaded step's
    output: Mapping[str, Any] = answer if isinstance(answer, dict | Mapping) else {}
    digest = digest_of(model_input) if digest_of is not None else ""
    # number, input_step, output_step, input, output, digest, timestamp, tool_steps_before, input_timestamp
    return RecordedCall(
        number, input_step.index, output_step.index, model_input, output, digest, output_step.timestamp, before, input_step.timestamp
    )
