"""The read tools' answers, as text: what ``blackbox show``, ``forks``, ``diff`` and ``verify`` say, fenced and bounded.

Each function takes the ``Folders`` and the tool's arguments and returns the
text the model gets: the server's own line (counts, what was done, how to page
on; no name read from the folders, not even a file's) and one untrusted-data block (``untrusted.fence``) with everything read from
the files. They call the functions the commands call — ``build_timeline`` /
``render_timeline``, ``session.lineage.list_forks`` / ``render_forks``,
``codecs.verified.diff_verified`` and ``cassette.render``, ``verify_file``,
``matcher.render_report`` — and nothing here writes, records, replays, forks or
opens a socket. A cassette that does not verify is said to, and its steps are
not served (``verify_run`` lists its problems). A refusal raises ``ToolRefused``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import orjson

from blackbox_mitm.cassette.render import render_diff, render_verify
from blackbox_mitm.cassette.timeline import build_timeline, render_timeline
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.cassette.verify import VerifyResult
from blackbox_mitm.codecs.verified import diff_verified
from blackbox_mitm.errors import BlackboxError, CassetteError
from blackbox_mitm.mcp_server.folders import Entry, Folders, RunNameRefused
from blackbox_mitm.mcp_server.runs import CASSETTE, REPORT, UNREADABLE, FileFacts, facts, load_entry
from blackbox_mitm.mcp_server.untrusted import MAX_BLOCK, fence

__all__ = ["PAYLOAD_LIMIT", "ToolRefused", "diff_runs", "list_forks", "list_runs", "replay_report", "show_run", "verify_run"]

PAGE_RUNS = 20
MAX_RUNS = 100
PAGE_STEPS = 50
MAX_STEPS = 200
PAYLOAD_LIMIT = 4_000  # characters of one step's payload JSON per page
NO_TOKENS = "Cassettes keep no token counts or costs (a provider's usage fields are refused when recording), so none are shown."


class ToolRefused(BlackboxError, ValueError):
    """A tool call that cannot be answered: the message says why and what to ask instead."""


def _cassette(folders: Folders, run: str) -> tuple[Entry, FileFacts, Trace | None]:
    try:
        entry = folders.resolve(run, by_id=lambda e: _cassette_id(facts(folders, e)))
    except RunNameRefused as exc:
        raise ToolRefused(f"{exc}" + (f"; {exc.hint}" if exc.hint else "")) from exc
    found, trace = load_entry(folders, entry)
    if found.kind != CASSETTE:  # what the file holds is not quoted here, outside the untrusted block
        what = {REPORT: "a replay report (replay_report reads it)", UNREADABLE: "a file that cannot be read as a cassette"}
        raise ToolRefused(f"that file is not a cassette: it is {what.get(found.kind, 'some other JSON file')}; list_runs shows the runs")
    return entry, found, trace


def _cassette_id(found: FileFacts) -> str | None:
    return found.run if found.kind == CASSETTE else None


def _unverified(entry: Entry, found: FileFacts, tool: str) -> str:
    lines = render_verify(VerifyResult(entry.path, found.steps, list(found.problems)), entry.shown, all_hint="verify_run lists them")
    block = fence("\n".join(lines))
    return (
        f"{tool}: this cassette DOES NOT VERIFY ({len(found.problems)} problem{'s' if len(found.problems) != 1 else ''}): "
        "its steps are not served, as they could have been altered. verify_run lists every problem.\n" + block.text
    )


# -- list_runs -----------------------------------------------------------------------------


def list_runs(folders: Folders, *, offset: int = 0, limit: int = PAGE_RUNS) -> str:
    """One line per file of the folders, newest first, a page at a time; only the page's files are read."""
    limit = max(1, min(limit, MAX_RUNS))
    offset = max(0, offset)
    entries = folders.entries()
    page = entries[offset : offset + limit]
    kinds: dict[str, int] = {}
    lines = []
    for entry in page:
        found = facts(folders, entry)
        kind = "unverified" if found.kind == CASSETTE and not found.verified else found.kind
        kinds[kind] = kinds.get(kind, 0) + 1
        lines.append(f"{entry.shown}: {_run_line(found)}")
    head = f"list_runs: {len(entries)} cassette-named file{'s' if len(entries) != 1 else ''} ({folders.describe()}), newest first"
    if not page:
        head += f"; none from position {offset + 1}" if entries else "; there are no runs to list"
        return head + "."
    counted = ", ".join(f"{n} {_KIND_WORDS[k]}" for k, n in sorted(kinds.items()))
    head += f"; shown: {offset + 1}–{offset + len(page)} ({counted})."
    if offset + len(page) < len(entries):
        head += f" More: call list_runs with offset={offset + len(page)}."
    block = fence("\n".join(lines))
    return "\n".join([head, NO_TOKENS, block.text]) + block.note("call list_runs with a smaller limit")


