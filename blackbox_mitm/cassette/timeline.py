"""A run's timeline for ``blackbox show``: one line per step that a person reads without docs.

``summarize_step`` (``cassette.summary``, importable from here too) is the
one-line summary of a step every listing shares. ``build_timeline`` gathers the header
(run, time, lineage, outcome) and the rows as data; ``render_timeline`` writes
them as text.

Times are offsets from the run's start: ``createdAt``, or the first step's
timestamp when that is earlier (a fork's copied prefix keeps its parent's
timestamps, so a fork's early steps predate its ``createdAt``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TypedDict

from blackbox_mitm.cassette.payloads import is_terminal, tokens_of
from blackbox_mitm.cassette.records import JSONObject
from blackbox_mitm.cassette.summary import SUMMARY_LIMIT, one_line, outcome_text, summarize_step, tokens_text
from blackbox_mitm.cassette.trace import Trace

__all__ = [
    "Timeline",
    "TimelineRow",
    "build_timeline",
    "fork_step_index",
    "format_offset",
    "one_line",
    "outcome_text",
    "render_timeline",
    "summarize_step",
    "token_totals",
    "tokens_text",
]


class TimelineRowJSON(TypedDict):
    index: int
    type: str
    timestamp: int | float
    offsetMs: int | float
    offset: str
    summary: str


class TimelineJSON(TypedDict):
    """``blackbox show --json``'s header and rows."""

    run: str
    version: int
    createdAt: int | float
    created: str | None
    steps: int
    durationMs: int | float
    outcome: str
    terminal: JSONObject | None
    parentId: str | None
    forkedFromStepId: str | None
    forkStep: int | None
    tokens: dict[str, int] | None
    timeline: list[TimelineRowJSON]


@dataclass(slots=True)
class TimelineRow:
    index: int
    type: str
    timestamp: int | float
    offset_ms: int | float
    summary: str

    def to_json(self) -> TimelineRowJSON:
        return {
            "index": self.index,
            "type": self.type,
            "timestamp": self.timestamp,
            "offsetMs": self.offset_ms,
            "offset": format_offset(self.offset_ms),
            "summary": self.summary,
        }


@dataclass(slots=True)
class Timeline:
    """What ``show`` prints, as data."""

    run: str
    version: int
    created_at: int | float
    steps: int
    duration_ms: int | float
    outcome: str
    terminal: JSONObject | None  # the terminal metadata payload, as recorded
    parent_id: str | None = None
    forked_from_step_id: str | None = None
    fork_step: int | None = None
    rows: list[TimelineRow] = field(default_factory=list)
    tokens: dict[str, int] | None = None  # the run's token counts, added up; None when no answer recorded any

    def to_json(self) -> TimelineJSON:
        return {
            "run": self.run,
            "version": self.version,
            "createdAt": self.created_at,
            "created": _iso(self.created_at),
            "steps": self.steps,
            "durationMs": self.duration_ms,
            "outcome": self.outcome,
            "terminal": self.terminal,
            "parentId": self.parent_id,
            "forkedFromStepId": self.forked_from_step_id,
            "forkStep": self.fork_step,
            "tokens": self.tokens,
            "timeline": [row.to_json() for row in self.rows],
        }


def build_timeline(trace: Trace, *, limit: int = SUMMARY_LIMIT) -> Timeline:
    """The header and one summarized row per step."""
    origin = trace.createdAt
    if trace.steps and trace.steps[0].timestamp < origin:
        origin = trace.steps[0].timestamp
    rows = [TimelineRow(s.index, s.type, s.timestamp, _offset(s.timestamp, origin), summarize_step(s, limit=limit)) for s in trace.steps]
    terminal = next((s.payload for s in reversed(trace.steps) if s.type == "metadata" and is_terminal(s.payload)), None)
    return Timeline(
        run=trace.id,
        version=trace.version,
        created_at=trace.createdAt,
        steps=len(trace.steps),
        duration_ms=rows[-1].offset_ms if rows else 0,
        outcome=outcome_text(terminal),
        terminal=terminal,
        parent_id=trace.parentId,
        forked_from_step_id=trace.forkedFromStepId,
        fork_step=fork_step_index(trace),
        rows=rows,
        tokens=token_totals(trace),
    )


