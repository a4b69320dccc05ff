"""A run's timeline for ``blackbox show``: one line per step that a person reads without docs.

``summarize_step`` is the one-line summary every listing shares (``show``, the
tails of ``diff``, fork listings): the model and the last user text for a
``model_input``; the tool calls ``get_weather({"city":"Paris"})`` or the final
answer (and a stop marker) for a ``model_output``; ``name(args)`` for a
``tool_call``; ``name → result`` or ``name → error: ...`` for a ``tool_result``;
the terminal event for ``metadata``. ``build_timeline`` gathers the header
(run, time, lineage, outcome) and the rows as data; ``render_timeline`` writes
them as text.

Times are offsets from the run's start: ``createdAt``, or the first step's
timestamp when that is earlier (a fork's copied prefix keeps its parent's
timestamps, so a fork's early steps predate its ``createdAt``).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from typing import Any

from blackbox_mitm.cassette.payloads import compaction_of, is_terminal, output_text, tokens_of, tool_calls_of
from blackbox_mitm.cassette.trace import Trace, TraceStep

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

SUMMARY_LIMIT = 110
_TEXT_LIMIT = 60
_JSON_LIMIT = 60
_WHITESPACE = re.compile(r"\s+")


@dataclass(slots=True)
class TimelineRow:
    index: int
    type: str
    timestamp: int | float
    offset_ms: int | float
    summary: str

    def to_json(self) -> dict[str, Any]:
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
    terminal: dict[str, Any] | None
    parent_id: str | None = None
    forked_from_step_id: str | None = None
    fork_step: int | None = None
    rows: list[TimelineRow] = field(default_factory=list)
    tokens: dict[str, int] | None = None  # the run's token counts, added up; None when no answer recorded any

    def to_json(self) -> dict[str, Any]:
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


def tokens_text(counts: dict[str, int] | tuple[int, int, int, int]) -> str:
    """``1,200 in (1,000 cached) / 80 out (12 reasoning)``."""
    given_in, given_out, cached, reasoning = (
        counts if isinstance(counts, tuple) else (counts["input"], counts["output"], counts["cachedInput"], counts["reasoning"])
    )
    out = f"{given_in:,} in"
    if cached:
        out += f" ({cached:,} cached)"
    out += f" / {given_out:,} out"
    if reasoning:
        out += f" ({reasoning:,} reasoning)"
    return out


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


# -- one line per step ----------------------------------------------------------------


def summarize_step(step: TraceStep, *, limit: int = SUMMARY_LIMIT) -> str:
    """One line saying what happened at ``step``, at most ``limit`` characters."""
    payload = step.payload
    if not isinstance(payload, dict):
        text = _json(payload, _JSON_LIMIT)
    elif step.type == "model_input":
        text = _model_input(payload)
    elif step.type == "model_output":
        text = _model_output(payload)
    elif step.type == "tool_call":
        text = _call(payload)
    elif step.type == "tool_result":
        text = _tool_result(payload)
    elif step.type == "metadata":
        text = _metadata(payload)
    else:
        text = _json(payload, _JSON_LIMIT)
    return one_line(text, limit)


def _model_input(p: dict[str, Any]) -> str:
    raw = p.get("messages")
    messages: list[Any] = raw if isinstance(raw, list) else []
    parts = []
    model = p.get("model")
    if isinstance(model, str) and model:
        parts.append(one_line(model, 40))
    parts.append(f"{len(messages)} message{'s' if len(messages) != 1 else ''}")
    user = _last_user_text(messages)
    parts.append(f"user: {_quote(user)}" if user is not None else "no user text")
    results = _tool_results_in(messages[-1]) if messages else []
    if results:
        parts.append("then " + ", ".join(results))
    media = _media_in(messages[-1].get("content") if messages and isinstance(messages[-1], dict) else None)
    if media:
        parts.append("with " + ", ".join(media))
    return " · ".join(parts)


def media_text(part: dict[str, Any]) -> str:
    """A media part in words: its type, size and digest (``image/png 70 bytes 8cf8513dd0fb…``), or its reference."""
    what = str(part.get("mediaType") or part.get("type") or "media")
    if isinstance(part.get("sha256"), str):
        return f"{what} {int(part.get('size') or 0):,} bytes {part['sha256'][:12]}…"
    ref = part.get("url") if isinstance(part.get("url"), str) else part.get("file")
    return f"{what} {one_line(str(ref), 40)}" if ref is not None else what


def _media_in(value: Any) -> list[str]:
    """The media parts of a message's content (and of the tool results it carries), in words."""
    found = _media_parts(value)
    return [media_text(p) for p in found[:3]] + ([f"and {len(found) - 3} more"] if len(found) > 3 else [])


def _media_parts(value: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if v.get("type") in ("image", "document", "audio", "video"):
                out.append(v)
            else:
                stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))
    return out