_KIND_WORDS = {
    "cassette": "verified cassettes",
    "unverified": "cassettes that DO NOT VERIFY",
    "report": "replay reports",
    "other": "other JSON files",
    "unreadable": "unreadable files",
}


def _run_line(f: FileFacts) -> str:
    if f.kind == REPORT:
        return f"a replay report of run {f.run} (verdict: {f.why or '?'}); replay_report reads it"
    if f.kind != CASSETTE:
        return f"not read as a run ({f.kind}: {f.why})"
    if f.run is None:
        return f"a cassette that DOES NOT VERIFY and cannot be read: {f.problems[0]}"
    parent = f"parent {f.parent} (forked at step {f.fork_step})" if f.parent else "no parent"
    calls = f"{f.model_calls} model call{'s' if f.model_calls != 1 else ''}"
    check = "verifies" if f.verified else f"DOES NOT VERIFY: {f.problems[0]}"
    return f"run {f.run} · {f.steps} steps · {calls} · {f.outcome} · recorded {f.created} · {parent} · {check}"


# -- show_run ------------------------------------------------------------------------------


def show_run(
    folders: Folders, run: str, *, start: int = 0, count: int = PAGE_STEPS, payloads: bool = False, payload_offset: int = 0
) -> str:
    """``blackbox show``'s timeline for steps ``start``..``start+count-1``; with ``payloads``, each step's payload too."""
    entry, found, trace = _cassette(folders, run)
    if not found.verified or trace is None:
        return _unverified(entry, found, "show_run")
    count = max(1, min(count, MAX_STEPS))
    start = max(0, start)
    timeline = build_timeline(trace)
    rows = timeline.rows[start : start + count]
    if not rows:
        return f"show_run: the run has {len(trace.steps)} steps; there is none from step {start} (steps are numbered from 0)."
    text = render_timeline(dataclasses.replace(timeline, rows=rows))
    end = rows[-1].index
    cut_note = ""
    if payloads:
        parts, end, cut_note = _payloads(trace, start, end, max(0, payload_offset), budget=MAX_BLOCK - len(text))
        if end < rows[-1].index:  # the payloads filled the page first: the page ends where they do
            text = render_timeline(dataclasses.replace(timeline, rows=rows[: end - start + 1]))
        text += "\npayloads:\n" + "\n".join(parts)
    head = f"show_run: steps {start}–{end} of 0–{len(trace.steps) - 1}; the cassette verifies."
    if end < len(trace.steps) - 1:
        head += f" More: call show_run with the same run and start={end + 1}."
    if not payloads:
        head += " Each step's payload: the same call with payloads=true."
    block = fence(f"file: {entry.shown}\n{text}")
    return "\n".join([head, block.text]) + cut_note + block.note("call show_run with a smaller count")


def _payloads(trace: Trace, start: int, end: int, skip: int, *, budget: int) -> tuple[list[str], int, str]:
    """Each step's payload JSON from character ``skip``, cut at ``PAYLOAD_LIMIT``: (parts, last step shown, the paging note)."""
    parts: list[str] = []
    notes: list[str] = []
    used = 0
    last = start
    for step in trace.steps[start : end + 1]:
        whole = orjson.dumps(step.payload, option=orjson.OPT_INDENT_2).decode()
        shown = whole[skip : skip + PAYLOAD_LIMIT]
        if parts and used + len(shown) > budget:
            break
        part = f"--- step {step.index} ({step.type}) payload, characters {skip}–{skip + len(shown)} of {len(whole)} ---\n{shown}"
        parts.append(part)
        used += len(part)
        last = step.index
        if skip + len(shown) < len(whole):
            notes.append(f"step {step.index}: start={step.index}, count=1, payloads=true, payload_offset={skip + len(shown)}")
    note = ""
    if notes:
        note = (
            "\n(payloads cut at "
            + f"{PAYLOAD_LIMIT:,} characters; to read on, call show_run with the same run and "
            + "; ".join(notes)
            + ")"
        )
    return parts, last, note


# -- list_forks ----------------------------------------------------------------------------


