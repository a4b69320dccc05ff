"""One self-contained HTML page of a run: the template, its CSS and script, and the run's data, inlined.

The page loads nothing: its Content-Security-Policy allows no source at all
except its own inline script (by hash) and style, so it opens the same from
``file://``, an e-mail attachment or a CI artifact, and cannot call home.

The data goes in a ``<script type="application/json">`` element with every
``<`` written as ``\\u003c``: no text from a cassette (a prompt holding
``</script>``) can end that element, and the script only ever puts text into the
page as text (``textContent``), never as markup.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import webbrowser
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from blackbox_mitm import __version__
from blackbox_mitm.cassette import compression
from blackbox_mitm.cassette.load import load_trace
from blackbox_mitm.cassette.store import write_atomic
from blackbox_mitm.errors import CassetteError
from blackbox_mitm.session.lineage import Skipped
from blackbox_mitm.view.compare import ForkNode, diff_data, fork_tree, read_report
from blackbox_mitm.view.model import Pool, RunData, run_data

__all__ = ["MARKER", "build_page", "default_output", "open_page", "page_data", "write_page"]

MARKER = b"<!-- blackbox view page -->"
_SLOTS = ("/*@CSS@*/", "/*@JS@*/", "@DATA@", "@CSP@")
_SLOT_RE = re.compile("(" + "|".join(re.escape(s) for s in _SLOTS) + ")")


def page_data(run: Path, *, other: Path | None = None, report: Path | None = None, forks: bool = True) -> dict[str, Any]:
    """Everything the page shows, as the data it embeds (see ``view.model`` for a run's shape)."""
    pool = Pool()
    trace = load_trace(run, recover=False)
    runs: dict[str, RunData] = {}
    main = _add(runs, "r0", run_data(trace, pool, path=run))
    data: dict[str, Any] = {"generator": f"blackbox view {__version__}", "main": "r0", "forks": [], "skipped": []}
    if forks:
        skipped: list[Skipped] = []
        data["forks"] = _forks(fork_tree(run, skipped=skipped), main, runs, pool)
        data["skipped"] = skipped
    data["diff"] = None
    if other is not None:
        other_trace = load_trace(other, recover=False)
        _add(runs, "d1", run_data(other_trace, pool, path=other, base=main))
        data["diff"] = {"a": "r0", "b": "d1", **diff_data(trace, other_trace)}
    data["report"] = read_report(report, trace.id) if report is not None else None
    data["runs"] = {key: r.to_json() for key, r in runs.items()}
    data["pool"] = pool.values
    return data


def _add(runs: dict[str, RunData], key: str, run: RunData) -> RunData:
    if run.shared is not None:
        base_key = next(k for k, r in runs.items() if r.trace.id == run.shared["run"])
        run.shared = {**run.shared, "run": base_key}
    runs[key] = run
    return run


def _forks(nodes: list[ForkNode], parent: RunData, runs: dict[str, RunData], pool: Pool) -> list[dict[str, Any]]:
    out = []
    for node in nodes:
        key = f"f{len(runs)}"
        child = run_data(node.trace, pool, path=Path(_shown_path(node.path)), base=parent)
        if child.shared is not None:
            child.shared = {**child.shared, "run": next(k for k, r in runs.items() if r is parent)}
        runs[key] = child
        summary = {**node.summary, "file": _shown_path(node.path)}
        out.append({**summary, "key": key, "children": _forks(node.children, child, runs, pool)})
    return out


def _shown_path(path: Path) -> str:
    """A fork's file as the user would type it: relative to the working directory when it is below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def build_page(run: Path, *, other: Path | None = None, report: Path | None = None, forks: bool = True) -> bytes:
    """The page's bytes."""
    return render(page_data(run, other=other, report=report, forks=forks))


def render(data: dict[str, Any]) -> bytes:
    """Put ``data`` into the template with the CSS and script."""
    files = resources.files("blackbox_mitm.view")
    template = files.joinpath("page.html").read_text(encoding="utf-8")
    css = files.joinpath("page.css").read_text(encoding="utf-8")
    js = files.joinpath("page.js").read_text(encoding="utf-8")
    for name, text in (("page.css", css), ("page.js", js)):
        if "</" in text:  # pragma: no cover - a guard on the package's own files
            raise AssertionError(f"{name} must not contain '</': it would end its element early")
    script_hash = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode("ascii")
    csp = (
        "default-src 'none'; "
        f"script-src 'sha256-{script_hash}'; "
        "style-src 'unsafe-inline'; img-src data:; font-src data:; connect-src 'none'; "
        "form-action 'none'; base-uri 'none'"
    )
    pieces = {"/*@CSS@*/": css, "/*@JS@*/": js, "@DATA@": _embed(data).decode("utf-8"), "@CSP@": csp}
    # Only the template is split: what goes into one slot is never searched for another.
    parts = _SLOT_RE.split(template)
    if sorted(parts[1::2]) != sorted(_SLOTS):  # pragma: no cover - a guard on the package's own files
        raise AssertionError(f"page.html must hold each of {', '.join(_SLOTS)} once")
    return "".join(pieces[p] if i % 2 else p for i, p in enumerate(parts)).encode("utf-8")


def _embed(data: dict[str, Any]) -> bytes:
    """``data`` as JSON that is safe inside a script element: no ``<`` at all."""
    try:
        raw = orjson.dumps(data)
    except (TypeError, orjson.JSONEncodeError):  # a lone surrogate: written as a \\udXXX escape
        raw = json.dumps(data, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    return raw.replace(b"<", b"\\u003c")


def default_output(run: Path) -> Path:
    """``runs/weather.json`` -> ``runs/weather.html``."""
    run = compression.plain_name(run)  # runs/weather.json.zst too
    return run.with_suffix(".html") if run.suffix else run.with_name(run.name + ".html")


def write_page(run: Path, out: Path | None = None, *, other: Path | None = None, report: Path | None = None, forks: bool = True) -> Path:
    """Write the page (atomically) and return its path; never over an input file or a file that is not a page."""
    target = out if out is not None else default_output(run)
    inputs = [p for p in (run, other, report) if p is not None]
    if any(target.resolve() == p.resolve() for p in inputs):
        raise CassetteError("the page would overwrite an input file; choose another output (-o PAGE.html)", path=str(target))
    if target.exists():
        if target.is_dir():
            raise CassetteError("is a folder; give the page's file name (-o PAGE.html)", path=str(target))
        with target.open("rb") as fh:
            head = fh.read(512)
        if MARKER not in head:
            raise CassetteError(
                "exists and is not a page `blackbox view` wrote; choose another output (-o PAGE.html) or move it", path=str(target)
            )
    page = build_page(run, other=other, report=report, forks=forks)
    write_atomic(target, page, overwrite=True)
    target.chmod(0o644)
    return target


def open_page(path: Path) -> bool:
    """Open the page in the default browser; False when there is none."""
    return webbrowser.open(path.resolve().as_uri())