def _last_user_text(messages: list[Any]) -> str | None:
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str) and content.strip():
            return content
        if isinstance(content, list):
            text = " ".join(
                p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
            )
            if text.strip():
                return text
    return None


def _tool_results_in(message: Any) -> list[str]:
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return []
    out = []
    for part in message["content"]:
        if isinstance(part, dict) and part.get("type") == "tool_result":
            name = _name(part.get("toolName"))
            out.append(f"{name} error" if "error" in part else f"{name} result")
    return out


def _model_output(p: dict[str, Any]) -> str:
    calls = tool_calls_of(p)
    text = output_text(p)
    stop = p.get("stop")
    if p.get("type") in ("tool_call", "tool_calls"):
        shown = ", ".join(_call(c) for c in calls[:3]) or "no tool calls"
        if len(calls) > 3:
            shown += f", and {len(calls) - 3} more"
        out = f"calls {shown}"
        if text and text.strip():
            out = f"{_quote(text, 40)} then {out}"
    elif stop == "refusal":
        return f"refused: {_quote(text or '')}"
    else:
        out = f"answer: {_quote(text or '')}"
    media = _media_in(p.get("content"))
    if media:
        out += " + " + ", ".join(media)
    compacted = compaction_of(p)
    if compacted is not None:  # Codex's compaction: the conversation so far, as the provider's opaque data
        out = f"compacted the conversation ({len(compacted['data']):,} chars of opaque data)" + (f" · {out}" if text else "")
    if stop == "length":
        out = "[cut off at max tokens] " + out
    elif isinstance(stop, str) and stop != "refusal":
        out = f"[stop: {stop}] {out}"
    if "tokens" in p:
        out = f"[{tokens_text(tokens_of(p))}] {out}"
    return out


def _call(c: Any) -> str:
    if not isinstance(c, dict):
        return _json(c, _JSON_LIMIT)
    return f"{_name(c.get('toolName'))}({_json(c.get('toolInput'), _JSON_LIMIT)})"


def _tool_result(p: dict[str, Any]) -> str:
    name = _name(p.get("toolName"))
    if "error" in p:
        error = p["error"]
        return f"{name} → error: {one_line(error, _TEXT_LIMIT) if isinstance(error, str) else _json(error, _JSON_LIMIT)}"
    return f"{name} → {_json(p.get('result'), 80)}"


def _metadata(p: dict[str, Any]) -> str:
    event = p.get("event")
    if event == "run_completed":
        result = p.get("result")
        return "run completed" + (f": {_quote(result)}" if isinstance(result, str) else "")
    if event == "run_failed":
        return "run failed: " + _failure(p)
    rest = {k: v for k, v in p.items() if k != "event"}
    head = one_line(event, 40) if isinstance(event, str) else "metadata"
    return head + (f" {_json(rest, 80)}" if rest else "")


def _failure(p: dict[str, Any]) -> str:
    reason = p.get("reason")
    out = one_line(reason, 40) if isinstance(reason, str) else "unknown reason"
    details = []
    if "exitCode" in p:
        details.append(f"exit code {_json(p['exitCode'], 12)}")
    if "inFlight" in p:
        details.append(f"{_json(p['inFlight'], 12)} calls in flight")
    if "maxSteps" in p:
        details.append(f"limit {_json(p['maxSteps'], 12)} steps")
    if "toolName" in p:
        details.append(f"tool {_name(p['toolName'])}")
    if details:
        out += f" ({', '.join(details)})"
    message = p.get("message")
    if isinstance(message, str) and message:
        out += f": {_quote(message)}"
    return out


def outcome_text(terminal: Any) -> str:
    """How the run ended, in words, from its terminal metadata payload (None: no end marker)."""
    if not isinstance(terminal, dict):
        return "no end marker (still recording, or stopped without one)"
    if terminal.get("event") == "run_completed":
        return "ended: run completed"
    reason = terminal.get("reason")
    return "ended: run failed" + (f" ({one_line(reason, 40)})" if isinstance(reason, str) else "")


# -- text helpers ---------------------------------------------------------------------


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs become one space), cut to ``limit`` with "…",
    with lone surrogates written as ``\\udXXX`` so that any terminal can print it."""
    flat = _WHITESPACE.sub(" ", text).strip()
    if len(flat) > limit:
        flat = flat[: max(limit - 1, 0)].rstrip() + "…"
    return flat.encode("utf-8", "backslashreplace").decode("utf-8")


def _quote(text: str, limit: int = _TEXT_LIMIT) -> str:
    return f'"{one_line(text, limit)}"'


def _name(name: Any) -> str:
    return one_line(name, 40) if isinstance(name, str) and name else "?"


def _json(value: Any, limit: int) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except RecursionError:
        text = "(nested too deep to show)"
    except (TypeError, ValueError):
        text = repr(value)
    return one_line(text, limit)


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
