"""Section 6: ``blackbox view`` of a Claude Code-sized run — the page's size, and its load time in a real browser.

The cassette is made up (``tests/view/view_big_run.py``): 200 main model calls
(and 8 side calls that overlap them), each sending ~32 KB of tool definitions,
a ~7 KB system prompt and a history that grows by a tool round per call — tens of
MB on disk. Measured, per round:

* ``build``: ``blackbox_mitm.view.write_page`` (load, verify, pool, write);
* the page's size against the cassette's (target: at most 1.2x);
* in headless Chromium (Debian's, driven by Playwright, a fresh profile), from
  ``page.goto`` of the ``file://`` page to the first frame painted after the
  script ran (``body[data-painted]``), and the page's own clock at the end of its
  script (``performance.now()``, ``body[data-ready]``; target: under 2 s).

    python -m benchmarks.view_load            # one quick run, printed
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, Context, Section, Target, md_table, summarize

sys.path.insert(0, str(ROOT / "tests" / "view"))

__all__ = ["measure"]

LOAD_LIMIT_S = 2.0
SIZE_LIMIT = 1.2


def _round(browser: Any, cassette: Path, page: Path) -> dict[str, float]:
    from blackbox_mitm.view import write_page

    t0 = time.perf_counter()
    write_page(cassette, page, forks=False)
    build = time.perf_counter() - t0
    tab = browser.context.new_page()
    t0 = time.perf_counter()
    tab.goto(page.resolve().as_uri())
    tab.wait_for_selector("body[data-painted]", timeout=60_000)
    wall = time.perf_counter() - t0
    ready = float(tab.get_attribute("body", "data-ready") or "nan") / 1000
    painted = float(tab.get_attribute("body", "data-painted") or "nan") / 1000
    tab.close()
    return {"build_s": build, "wall_s": wall, "ready_s": ready, "painted_s": painted, "page_bytes": page.stat().st_size}


def measure(ctx: Context) -> Section:
    from view_big_run import claude_code_run
    from view_browser import Browser

    section = Section("view", "6. `blackbox view` of a Claude Code-sized run")
    calls = 40 if ctx.quick else 200
    cassette = claude_code_run(ctx.path(f"view-big-{calls}.json"), calls=calls)
    size = cassette.stat().st_size
    browser = Browser()
    try:
        rounds = [_round(browser, cassette, ctx.path(f"view-big-{calls}.html")) for _ in range(max(1, ctx.rounds))]
        version = browser.version
    finally:
        browser.close()
    build = summarize(r["build_s"] for r in rounds)
    wall = summarize(r["wall_s"] for r in rounds)
    ready = summarize(r["ready_s"] for r in rounds)
    painted = summarize(r["painted_s"] for r in rounds)
    ratio = rounds[0]["page_bytes"] / size
    section.data = {"cassette_bytes": size, "page_bytes": rounds[0]["page_bytes"], "rounds": rounds, "chromium": version}
    section.targets += [
        Target("view: page load", f"the big-run page painted in under {LOAD_LIMIT_S:.0f} s", wall.median / LOAD_LIMIT_S, 1.0),
        Target("view: page size", f"at most {SIZE_LIMIT}x the cassette", ratio / SIZE_LIMIT, 1.0),
    ]
    section.headline.append(
        f"`blackbox view` of a {size / 1e6:.0f} MB, {calls}-call run: a {rounds[0]['page_bytes'] / 1e6:.1f} MB page "
        f"({ratio:.3f}x the cassette), painted {wall.median:.2f} s after `goto` in headless Chromium {version}."
    )
    section.add(
        f"The made-up Claude Code-sized cassette (`tests/view/view_big_run.py`): **{size / 1e6:.1f} MB, {calls} main model calls** "
        f"(and side calls that overlap them), ~32 KB of tool definitions and a ~7 KB system prompt per call, a growing history. "
        f"{len(rounds)} rounds; headless Chromium {version} (Debian's), driven by Playwright, a fresh profile, the page from `file://`.",
        "",
        *md_table(
            ("", "median (min–max)"),
            [
                ("`write_page` (load, verify, pool, write)", build.fmt(1e3, 0, " ms")),
                ("`goto` → first frame painted (wall)", wall.fmt(1e3, 0, " ms")),
                ("the page's clock at the end of its script", ready.fmt(1e3, 0, " ms")),
                ("the page's clock at the first paint", painted.fmt(1e3, 0, " ms")),
                ("page size / cassette size", f"{rounds[0]['page_bytes']:,} / {size:,} bytes = {ratio:.3f}"),
            ],
        ),
        "",
        "The page stores each distinct message, tool definition and system prompt once and builds step rows 150 at a time, "
        "a step's content only when it is opened.",
    )
    return section


if __name__ == "__main__":
    import tempfile

    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        ctx = Context(quick=False, rounds=3, workdir=Path(tmp), confdir=Path(tmp), profile=False, log=print)
        result = measure(ctx)
        print("\n".join([*result.headline, "", *result.lines]))
