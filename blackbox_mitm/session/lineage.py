"""Finding a run's forks: the cassettes in a folder whose ``parentId`` is the run, each diffed against it.

For each fork: where it was cut, how it ended, its length, the first divergence
from the parent (the parent is side ``a``), the delta (steps, errors, and the
recorded tokens when either run has any), and
``diverged_before_cut`` — the fork parted from its parent before the step it was
cut at, i.e. the replayed beginning did not re-execute as recorded.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import NotRequired, TypedDict

from blackbox_mitm.cassette.diff import first_divergence
from blackbox_mitm.cassette.exchanges import is_exchanges_file
from blackbox_mitm.cassette.load import load_trace
from blackbox_mitm.cassette.media import is_media_file
from blackbox_mitm.cassette.payloads import is_terminal
from blackbox_mitm.cassette.timeline import fork_step_index, token_totals
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.errors import CassetteError

__all__ = [
    "ForkDelta",
    "ForkDivergence",
    "ForkListing",
    "ForkSummary",
    "RunSummary",
    "Skipped",
    "list_forks",
    "render_forks",
    "run_summary",
]


class _Summary(TypedDict):
    run: str
    steps: int
    errors: int  # tool results that are errors, and a run_failed terminal event
    outcome: str  # "completed", "failed (REASON[, exit N])" or "unfinished"
    created_at: int | float
    tokens: dict[str, int] | None  # cassette.timeline.token_totals


class RunSummary(_Summary):
    file: str | None


class ForkDivergence(TypedDict):
    """The first step at which the fork parts from its parent (the parent is side ``a``)."""

    index: int
    kind: str
    field: str | None
    explanation: str


class TokenDelta(TypedDict):
    input: int
    output: int


class ForkDelta(TypedDict):
    """The fork less its parent: steps, errors, and recorded tokens when either run has any."""

    steps: int
    errors: int
    tokens: NotRequired[TokenDelta]


class ForkSummary(_Summary):
    file: str
    fork_step: int | None
    forked_from_step_id: str | None
    first_divergence: ForkDivergence | None
    delta: ForkDelta
    diverged_before_cut: bool


class Skipped(TypedDict):
    file: str
    why: str


class ForkListing(TypedDict):
    run: str
    parent: RunSummary
    forks: list[ForkSummary]  # newest first
    skipped: list[Skipped]  # cassettes that could not be read


def _errors(trace: Trace) -> int:
    n = 0
    for step in trace.steps:
        p = step.payload
        if (step.type == "tool_result" and isinstance(p, dict) and "error" in p) or (
            step.type == "metadata" and isinstance(p, dict) and p.get("event") == "run_failed"
        ):
            n += 1
    return n


def _outcome(trace: Trace) -> str:
    last = trace.steps[-1].payload if trace.steps else None
    if not is_terminal(last):
        return "unfinished"
    assert isinstance(last, dict)
    if last.get("event") == "run_completed":
        return "completed"
    reason = last.get("reason")
    extra = f", exit {last['exitCode']}" if "exitCode" in last else ""
    return f"failed ({reason}{extra})"


def run_summary(trace: Trace, path: Path | None = None) -> RunSummary:
    return {
        "run": trace.id,
        "file": None if path is None else str(path),
        "steps": len(trace.steps),
        "errors": _errors(trace),
        "outcome": _outcome(trace),
        "created_at": trace.createdAt,
        "tokens": token_totals(trace),
    }


def list_forks(parent_path: Path, directory: Path | None = None, *, files: Iterable[Path] | None = None) -> ForkListing:
    """The forks of the run at ``parent_path`` among the cassettes of ``directory`` (default: its folder).

    ``files`` gives the candidate files instead of the folder's (``blackbox mcp`` passes only those it may read).
    """
    parent = load_trace(parent_path, recover=False)
    if files is None:
        folder = directory if directory is not None else parent_path.resolve().parent
        if not folder.is_dir():
            raise CassetteError("not a folder; give the folder that holds the forks", path=str(folder))
        files = (p for pattern in ("*.json", "*.json.gz", "*.json.zst") for p in folder.glob(pattern))  # compressed forks too
    forks: list[ForkSummary] = []
    skipped: list[Skipped] = []
    for path in sorted(files):
        if path.resolve() == parent_path.resolve() or is_exchanges_file(path.name) or is_media_file(path.name):
            continue  # a run's side files (its other HTTP exchanges, its media) are not runs
        try:
            child = load_trace(path, recover=False)
        except CassetteError as exc:
            if exc.where == "$" or (exc.where == "$.version" and "missing" in exc.detail):
                continue  # some other JSON file, not a cassette
            skipped.append({"file": str(path), "why": exc.detail})
            continue
        if child.parentId != parent.id:
            continue
        summary = run_summary(child, path)
        cut = fork_step_index(child)
        div = first_divergence(parent, child)
        forks.append(
            {
                **summary,
                "file": str(path),
                "fork_step": cut,
                "forked_from_step_id": child.forkedFromStepId,
                "first_divergence": None
                if div is None
                else {"index": div.index, "kind": div.kind, "field": div.field, "explanation": div.explanation},
                "delta": _delta(parent, child, summary),
                "diverged_before_cut": div is not None and cut is not None and div.index < cut,
            }
        )
    forks.sort(key=lambda f: f["created_at"], reverse=True)
    return {"run": parent.id, "parent": run_summary(parent, parent_path), "forks": forks, "skipped": skipped}


def _delta(parent: Trace, child: Trace, child_summary: RunSummary) -> ForkDelta:
    delta: ForkDelta = {"steps": len(child.steps) - len(parent.steps), "errors": _errors(child) - _errors(parent)}
    a, b = token_totals(parent), child_summary["tokens"]
    if a is not None or b is not None:
        zero = {"input": 0, "output": 0}
        delta["tokens"] = {"input": (b or zero)["input"] - (a or zero)["input"], "output": (b or zero)["output"] - (a or zero)["output"]}
    return delta


def _tokens_line(summary: RunSummary | ForkSummary) -> str:
    t = summary.get("tokens")
    return "" if not t else f", {t['input']:,} in / {t['output']:,} out tokens"


def render_forks(listing: ForkListing) -> str:
    parent = listing["parent"]
    lines = [f"run {listing['run']}: {parent['steps']} steps, {parent['outcome']}, {parent['errors']} errors{_tokens_line(parent)}"]
    if not listing["forks"]:
        lines.append("  no forks found")
    for f in listing["forks"]:
        lines.append(f"  fork {f['run']} ({f['file']})")
        lines.append(f"    cut at step {f['fork_step']}; {f['outcome']}; {f['steps']} steps{_tokens_line(f)}")
        div = f["first_divergence"]
        lines.append(
            "    first divergence: none"
            if div is None
            else f"    first divergence: step {div['index']} ({div['kind']}): {div['explanation']}"
        )
        d = f["delta"]
        tokens = f", {d['tokens']['input']:+,} in / {d['tokens']['output']:+,} out tokens" if "tokens" in d else ""
        lines.append(
            f"    delta: {d['steps']:+d} steps, {d['errors']:+d} errors{tokens}"
            + ("; DIVERGED BEFORE THE CUT" if f["diverged_before_cut"] else "")
        )
    for s in listing["skipped"]:
        lines.append(f"  skipped {s['file']}: {s['why']}")
    return "\n".join(lines)