def list_forks(folders: Folders, run: str) -> str:
    """``blackbox forks``: the run's forks in every named folder, each diffed against it; forks that do not verify are skipped."""
    from blackbox_mitm.session.lineage import ForkListing, ForkSummary, Skipped, render_forks
    from blackbox_mitm.session.lineage import list_forks as find_forks

    entry, found, trace = _cassette(folders, run)
    if not found.verified or trace is None:
        return _unverified(entry, found, "list_forks")
    readable = [e for e in folders.entries() if not e.escapes]  # a link out of its folder is never read
    shown = {str(e.path): e for e in readable}
    listing = find_forks(entry.path, files=[e.path for e in readable])
    forks: list[ForkSummary] = []
    skipped: list[Skipped] = [{"file": _shown(shown, s["file"]), "why": s["why"]} for s in listing["skipped"]]
    for fork in listing["forks"]:
        child = shown[fork["file"]]
        fork["file"] = child.shown
        child_facts = facts(folders, child)
        if child_facts.verified:
            forks.append(fork)
        else:  # never served as if it did: its divergence could be made up
            skipped.append({"file": child.shown, "why": f"DOES NOT VERIFY: {child_facts.problems[0]}"})
    shown_listing: ForkListing = {"run": trace.id, "parent": {**listing["parent"], "file": entry.shown}, "forks": forks, "skipped": skipped}
    head = (
        f"list_forks: {len(forks)} fork{'s' if len(forks) != 1 else ''} of the run in the named folders, newest first "
        f"({folders.describe()}); {len(skipped)} file{'s' if len(skipped) != 1 else ''} skipped. Each fork: where it was cut, "
        "how it ended, its steps, its first divergence from the parent, and DIVERGED BEFORE THE CUT when its replayed "
        f"beginning did not re-run as recorded. {NO_TOKENS}"
    )
    block = fence(render_forks(shown_listing))
    return "\n".join([head, block.text]) + block.note("diff_runs compares the run with one fork at a time")


def _shown(shown: dict[str, Entry], path: str) -> str:
    entry = shown.get(path)
    return entry.shown if entry is not None else Path(path).name


# -- diff_runs, verify_run, replay_report ----------------------------------------------------


def diff_runs(folders: Folders, a: str, b: str, *, tail: int = 10) -> str:
    """``blackbox diff A B``: both verified first, then where they part and how each goes on."""
    ea, fa, _ = _cassette(folders, a)
    eb, fb, _ = _cassette(folders, b)
    for entry, found in ((ea, fa), (eb, fb)):
        if not found.verified:
            return _unverified(entry, found, "diff_runs")
    try:
        compared = diff_verified(ea.path, eb.path)
    except CassetteError as exc:  # changed since it was read
        raise ToolRefused(f"the runs could not be compared: {exc.detail}") from exc
    d = compared.divergence
    head = "diff_runs: both runs verify; " + ("identical." if d is None else f"they part at step {d.index} ({d.kind}).")
    block = fence(render_diff(ea.shown, compared.a, eb.shown, compared.b, d, tail, all_hint="tail=0 lists them all"))
    return "\n".join([head, block.text]) + block.note("call diff_runs with a smaller tail")


def verify_run(folders: Folders, run: str) -> str:
    """``blackbox verify --all``: the format, the hash chain, provider neutrality; every problem."""
    entry, found, _ = _cassette(folders, run)
    lines = render_verify(VerifyResult(entry.path, found.steps, list(found.problems)), entry.shown, show_all=True)
    head = "verify_run: the cassette " + (
        "verifies: format, hash chain and provider neutrality are as the trace format requires."
        if found.verified
        else f"DOES NOT VERIFY: {len(found.problems)} problem{'s' if len(found.problems) != 1 else ''}."
    )
    block = fence("\n".join(lines))
    return "\n".join([head, block.text]) + block.note("the first problems are shown; `blackbox verify --all` in a terminal lists all")


def replay_report(folders: Folders, run: str) -> str:
    """The newest replay report of the run found in the folders (``blackbox replay --report FILE`` writes them)."""
    from blackbox_mitm.matcher import render_report
    from blackbox_mitm.view.compare import read_report

    _, found, _ = _cassette(folders, run)
    check = "the cassette verifies" if found.verified else "the cassette DOES NOT VERIFY (verify_run says why)"
    reports = [e for e in folders.entries((".json",)) if not e.escapes and (f := facts(folders, e)).kind == REPORT and f.run == found.run]
    if not reports:
        return (
            f"replay_report: no replay report of the run in the named folders ({folders.describe()}); {check}. "
            "`blackbox replay RUN --report FILE -- COMMAND` writes one; this server does not replay."
        )
    newest = reports[0]
    try:
        status = read_report(newest.path, str(found.run))
    except CassetteError as exc:
        raise ToolRefused(f"the report could not be read: {exc.detail}") from exc
    head = f"replay_report: the newest of {len(reports)} replay report{'s' if len(reports) != 1 else ''} of the run; {check}."
    block = fence(f"report file: {newest.shown}\n{render_report(status)}")
    return "\n".join([head, block.text]) + block.note("the report's first divergence is at the end; show_run shows its steps")
