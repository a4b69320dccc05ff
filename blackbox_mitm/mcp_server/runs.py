"""What one file of a named folder is, read once: a cassette (verified, summarized), a replay report, or neither.

``read_entry`` reads and verifies a cassette the way ``blackbox verify`` does
(``codecs.verified.verify_file``: never touches a journal beside it) and
summarizes it the way ``blackbox show``'s header does (``build_timeline``). A
small plain ``.json`` file that holds a replay status (``model_calls`` and
``divergences``, what ``blackbox replay --report`` writes) is a report. The
result is kept by ``Folders.cached`` while the file is unchanged; the trace is
not kept (a listing must not hold every run in memory), ``load_entry`` reads
it again for the tools that need its steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from blackbox_mitm.cassette.timeline import build_timeline
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.cassette.verify import Problem
from blackbox_mitm.codecs.verified import verify_file
from blackbox_mitm.errors import BlackboxError
from blackbox_mitm.mcp_server.folders import Entry, Folders

__all__ = ["CASSETTE", "OTHER", "REPORT", "UNREADABLE", "FileFacts", "facts", "load_entry"]

CASSETTE, REPORT, OTHER, UNREADABLE = "cassette", "report", "other", "unreadable"
_REPORT_MAX_BYTES = 1 << 20  # a replay status is a few KB; a bigger file is not read to find out


@dataclass(frozen=True, slots=True)
class FileFacts:
    """What a file is; for a cassette its header figures and its verification problems (empty: it verifies)."""

    kind: str
    run: str | None = None
    steps: int = 0
    model_calls: int = 0
    outcome: str = ""
    created: str | None = None
    parent: str | None = None
    fork_step: int | None = None
    problems: tuple[Problem, ...] = ()
    why: str = ""  # unreadable: the reason; report: its verdict
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def verified(self) -> bool:
        return self.kind == CASSETTE and not self.problems


def facts(folders: Folders, entry: Entry) -> FileFacts:
    """The facts of ``entry``, read once while it is unchanged."""
    result: FileFacts = folders.cached(entry, "facts", lambda e: _read(e)[0])
    return result


def load_entry(folders: Folders, entry: Entry) -> tuple[FileFacts, Trace | None]:
    """The facts and, for a cassette that could be parsed, its trace (read again: traces are not kept)."""
    found, trace = _read(entry)
    folders.cached(entry, "facts", lambda e: found)
    return found, trace


def _read(entry: Entry) -> tuple[FileFacts, Trace | None]:
    if entry.escapes:
        return FileFacts(UNREADABLE, why="a symbolic link to a file outside its folder: not read"), None
    report = _report(entry)
    if report is not None:
        return report, None
    try:
        result = verify_file(entry.path)
    except (BlackboxError, OSError) as exc:
        return FileFacts(UNREADABLE, why=str(exc).removeprefix(f"{entry.path}: ")), None
    trace = result.trace
    if trace is None:
        first = result.problems[0] if result.problems else None
        if first is not None and (first.where == "$" or (first.where == "$.version" and "missing" in first.reason)):
            return FileFacts(OTHER, why="not a cassette"), None
        return FileFacts(CASSETTE, steps=result.steps, problems=tuple(result.problems)), None
    t = build_timeline(trace)
    return (
        FileFacts(
            CASSETTE,
            run=trace.id,
            steps=len(trace.steps),
            model_calls=sum(1 for s in trace.steps if s.type == "model_input"),
            outcome=t.outcome,
            created=t.to_json()["created"],
            parent=trace.parentId,
            fork_step=t.fork_step,
            problems=tuple(result.problems),
        ),
        trace,
    )


def _report(entry: Entry) -> FileFacts | None:
    """A replay status file's facts, or None when the file is not one (a cassette, or too big to be one)."""
    if not entry.name.endswith(".json") or entry.key[0] > _REPORT_MAX_BYTES:
        return None
    try:
        raw = entry.path.read_bytes()
        if b'"divergences"' not in raw:  # not a replay status: no need to parse it twice
            return None
        data = orjson.loads(raw)
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(data, dict) or "model_calls" not in data or "divergences" not in data or ("steps" in data and "version" in data):
        return None
    run = data.get("run")
    return FileFacts(REPORT, run=run if isinstance(run, str) else None, why=str(data.get("verdict", "")))
