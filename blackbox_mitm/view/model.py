"""The data a ``blackbox view`` page embeds: each run's steps, with repeated texts stored once.

A Claude Code-sized run sends the same 7 KB system prompt and 30 KB of tool
definitions with every model call, and each request repeats the whole history
before it. ``Pool`` keeps each distinct message, tool definition and system
prompt once (keyed by its canonical JSON); a ``model_input`` step then holds
references into it::

    {"m": [3, 4, 9], "t": [0, 1], "s": 2, "x": {"model": "...", "params": {...}}, "h": 2}

``m`` the messages, ``t`` the tool definitions, ``s`` the system prompt (absent
when there is none), ``x`` every other field as recorded, ``h`` how many leading
messages it shares with an earlier request (the page shows the rest, the new
turn, first). Other steps keep their payload as recorded.

A step is ``[index, type, timestamp, summary, payload]``; the summary is
``blackbox show``'s. A run that begins with another embedded run's steps (a
fork's copied prefix, the other side of a diff) stores only where they part:
``shared = {"run": id, "count": n}`` and its steps from ``n`` on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import orjson

from blackbox_mitm.cassette.payloads import tool_calls_of
from blackbox_mitm.cassette.records import ExchangeRow, JSONObject, MediaRow
from blackbox_mitm.cassette.timeline import build_timeline
from blackbox_mitm.cassette.trace import Trace, TraceStep
from blackbox_mitm.codecs.verified import verify_trace

__all__ = ["ExchangesView", "MediaView", "Pool", "PooledInput", "RunData", "RunHeader", "SharedSteps", "model_calls", "run_data"]

_HISTORY_LOOKBACK = 8  # earlier requests a model_input's history is compared with
_PROBLEMS_SHOWN = 5


class ExchangesView(TypedDict):
    """A run's other HTTP exchanges as the page lists them, or why they cannot be read (``rows`` empty then)."""

    rows: list[ExchangeRow]
    notKept: list[str]
    error: str | None


class MediaView(TypedDict):
    rows: list[MediaRow]
    error: str | None


class VerifyView(TypedDict):
    ok: bool
    problems: list[str]  # the first few
    count: int


class RunHeader(TypedDict):
    """A run's figures at the top of its page (``blackbox show``'s, and the page's own)."""

    id: str
    file: str | None
    version: int
    createdAt: int | float
    origin: int | float
    created: str | None
    durationMs: int | float
    stepCount: int
    outcome: str
    terminal: JSONObject | None  # the terminal metadata payload as recorded
    parentId: str | None
    forkedFromStepId: str | None
    forkStep: int | None
    modelCalls: int
    toolCalls: int
    tokens: dict[str, int] | None
    verify: VerifyView
    calls: list[list[Any]]  # model_calls' rows
    exchanges: ExchangesView | None
    media: MediaView | None


class SharedSteps(TypedDict):
    """The leading steps a run shares with another embedded run: its id, and how many."""

    run: str
    count: int


class PooledInput(TypedDict):
    """A model_input by reference into the pool (module docstring); ``raw``: one not of the spec's shape, as recorded."""

    m: NotRequired[list[int]]
    t: NotRequired[list[int]]
    s: NotRequired[int]
    x: NotRequired[JSONObject]
    h: NotRequired[int]
    raw: NotRequired[JSONObject]


@dataclass(slots=True)
class Pool:
    """Distinct JSON values, each stored once and referred to by its position."""

    values: list[Any] = field(default_factory=list)
    _index: dict[bytes, int] = field(default_factory=dict)

    def ref(self, value: Any) -> int:
        key = _key(value)
        found = self._index.get(key)
        if found is None:
            found = self._index[key] = len(self.values)
            self.values.append(value)
        return found


@dataclass(slots=True)
class RunData:
    """One embedded run: its header figures and its (pooled) steps."""

    trace: Trace
    header: RunHeader
    steps: list[list[Any]]
    shared: SharedSteps | None = None
    all_steps: list[list[Any]] = field(default_factory=list)  # with the shared ones: in memory only

    def to_json(self) -> JSONObject:
        out: JSONObject = dict(self.header)
        out["steps"] = self.steps
        out["shared"] = self.shared
        return out


def run_data(trace: Trace, pool: Pool, *, path: Path | None = None, base: RunData | None = None) -> RunData:
    """The page's record of ``trace``; with ``base``, the steps both runs share are stored once (in ``base``)."""
    timeline = build_timeline(trace)
    problems = verify_trace(trace)
    shared_count = _shared_prefix(base.trace, trace) if base is not None else 0
    header: RunHeader = {
        "id": trace.id,
        "file": None if path is None else str(path),
        "version": trace.version,
        "createdAt": trace.createdAt,
        "origin": _origin(trace),
        "created": timeline.to_json()["created"],
        "durationMs": timeline.duration_ms,
        "stepCount": len(trace.steps),
        "outcome": timeline.outcome,
        "terminal": timeline.terminal,
        "parentId": trace.parentId,
        "forkedFromStepId": trace.forkedFromStepId,
        "forkStep": timeline.fork_step,
        "modelCalls": sum(1 for s in trace.steps if s.type == "model_input"),
        "toolCalls": _tool_calls(trace),
        "tokens": timeline.tokens,
        "verify": {
            "ok": not problems,
            "problems": [str(p) for p in problems[:_PROBLEMS_SHOWN]],
            "count": len(problems),
        },
        "calls": model_calls(trace),
        "exchanges": _exchanges(trace, path),
        "media": _media(trace, path),
    }
    before = base.all_steps[:shared_count] if base is not None else []
    summaries = [row.summary for row in timeline.rows]
    steps = [_step(s, summaries[s.index], pool) for s in trace.steps[shared_count:]]
    _mark_history(steps, before)
    shared: SharedSteps | None = {"run": base.trace.id, "count": shared_count} if base is not None and shared_count else None
    return RunData(trace, header, steps, shared, before + steps)


