"""Forking a recorded run: check the request, plan the cut, build the child session, decide whether to keep it.

A fork re-runs the agent against its parent cassette. Up to the cut every model
call is answered from the recording and must match it (``match="strict"``;
``"sequence"`` does not compare). At the cut:

* a ``tool_result`` edit at a tool_result step N: what the *model sees* changes —
  the proxy rewrites that tool result in the request that carries it and in every
  later request's history. The agent's own tool ran as usual.
* a ``response`` edit at a model_output step N: the agent gets the edited answer.
* ``live_after=N`` alone (rewind): steps 0..N replay exactly, then it is live
  (``-1``: nothing is replayed, every call is live — a re-recording with lineage).

After the cut, model calls go to the real upstream (``tail="upstream"``) or to a
script of answers. The child cassette holds the parent's steps before the cut
verbatim (same timestamps, same hashes), the edit at the cut with the parent's
timestamp, then whatever the run did next; ``parentId`` / ``forkedFromStepId``
point back. Anything refused raises ``ForkRefused`` whose ``hint`` says what to
change and whose ``options`` name the parameters (the CLI shows its flags).
``discard_reason`` is the keep-or-discard rule once the run has ended.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blackbox_mitm.cassette.journal import Journal
from blackbox_mitm.cassette.media import spool_path
from blackbox_mitm.cassette.payloads import FinalAnswer, ModelOutput, ToolCall, ToolCalls, tool_calls_of
from blackbox_mitm.cassette.records import MediaDocument
from blackbox_mitm.cassette.trace import Trace, TraceStep
from blackbox_mitm.codecs import CODECS
from blackbox_mitm.codecs.base import CallIds
from blackbox_mitm.errors import CassetteExistsError, ForkRefused
from blackbox_mitm.matcher import RecordedCalls
from blackbox_mitm.matcher.masks import NO_RULES, CompareRules
from blackbox_mitm.session.build import run_id_for
from blackbox_mitm.session.engine import Session
from blackbox_mitm.session.env_report import explainer
from blackbox_mitm.session.environment import RunEnvironment, replay_substitution
from blackbox_mitm.session.media import MediaBook
from blackbox_mitm.session.plan import UPSTREAM, Edit, RunPlan, Script, Upstream
from blackbox_mitm.session.recorder import Privacy, RunRecorder
from blackbox_mitm.session.redact import Redactor
from blackbox_mitm.session.release import DEFAULT_GAP_MS

__all__ = ["NO_EDIT", "ForkPlan", "ForkRefused", "discard_reason", "fork_session", "normalize_answer", "plan_fork"]

NO_EDIT: Any = object()
"""``plan_fork``'s default for ``tool_result`` / ``response``: no edit of that kind (``None`` is a JSON value)."""

_EDIT_HINT = "give the step to edit with a tool_result or a response, or live_after alone to rewind"
_EDITS = ("at", "tool_result", "response", "live_after")


@dataclass(slots=True)
class ForkPlan:
    parent: Trace
    cut: int  # the first step whose answer is not the parent's
    edit_kind: str | None  # "tool_result" | "response" | None (rewind)
    edit_at: int | None
    edit_value: Any
    live_after: int | None


def _describe(step: TraceStep) -> str:
    p = step.payload if isinstance(step.payload, dict) else {}
    if step.type in ("tool_call", "tool_result"):
        return f"{step.type.replace('_', ' ')} (tool:{p.get('toolName')})"
    if step.type == "model_output":
        calls = tool_calls_of(p)
        return "model answer (" + (", ".join(f"tool:{c.get('toolName')}" for c in calls) if calls else "final answer") + ")"
    if step.type == "model_input":
        return "model call (its request)"
    return f"metadata ({p.get('event')})"


def plan_fork(
    parent: Trace,
    *,
    at: list[int] | None = None,
    tool_result: Any = NO_EDIT,
    response: Any = NO_EDIT,
    live_after: int | None = None,
) -> ForkPlan:
    """Check a fork request against the parent run; raise ``ForkRefused`` saying what to change."""
    at = list(at or [])
    _check_request(parent, at, tool_result is not NO_EDIT, response is not NO_EDIT, live_after)
    if not at:
        assert live_after is not None
        return ForkPlan(parent, live_after + 1, None, None, None, live_after)
    n = at[0]
    step = parent.steps[n]
    if step.type == "metadata":
        raise ForkRefused(
            f"step {n} is a {_describe(step)}: a terminal marker has no continuation", hint="edit a tool result or a model answer"
        )
    if live_after is not None and live_after < n:
        raise ForkRefused(
            f"the edit at step {n} is after the live point {live_after}: it would never be served",
            hint="drop the live point or edit an earlier step",
            options=("live_after",),
        )
    kind, value = ("tool_result", tool_result) if tool_result is not NO_EDIT else ("response", response)
    wanted = "tool_result" if kind == "tool_result" else "model_output"
    if step.type != wanted:
        other = {"tool_result": "tool_result", "model_output": "response"}.get(step.type)
        hint = f"a {_describe(step).split(' (')[0]} is edited with a {other} edit" if other else f"a {kind} edit replaces a {wanted} step"
        raise ForkRefused(f'step {n} is a {_describe(step)}, so a "{kind}" edit cannot replace it', hint=hint, options=(other or "at",))
    return ForkPlan(parent, n, kind, n, value, live_after)