def token_totals(trace: Trace) -> dict[str, int] | None:
    """The run's recorded token counts added up over its answers (``input``, ``output``, ``cachedInput``, ``reasoning``, ``calls``)."""
    totals = {"input": 0, "output": 0, "cachedInput": 0, "reasoning": 0, "calls": 0}
    for step in trace.steps:
        if step.type == "model_output" and isinstance(step.payload, dict) and "tokens" in step.payload:
            for key, n in zip(("input", "output", "cachedInput", "reasoning"), tokens_of(step.payload), strict=True):
                totals[key] += n
            totals["calls"] += 1
    return totals if totals["calls"] else None


def render_timeline(timeline: Timeline) -> str:
    """The timeline as text: a header, then ``index  type  +time  summary`` per step."""
    t = timeline
    lines = [
        f"run {t.run}",
        f"recorded {_human_time(t.created_at)} · {t.steps} step{'s' if t.steps != 1 else ''} over {format_offset(t.duration_ms)[1:]} · {t.outcome}",
    ]
    if t.tokens is not None:
        lines.append(f"tokens {tokens_text(t.tokens)} over {t.tokens['calls']} answer{'s' if t.tokens['calls'] != 1 else ''}")
    if t.parent_id is not None:
        lines.append(_lineage(t))
    if not t.rows:
        lines.append("(no steps recorded)")
        return "\n".join(lines) + "\n"
    width = max(len(r.type) for r in t.rows)
    number = len(str(t.rows[-1].index))
    lines.append("")
    lines.append(f"{'#':>{number}}  {'step':<{width}}  {'time':>8}  what happened")
    for row in t.rows:
        if t.fork_step is not None and row.index == t.fork_step and t.parent_id is not None:
            lines.append(
                f"{'':>{number}}  ── forked here: the steps above are {t.parent_id}'s, copied; the steps below are this run's own ──"
            )
        lines.append(f"{row.index:>{number}}  {row.type:<{width}}  {format_offset(row.offset_ms):>8}  {row.summary}")
    return "\n".join(lines) + "\n"


def _lineage(t: Timeline) -> str:
    at = f" at step {t.fork_step}" if t.fork_step is not None else ""
    step_id = f" ({t.forked_from_step_id})" if t.forked_from_step_id else ""
    return f"forked from {t.parent_id}{at}{step_id}"


def fork_step_index(trace: Trace) -> int | None:
    """The parent step index a fork branched at, read from ``forkedFromStepId`` (``parent:N``)."""
    step_id = trace.forkedFromStepId
    if not step_id:
        return None
    _, sep, tail = step_id.rpartition(":")
    return int(tail) if sep and tail.isascii() and tail.isdigit() else None


def format_offset(ms: int | float) -> str:
    """``+0.41s``, ``+2m05s``, ``+1h02m``: time since the run's start."""
    sign = "-" if ms < 0 else "+"
    seconds = abs(ms) / 1000
    if seconds < 60:
        return f"{sign}{seconds:.2f}s"
    if seconds < 3600:
        m, s = divmod(int(seconds), 60)
        return f"{sign}{m}m{s:02d}s"
    h, rest = divmod(int(seconds), 3600)
    return f"{sign}{h}h{rest // 60:02d}m"


def _offset(timestamp: int | float, origin: int | float) -> int | float:
    delta = timestamp - origin
    return int(delta) if float(delta).is_integer() else delta


def _human_time(ms: int | float) -> str:
    try:
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms since the epoch"


def _iso(ms: int | float) -> str | None:
    try:
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None