def _exchanges(trace: Trace, path: Path | None) -> ExchangesView | None:
    """The run's other HTTP exchanges as ``blackbox show`` lists them (None: it kept none), or why they cannot be read."""
    from blackbox_mitm.cassette.exchanges import exchange_rows, exchanges_ref_of, load_exchanges
    from blackbox_mitm.errors import CassetteError

    ref = exchanges_ref_of(trace)
    if ref is None or path is None:
        return None
    try:
        document = load_exchanges(path, ref)
    except CassetteError as exc:
        return {"rows": [], "notKept": [], "error": str(exc)}
    return {"rows": exchange_rows(document, _origin(trace)), "notKept": list(document.get("notKept") or []), "error": None}


_IMG_INLINE_BYTES = 512 * 1024  # an image up to this size is shown on the page (a data: URL), larger ones by digest only


def _media(trace: Trace, path: Path | None) -> MediaView | None:
    """The run's stored media as ``blackbox show`` lists them, small images with their bytes (None: it keeps none)."""
    from blackbox_mitm.cassette.media import load_media, media_rows
    from blackbox_mitm.errors import CassetteError

    if path is None:
        return None
    try:
        document = load_media(path, trace)
    except CassetteError as exc:
        return {"rows": [], "error": str(exc)}
    if document is None:
        return None
    rows = media_rows(document)
    for row in rows:
        entry = (document.get("media") or {}).get(row["sha256"])
        kind = str(row.get("mediaType") or "")
        if (
            row["kept"]
            and kind in ("image/png", "image/jpeg", "image/gif", "image/webp")
            and int(row.get("size") or 0) <= _IMG_INLINE_BYTES
        ):
            row["src"] = f"data:{kind};base64,{entry.get('data', '') if entry else ''}"
    return {"rows": rows, "error": None}


def model_calls(trace: Trace) -> list[list[Any]]:
    """Each model call as ``[input step, output step or None, start offset, end offset]`` (ms from the run's start).

    A recorded call is its ``model_input`` followed by the ``model_output`` that
    answered it; their timestamps are the request's and the response's, so the
    bar from one to the other is the call's latency. Overlapping calls keep
    their own timestamps, so their bars overlap on the page.
    """
    origin = _origin(trace)
    out: list[list[Any]] = []
    steps = trace.steps
    for i, step in enumerate(steps):
        if step.type != "model_input":
            continue
        nxt = steps[i + 1] if i + 1 < len(steps) else None
        if nxt is not None and nxt.type == "model_output":
            out.append([i, i + 1, step.timestamp - origin, nxt.timestamp - origin])
        else:
            out.append([i, None, step.timestamp - origin, step.timestamp - origin])
    return out


def _tool_calls(trace: Trace) -> int:
    steps = sum(1 for s in trace.steps if s.type == "tool_call")
    if steps:
        return steps
    # A recorded agent whose tools are not wrapped still asked for them: count the model's requests.
    return sum(len(tool_calls_of(s.payload)) for s in trace.steps if s.type == "model_output")


def _origin(trace: Trace) -> int | float:
    origin = trace.createdAt
    if trace.steps and trace.steps[0].timestamp < origin:
        origin = trace.steps[0].timestamp
    return origin


def _shared_prefix(a: Trace, b: Trace) -> int:
    n = 0
    for sa, sb in zip(a.steps, b.steps, strict=False):
        if sa.hash != sb.hash:
            break
        n += 1
    return n


def _step(step: TraceStep, summary: str, pool: Pool) -> list[Any]:
    payload = step.payload
    if step.type == "model_input" and isinstance(payload, dict):
        payload = _pooled_input(payload, pool)
    return [step.index, step.type, step.timestamp, summary, payload]


def _pooled_input(payload: JSONObject, pool: Pool) -> PooledInput:
    messages = payload.get("messages")
    tools = payload.get("tools")
    system = payload.get("systemPrompt")
    if not isinstance(messages, list) or not isinstance(tools, list) or not (system is None or isinstance(system, str)):
        return {"raw": payload}  # not the spec's shape (verify says so): shown as recorded
    out: PooledInput = {"m": [pool.ref(m) for m in messages], "t": [pool.ref(t) for t in tools]}
    if "systemPrompt" in payload:
        out["s"] = pool.ref(system)
    rest = {k: v for k, v in payload.items() if k not in ("messages", "tools", "systemPrompt")}
    if rest:
        out["x"] = rest
    return out


def _mark_history(steps: list[list[Any]], before: list[list[Any]]) -> None:
    """Set ``h`` on each pooled model_input: the leading messages it shares with one of the last few requests."""
    earlier: list[list[int]] = [s[4]["m"] for s in before if s[1] == "model_input" and isinstance(s[4], dict) and "m" in s[4]]
    for step in steps:
        payload = step[4]
        if step[1] != "model_input" or not isinstance(payload, dict) or "m" not in payload:
            continue
        refs: list[int] = payload["m"]
        best = 0
        for prev in earlier[-_HISTORY_LOOKBACK:]:
            n = 0
            for x, y in zip(prev, refs, strict=False):
                if x != y:
                    break
                n += 1
            best = max(best, n)
        payload["h"] = min(best, max(len(refs) - 1, 0))  # the last message is always the new turn
        earlier.append(refs)


def _key(value: Any) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        import json

        return json.dumps(value, sort_keys=True, ensure_ascii=True).encode()