def _check_request(parent: Trace, at: list[int], has_tool_result: bool, has_response: bool, live_after: int | None) -> None:
    """The refusals that need only the request's shape and the run's length."""
    last = len(parent.steps) - 1
    if has_tool_result and has_response:
        raise ForkRefused(
            "an edit is a tool result or a response, not both: one edit per fork",
            hint="fork the child again to change another step",
            options=("tool_result", "response"),
        )
    has_edit = has_tool_result or has_response
    if len(at) > 1:
        if len(set(at)) < len(at):
            raise ForkRefused(f"two edits of step {at[0]}: give each step at most one edit", options=("at",))
        raise ForkRefused("one edit per fork: fork the child again to change a later step", options=("at",))
    if has_edit and not at:
        raise ForkRefused("an edit needs the step it replaces", hint="name the step", options=("at",))
    if at and not has_edit:
        raise ForkRefused(f"step {at[0]} is named but no edit is given", hint=_EDIT_HINT, options=_EDITS[1:])
    if not has_edit and live_after is None:
        raise ForkRefused("nothing to fork", hint=_EDIT_HINT, options=_EDITS)
    if live_after is not None and live_after < (0 if has_edit else -1):
        lowest = "0 with an edit" if has_edit else "-1 (every call live)"
        raise ForkRefused(f"the live point {live_after} is before the run's first step; the lowest is {lowest}", options=("live_after",))
    if live_after is not None and live_after > last:
        raise ForkRefused(
            f"the live point {live_after} is past the run's last step: {parent.id} has steps 0..{last}", options=("live_after",)
        )
    if at and not 0 <= at[0] <= last:
        raise ForkRefused(f"step {at[0]} is past the run's last step: {parent.id} has steps 0..{last}", options=("at",))


def tool_result_text(value: Any) -> str:
    """What the model sees for an edited tool result: a string as is, any other JSON as compact text."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def normalize_answer(answer: Any, ids: CallIds) -> ModelOutput:
    """An edited or scripted answer, in the neutral shape or any provider's, as a neutral model_output."""
    if isinstance(answer, dict) and answer.get("type") in ("final_answer", "tool_calls", "tool_call"):
        calls = tool_calls_of(answer)
        text = answer.get("text")
        if not calls and not (isinstance(text, str) and text):
            raise ForkRefused("the answer holds neither text nor a tool call")
        if answer.get("type") == "final_answer":
            if not isinstance(text, str):
                raise ForkRefused('a final_answer needs "text" (a string)')
            final: FinalAnswer = {"type": "final_answer", "text": text}
            if "stop" in answer:
                final["stop"] = answer["stop"]
            return final
        out_calls: list[ToolCall] = []
        for c in calls:
            name = c.get("toolName")
            if not isinstance(name, str) or not name:
                raise ForkRefused('every tool call needs a "toolName"')
            out_calls.append({"toolCallId": ids.assign(None, name), "toolName": name, "toolInput": c.get("toolInput", {})})
        out: ToolCalls = {"type": "tool_calls", "calls": out_calls}
        if isinstance(text, str) and text:
            out["text"] = text
        if "stop" in answer:
            out["stop"] = answer["stop"]
        return out
    for codec in CODECS.values():
        try:
            found = codec.normalize_answer(answer, ids)
        except ValueError as exc:
            raise ForkRefused(f"the answer is not an answer: {exc}") from exc
        if found is not None:
            return found.copy()
    if isinstance(answer, str) and answer:
        return {"type": "final_answer", "text": answer}
    raise ForkRefused(
        "the answer is not in a shape a recording holds: use a neutral answer "
        '({"type": "final_answer", "text": ...} or {"type": "tool_calls", "calls": [{"toolName", "toolInput"}]}), '
        "an OpenAI message or response body, or Anthropic content blocks"
    )


