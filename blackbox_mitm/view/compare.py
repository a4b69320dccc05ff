"""What a page says about other runs: the diff against a second run, a replay report, the fork tree.

* ``diff_data``: ``blackbox diff``'s first divergence (kind, field, the same
  explanation), plus where the differing field is — its path as segments the
  page follows into both payloads, and the first differing character of a
  string — so that the page can highlight it to the character.
* ``read_report``: a replay status file (``blackbox replay --report FILE``,
  ``--set blackbox_report=FILE``), checked to be one and to be of this run.
* ``fork_tree``: the run's forks found beside it, as ``blackbox forks`` finds
  them (``session.lineage.list_forks``), and their forks in turn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blackbox_mitm.cassette.canonical import canonical_bytes
from blackbox_mitm.cassette.diff import first_divergence
from blackbox_mitm.cassette.load import load_trace
from blackbox_mitm.cassette.payloads import json_kind
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.errors import CassetteError
from blackbox_mitm.matcher.report import verdict
from blackbox_mitm.session.lineage import ForkSummary, Skipped, list_forks

__all__ = ["ForkNode", "diff_data", "fork_tree", "locate_difference", "read_report"]

MAX_FORKS = 60  # forks embedded in one page (the tree is walked breadth first)
MAX_DEPTH = 6


def diff_data(a: Trace, b: Trace) -> dict[str, Any]:
    """The first divergence of ``a`` and ``b`` as the page shows it (None fields when identical)."""
    d = first_divergence(a, b)
    if d is None:
        return {"identical": True, "divergence": None}
    out: dict[str, Any] = {
        "index": d.index,
        "kind": d.kind,
        "field": d.field,
        "explanation": d.explanation,
        "segments": None,
        "atChar": None,
    }
    if d.field is not None and d.field.startswith("payload") and d.index < len(a.steps) and d.index < len(b.steps):
        segments, at = locate_difference(a.steps[d.index].payload, b.steps[d.index].payload)
        out["segments"] = segments
        out["atChar"] = at
    return {"identical": False, "divergence": out}


def locate_difference(x: Any, y: Any) -> tuple[list[str | int], int | None]:
    """The path (keys and indexes) to the first place two JSON values differ, and the first differing
    character when both sides there are strings — the walk ``cassette.diff.first_difference`` does."""
    path: list[str | int] = []
    while True:
        kind = json_kind(x)
        if kind != json_kind(y):
            return path, None
        if kind == "an object":
            if x.keys() != y.keys():
                return path, None
            key = next((k for k in sorted(x) if not _same(x[k], y[k])), None)
            if key is None:
                return path, None
            x, y = x[key], y[key]
            path.append(key)
            continue
        if kind == "an array":
            n = next((i for i in range(min(len(x), len(y))) if not _same(x[i], y[i])), None)
            if n is None:
                return path, None
            x, y = x[n], y[n]
            path.append(n)
            continue
        if kind == "a string" and x != y:
            at = next((i for i, (cx, cy) in enumerate(zip(x, y, strict=False)) if cx != cy), min(len(x), len(y)))
            return path, at
        return path, None


def _same(x: Any, y: Any) -> bool:
    return canonical_bytes(x) == canonical_bytes(y)


# -- a replay report ------------------------------------------------------------------------


def read_report(path: Path, run_id: str) -> dict[str, Any]:
    """A replay status file, as data; a clear error when it is not one, or is of another run."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CassetteError("no such report file; write one with `blackbox replay --report FILE ...`", path=str(path)) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CassetteError(f"cannot read the report ({exc}); give the JSON file `blackbox replay --report` wrote", path=str(path)) from exc
    if not isinstance(data, dict) or "model_calls" not in data or "divergences" not in data:
        raise CassetteError(
            "not a replay report (no model_calls / divergences); give the file `blackbox replay --report FILE` wrote", path=str(path)
        )
    if data.get("run") != run_id:
        raise CassetteError(
            f"this report is of recorded run {data.get('run')!r}, not {run_id!r}: give the cassette that was replayed", path=str(path)
        )
    out = dict(data)
    out["verdict"] = verdict(data)
    out["file"] = str(path)
    return out


# -- the fork tree ------------------------------------------------------------------------


@dataclass(slots=True)
class ForkNode:
    """A fork found beside its parent: the listing's summary, its cassette, and its own forks."""

    summary: ForkSummary
    trace: Trace
    path: Path
    children: list[ForkNode] = field(default_factory=list)


def fork_tree(path: Path, *, skipped: list[Skipped] | None = None) -> list[ForkNode]:
    """The forks of the run at ``path`` (its folder, as ``blackbox forks``), and theirs, breadth first."""
    roots: list[ForkNode] = []
    queue: list[tuple[Path, list[ForkNode], int]] = [(path, roots, 0)]
    seen = {path.resolve()}
    count = 0
    while queue:
        parent_path, siblings, depth = queue.pop(0)
        listing = list_forks(parent_path)
        if skipped is not None:
            skipped.extend(listing["skipped"])
        for summary in listing["forks"]:
            child_path = Path(summary["file"])
            if child_path.resolve() in seen or count >= MAX_FORKS:
                continue
            seen.add(child_path.resolve())
            count += 1
            node = ForkNode(summary, load_trace(child_path, recover=False), child_path)
            siblings.append(node)
            if depth + 1 < MAX_DEPTH:
                queue.append((child_path, node.children, depth + 1))
    return roots
