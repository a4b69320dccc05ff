"""Section: big runs — a Claude Code-sized cassette plain, gzip and zstd: size, load, verify, replay start-up, peak memory.

The cassette is made up (``tests/view/view_big_run.py``): 200 model calls (40
with ``--quick``), each re-sending ~32 KB of tool definitions and a ~7 KB system
prompt, and a history that grows by a tool round per call. It is written plain
(indented, as ``blackbox record`` writes it), then compressed with ``blackbox
compress`` (``cassette.convert``) to ``.json.gz`` and ``.json.zst``. Per round and
per form, each in a fresh process:

* ``load`` and ``verify``: ``load_trace_bytes`` then ``verify_trace`` (what
  ``load_verified``, and so replay, does), timed apart; peak memory (``VmHWM``
  less the RSS after imports) over the **plain** file's size — the target is 2x;
* replay start-up: ``blackbox replay FILE -- true`` from spawn to exit (``true``
  makes no call, so the replay exits 1 "incomplete": only the time counts), with
  ``BLACKBOX_NO_CACHE=1``: each form verified whole, as the first replay of a file is.

Ratios are against the plain file measured in the same round.

    python -m benchmarks.big_runs [--quick]       # one run, printed
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import PYTHON, ROOT, Context, Section, Target, md_table, ratio_stats, summarize
from benchmarks.startup import COLD, _blackbox, _time
from benchmarks.verify_load import _memory_bytes

sys.path.insert(0, str(ROOT / "tests" / "view"))

__all__ = ["measure"]

FORMS = (("plain", ".json"), ("gzip", ".json.gz"), ("zstd", ".json.zst"))
MAX_MEMORY_RATIO = 2.0


def child(path: Path, plain_bytes: int) -> dict[str, Any]:
    """One load + verify in this process: times and memory."""
    import blackbox_mitm.codecs  # noqa: F401  (registers the provider facts verify checks)
    from blackbox_mitm.cassette.load import load_trace_bytes
    from blackbox_mitm.codecs.verified import verify_trace

    base = _memory_bytes("VmRSS")
    t0 = time.perf_counter()
    trace, source = load_trace_bytes(path, recover=False)
    load_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    problems = verify_trace(trace, source=source)
    verify_s = time.perf_counter() - t1
    peak = _memory_bytes("VmHWM") - base
    return {"load_s": load_s, "verify_s": verify_s, "steps": len(trace.steps), "problems": len(problems), "peak_ratio": peak / plain_bytes}


def _run_child(path: Path, plain_bytes: int) -> dict[str, Any]:
    proc = subprocess.run(
        [PYTHON, "-m", "benchmarks.big_runs", "--child", str(path), str(plain_bytes)], capture_output=True, text=True, cwd=ROOT, timeout=900
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the load/verify measurement of {path.name} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout)
    if result["problems"]:
        raise RuntimeError(f"{path.name} does not verify")
    return result


def _files(ctx: Context, calls: int) -> dict[str, dict[str, Any]]:
    from view_big_run import claude_code_run

    from blackbox_mitm.cassette.convert import convert

    plain = claude_code_run(ctx.path(f"big-run-{calls}.json"), calls=calls)
    files: dict[str, dict[str, Any]] = {"plain": {"path": plain, "bytes": plain.stat().st_size, "write_s": None}}
    for form, suffix in FORMS[1:]:
        out = ctx.path(f"big-run-{calls}{suffix}")
        out.unlink(missing_ok=True)
        t0 = time.perf_counter()
        convert(plain, out)
        files[form] = {"path": out, "bytes": out.stat().st_size, "write_s": time.perf_counter() - t0}
    return files


def measure(ctx: Context) -> Section:
    section = Section("big_runs", "Big runs: a Claude Code-sized cassette plain, gzip and zstd")
    calls = 40 if ctx.quick else 200
    files = _files(ctx, calls)
    plain_bytes = files["plain"]["bytes"]
    confdir = str(ctx.confdir)
    runs: dict[str, list[dict[str, Any]]] = {form: [] for form, _ in FORMS}
    for _ in range(max(1, min(ctx.rounds, 5))):
        for form, _ in FORMS:
            path = files[form]["path"]
            result = _run_child(path, plain_bytes)
            # Every form's text is the same: with the cache of verified contents the later ones would skip the verify.
            result["startup_s"] = _time([*_blackbox(), "replay", str(path), "--confdir", confdir, "--", "true"], ok=(0, 1), env=COLD)
            runs[form].append(result)
    steps = runs["plain"][0]["steps"]

    def stat(form: str, key: str) -> str:
        return summarize(r[key] for r in runs[form]).fmt(1, 2)

    def vs_plain(form: str, key: str) -> str:
        return ratio_stats([r[key] for r in runs[form]], [r[key] for r in runs["plain"]]).fmt()

    rows = []
    for form, suffix in FORMS:
        f = files[form]
        rows.append(
            (
                f"{form} (`RUN{suffix}`)",
                f"{f['bytes'] / 1e6:.2f} MB",
                f"{plain_bytes / f['bytes']:.1f}x",
                "—" if f["write_s"] is None else f"{f['write_s']:.2f}",
                stat(form, "load_s"),
                stat(form, "verify_s"),
                stat(form, "startup_s"),
                stat(form, "peak_ratio"),
                "1.00" if form == "plain" else vs_plain(form, "load_s"),
                "1.00" if form == "plain" else vs_plain(form, "startup_s"),
            )
        )
    headers = (
        "form",
        "size",
        "smaller by",
        "compress (s)",
        "load (s)",
        "verify (s)",
        "replay start-up (s)",
        "peak memory / plain size",
        "load × plain",
        "start-up × plain",
    )
    section.add(
        f"The made-up Claude Code-sized run (`tests/view/view_big_run.py`): **{calls} model calls, {steps:,} steps, "
        f"{plain_bytes / 1e6:.1f} MB** of indented JSON, each call re-sending ~32 KB of tool definitions and a ~7 KB system prompt "
        f"with a history that grows every turn. {len(runs['plain'])} rounds; each load + verify in a fresh process "
        "(`load_trace_bytes` then `verify_trace`, what replay does); start-up is `blackbox replay FILE -- true` from spawn to exit. "
        "Median (min–max); the `× plain` columns are ratios within a round.",
        "",
        *md_table(headers, rows),
        "",
        "gzip's 32 KB window never reaches the previous call's copy of the tools, prompt and history; zstd's (8 MiB, with "
        "long-distance matching) does, so each call costs little more than what is new in it.",
    )
    zst, gz = files["zstd"]["bytes"], files["gzip"]["bytes"]
    peak = {form: summarize(r["peak_ratio"] for r in runs[form]).median for form, _ in FORMS}
    section.headline.append(
        f"A {calls}-call Claude Code-shaped run: {plain_bytes / 1e6:.1f} MB plain, {gz / 1e6:.2f} MB gzip "
        f"({plain_bytes / gz:.0f}x smaller), {zst / 1e6:.2f} MB zstd ({plain_bytes / zst:.0f}x); load + verify peaks at "
        f"{peak['plain']:.2f}x / {peak['gzip']:.2f}x / {peak['zstd']:.2f}x the plain size (target 2x)."
    )
    for form, _ in FORMS:
        section.targets.append(
            Target(f"big run ({form}): load + verify peak memory / plain file size", "≤ 2.0", peak[form], MAX_MEMORY_RATIO)
        )
    section.data = {"calls": calls, "steps": steps, "files": {k: {"bytes": v["bytes"], "write_s": v["write_s"]} for k, v in files.items()}}
    section.data["runs"] = runs
    return section


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The big-run benchmark, or one of its measurements (--child).")
    parser.add_argument("--child", type=Path, default=None)
    parser.add_argument("plain_bytes", type=int, nargs="?", default=0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if args.child is not None:
        json.dump(child(args.child, args.plain_bytes), sys.stdout)
        sys.stdout.write("\n")
        return 0
    import tempfile

    from blackbox_mitm.proxy.environment import ensure_ca

    with tempfile.TemporaryDirectory() as tmp:
        confdir = Path(tmp) / "mitmproxy"
        ensure_ca(confdir)
        ctx = Context(
            quick=args.quick, rounds=1 if args.quick else args.rounds, workdir=Path(tmp), confdir=confdir, profile=False, log=print
        )
        result = measure(ctx)
        print("\n".join([*result.headline, "", *result.lines]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
