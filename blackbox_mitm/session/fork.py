"""Forking a recorded run: check the request, plan the cut, build the child session.

A fork re-runs the agent against its parent cassette. Up to the cut every model
call is answered from the recording and must match it (strict; ``--match
sequence`` does not compare). At the cut:

* ``--tool-result`` at a tool_result step N: what the *model sees* changes — the
  proxy rewrites that tool result in the request that carries it and in every
  later request's history. The agent's own tool ran as usual.
* ``--response`` at a model_output step N: the agent gets the edited answer.
* ``--live-after N`` alone (rewind): steps 0..N replay exactly, then it is live.

After the cut, model calls go to the real upstream (``live``) or to a script of
answers. The child cassette holds the parent's steps before the cut verbatim
(same timestamps, same hashes), the edit at the cut with the parent's
timestamp, then whatever the run did next; ``parentId`` / ``forkedFromStepId``
point back. Anything refused raises ``ForkRefused`` with what to change.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blackbox_mitm.cassette.journal import Journal
from blackbox_mitm.cassette.payloads import tool_calls_of
from blackbox_mitm.cassette.trace import Trace, TraceStep, new_trace_id
from blackbox_mitm.codecs import CODECS
from blackbox_mitm.codecs.base import CallIds
from blackbox_mitm.errors import BlackboxError, CassetteExistsError
from blackbox_mitm.matcher import RecordedCalls
from blackbox_mitm.session.engine import Session
from blackbox_mitm.session.recorder import RunRecorder, secrets_from_environ

__all__ = ["ForkPlan", "ForkRefused", "fork_session", "normalize_answer", "plan_fork"]

_MISSING: Any = object()


class ForkRefused(BlackboxError, ValueError):
    """A fork request that cannot be served; the message says what to change."""


@dataclass(slots=True)
class ForkPlan:
    parent: Trace
    cut: int  # the first step whose answer is not the parent's
    edit_kind: str | None  # "tool_result" | "response" | None (rewind)
    edit_at: int | None
    edit_value: Any
    live_after: int | None

    @property
    def edits(self) -> list[dict[str, Any]]:
        return [] if self.edit_kind is None else [{"step": self.edit_at, "kind": self.edit_kind}]


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
    tool_result: Any = _MISSING,
    response: Any = _MISSING,
    live_after: int | None = None,
) -> ForkPlan:
    at = list(at or [])
    last = len(parent.steps) - 1
    if tool_result is not _MISSING and response is not _MISSING:
        raise ForkRefused("give either --tool-result or --response, not both: one edit per fork")
    has_edit = tool_result is not _MISSING or response is not _MISSING
    if len(at) > 1:
        if len(set(at)) < len(at):
            raise ForkRefused(f"two edits of step {at[0]}: give each step at most one edit")
        raise ForkRefused("one edit per fork: fork the child again to change a later step")
    if has_edit and not at:
        raise ForkRefused("an edit needs --at N: the step it replaces")
    if at and not has_edit:
        raise ForkRefused(
            f"--at {at[0]} needs an edit: --tool-result JSON (at a tool_result step) or --response JSON (at a model_output step); to rewind use --live-after N"
        )
    if not has_edit and live_after is None:
        raise ForkRefused("nothing to fork: give --at N with --tool-result or --response, or --live-after N to rewind")
    if live_after is not None and not 0 <= live_after <= last:
        raise ForkRefused(f"--live-after {live_after} is past the run's last step: {parent.id} has steps 0..{last}")
    if not has_edit:
        assert live_after is not None
        return ForkPlan(parent, live_after + 1, None, None, None, live_after)
    n = at[0]
    if not 0 <= n <= last:
        raise ForkRefused(f"--at {n} is past the run's last step: {parent.id} has steps 0..{last}")
    step = parent.steps[n]
    if step.type == "metadata":
        raise ForkRefused(f"step {n} is a {_describe(step)}: a terminal marker has no continuation; edit a tool result or a model answer")
    if live_after is not None and live_after < n:
        raise ForkRefused(
            f"the edit at step {n} is after the live point {live_after}: it would never be served; drop --live-after or edit an earlier step"
        )
    if tool_result is not _MISSING:
        if step.type != "tool_result":
            hint = (
                "a model answer is edited with --response" if step.type == "model_output" else "--tool-result replaces a tool_result step"
            )
            raise ForkRefused(f'step {n} is a {_describe(step)}, so a "tool_result" edit cannot replace it: {hint}')
        return ForkPlan(parent, n, "tool_result", n, tool_result, live_after)
    if step.type != "model_output":
        hint = "a tool result is edited with --tool-result" if step.type == "tool_result" else "--response replaces a model_output step"
        raise ForkRefused(f'step {n} is a {_describe(step)}, so a "response" edit cannot replace it: {hint}')
    return ForkPlan(parent, n, "response", n, response, live_after)


def tool_result_text(value: Any) -> str:
    """What the model sees for an edited tool result: a string as is, any other JSON as compact text."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def normalize_answer(answer: Any, ids: CallIds) -> dict[str, Any]:
    """An edited or scripted answer, in the neutral shape or any provider's, as a neutral model_output."""
    if isinstance(answer, dict) and answer.get("type") in ("final_answer", "tool_calls", "tool_call"):
        calls = tool_calls_of(answer)
        text = answer.get("text")
        if not calls and not (isinstance(text, str) and text):
            raise ForkRefused("the answer holds neither text nor a tool call")
        if answer.get("type") == "final_answer":
            if not isinstance(text, str):
                raise ForkRefused('a final_answer needs "text" (a string)')
            return {k: answer[k] for k in ("type", "text", "stop") if k in answer}
        out_calls = []
        for c in calls:
            name = c.get("toolName")
            if not isinstance(name, str) or not name:
                raise ForkRefused('every tool call needs a "toolName"')
            out_calls.append({"toolCallId": ids.assign(None, name), "toolName": name, "toolInput": c.get("toolInput", {})})
        out: dict[str, Any] = {"type": "tool_calls", "calls": out_calls}
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
            return dict(found)
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
) -> Session:
    """The session that serves the parent up to the cut and records the child."""
    parent = plan.parent
    out = Path(output)
    if out.exists() and not overwrite:
        raise CassetteExistsError("the child cassette already exists; pass --overwrite or choose another -o", path=str(out))
    forked_from = parent.steps[plan.cut].id if plan.cut < len(parent.steps) else f"{parent.id}:{plan.cut}"
    child = Trace.new(new_trace_id(out.stem), parent_id=parent.id, forked_from_step_id=forked_from)
    prefix_end = plan.edit_at if plan.edit_at is not None else plan.cut
    for step in parent.steps[:prefix_end]:
        child.adopt(step)

    ids = CallIds()
    for step in parent.steps:
        if step.type == "model_output":
            ids.register_calls(step.payload)

    response_edit = None
    tool_result_edit = None
    if plan.edit_kind == "tool_result":
        assert plan.edit_at is not None
        original = parent.steps[plan.edit_at]
        payload = original.payload if isinstance(original.payload, dict) else {}
        # Stored as the text the model is shown (the proxy writes it into the request), like every
        # tool result recorded at the network level: a string stays a string, JSON becomes compact text.
        text = tool_result_text(plan.edit_value)
        edited = {"toolCallId": payload.get("toolCallId"), "toolName": payload.get("toolName"), "result": text}
        child.append("tool_result", edited, timestamp=original.timestamp)
        tool_result_edit = (str(payload.get("toolCallId")), text)
    elif plan.edit_kind == "response":
        assert plan.edit_at is not None
        original = parent.steps[plan.edit_at]
        edited = normalize_answer(plan.edit_value, ids)
        child.append("model_output", edited, timestamp=original.timestamp)
        response_edit = (plan.edit_at, edited)

    # Calls answered from the parent: those whose answer comes before the cut, plus
    # (for a --response edit) the edited call, and (with a live point after an edit)
    # the recorded answers up to the live point, served in order.
    serve_upto = plan.cut if plan.edit_kind == "tool_result" else plan.cut + 1 if plan.edit_kind == "response" else plan.cut
    if plan.live_after is not None and plan.edit_kind is not None:
        serve_upto = max(serve_upto, plan.live_after + 1)
    replay = RecordedCalls(parent, upto=serve_upto)

    journal = Journal(out, child, overwrite=overwrite, fsync=fsync)
    recorder = RunRecorder(child, journal, secrets=secrets_from_environ())
    source: Callable[[], dict[str, Any]] | None = None
    if tail == "script":
        answers = list(script or [])

        def source() -> dict[str, Any]:
            if not answers:
                raise IndexError("the script of answers ran out")
            return normalize_answer(answers.pop(0), ids)

    return Session(
        run_id=parent.id,
        recorder=recorder,
        replay=replay,
        match=match,
        tail=tail,
        script=source,
        ids=ids,
        response_edit=response_edit,
        tool_result_edit=tool_result_edit,
        cassette_path=out,
        cut=plan.cut,
    )