def fork_session(
    plan: ForkPlan,
    output: str | os.PathLike[str],
    *,
    match: str = "strict",
    tail: str = "upstream",
    script: list[Any] | None = None,
    overwrite: bool = False,
    fsync: bool = True,
    rules: CompareRules = NO_RULES,
    redactor: Redactor | None = None,
    pace: float | None = None,
    order_gap_ms: float | None = DEFAULT_GAP_MS,
    environment: RunEnvironment | None = None,
    parent_media: MediaDocument | None = None,
) -> Session:
    """The session that serves the parent up to the cut and records the child (``rules``, ``redactor``, ``pace``,
    ``order_gap_ms``, ``environment`` as for a replay). ``parent_media``: the parent's media document
    (``cassette.media.load_media``): served in the prefix, and kept for the steps the child copies."""
    parent = plan.parent
    out = Path(output)
    if out.exists() and not overwrite:
        raise CassetteExistsError(
            "the child cassette already exists", path=str(out), hint="choose another file, or allow replacing it", options=("overwrite",)
        )
    child = _child_trace(plan, out)
    ids = _parent_ids(parent)
    response_edit, tool_result_edit = _append_edit(plan, child, ids)
    privacy = Privacy(redactor=redactor, env=replay_substitution(environment, parent))  # the child replaces what its parent did
    if privacy.env is not None:
        child.environment = privacy.redactor.payload(privacy.env.metadata())
    journal = Journal(out, child, overwrite=overwrite, fsync=fsync)
    recorder = RunRecorder(child, journal, privacy=privacy)
    recorder.media = MediaBook(seed=parent_media, spool=spool_path(out), fsync=fsync)
    run = RunPlan(
        prefix=RecordedCalls(parent, upto=_served_upto(plan), rules=rules, explain=explainer(parent, privacy.env)),
        tail=_tail(tail, script, ids),
        edit=Edit(plan.cut, response=response_edit, tool_result=tool_result_edit),
        match=match,
        pace=pace,
        order_gap_ms=order_gap_ms,
    )
    session = Session(run, run_id=parent.id, recorder=recorder, ids=ids)
    session.media_store = parent_media.get("media") if parent_media else None
    return session


def _child_trace(plan: ForkPlan, out: Path) -> Trace:
    """The child's trace: forked from the parent's step at the cut, holding the parent's steps before the edit."""
    parent = plan.parent
    forked_from = parent.steps[plan.cut].id if plan.cut < len(parent.steps) else f"{parent.id}:{plan.cut}"
    child = Trace.new(run_id_for(out.stem), parent_id=parent.id, forked_from_step_id=forked_from)
    prefix_end = plan.edit_at if plan.edit_at is not None else plan.cut
    for step in parent.steps[:prefix_end]:
        child.adopt(step)
    return child


def _parent_ids(parent: Trace) -> CallIds:
    """The tool-call ids of every parent answer, mapped as the parent mapped them."""
    ids = CallIds()
    for step in parent.steps:
        if step.type == "model_output":
            ids.register_calls(step.payload)
    return ids


def _tail(tail: str, script: list[Any] | None, ids: CallIds) -> Upstream | Script:
    """What answers the calls after the cut: the provider (``upstream``), or a script of answers (``script``)."""
    if tail == "upstream":
        return UPSTREAM
    if tail == "script":
        return Script(_script_source(script, ids))
    raise ValueError(f"unknown tail {tail!r}")


def _append_edit(plan: ForkPlan, child: Trace, ids: CallIds) -> tuple[tuple[int, ModelOutput] | None, tuple[str, str] | None]:
    """Write the edit at the cut into the child: (the response edit, the tool result edit), one of them or neither."""
    if plan.edit_kind is None or plan.edit_at is None:
        return None, None
    original = plan.parent.steps[plan.edit_at]
    if plan.edit_kind == "response":
        answer = normalize_answer(plan.edit_value, ids)
        child.append("model_output", answer, timestamp=original.timestamp)
        return (plan.edit_at, answer), None
    payload = original.payload if isinstance(original.payload, dict) else {}
    # Stored as the text the model is shown (the proxy writes it into the request), like every
    # tool result recorded at the network level: a string stays a string, JSON becomes compact text.
    text = tool_result_text(plan.edit_value)
    edited = {"toolCallId": payload.get("toolCallId"), "toolName": payload.get("toolName"), "result": text}
    child.append("tool_result", edited, timestamp=original.timestamp)
    return None, (str(payload.get("toolCallId")), text)


def _served_upto(plan: ForkPlan) -> int:
    """Calls answered from the parent: those whose answer comes before the cut, plus (for a
    response edit) the edited call, and (with a live point after an edit) the recorded
    answers up to the live point, served in order."""
    upto = plan.cut + 1 if plan.edit_kind == "response" else plan.cut
    if plan.live_after is not None and plan.edit_kind is not None:
        upto = max(upto, plan.live_after + 1)
    return upto


def _script_source(script: list[Any] | None, ids: CallIds) -> Callable[[], ModelOutput]:
    answers = list(script or [])

    def source() -> ModelOutput:
        if not answers:
            raise IndexError("the script of answers ran out")
        return normalize_answer(answers.pop(0), ids)

    return source


def discard_reason(session: Session) -> str | None:
    """Why a finished fork's child must not be kept, or ``None`` to keep it.

    The prefix is copied only once the agent has re-run it (spec: Fork Policy): a
    strict fork whose agent diverged before the cut, or an agent that stopped before
    re-running every recorded call up to the cut, leaves no child.
    """
    replay = session.replay
    assert replay is not None and session.cut is not None
    if session.diverged_in_prefix and session.match_mode == "strict":
        return f"the agent diverged from the recorded steps before the cut (step {session.cut})"
    incomplete = set(replay.status()["incomplete"])
    missed = sorted(c.input_step for c in replay.calls if c.output_step <= session.cut and c.input_step in incomplete)
    if missed:
        return (
            f"the agent stopped before re-running (model calls at steps {', '.join(map(str, missed))} of) "
            f"the recorded steps before the cut (step {session.cut})"
        )
    return None
