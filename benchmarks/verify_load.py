"""Section 3: loading and verifying a ~100 MB cassette — steps per second against the floor, and peak memory.

Each measurement runs in a fresh process (``python -m benchmarks.verify_load
--child MODE FILE``), so its peak resident memory (``VmHWM``) is its own:

* ``floor`` — the least any verifier must do: ``orjson.loads`` of the file, then
  SHA-256 of each step's canonical bytes (``orjson.dumps`` with sorted keys of
  ``{index, type, timestamp, payload, prevHash}``), compared with its hash;
* ``load`` — ``load_trace`` (parse and check the structure, build the steps);
* ``verify`` — ``load_trace`` then ``verify_trace`` (the hash chain recomputed
  with the JavaScript-exact canonical JSON, and the neutrality rules), timed apart.

Memory is the peak RSS minus the process's RSS after its imports, against the
file's size; the target is at most 2x.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import PYTHON, ROOT, Context, Section, Stats, Target, md_table, ratio_stats, summarize
from benchmarks.profiles import pyinstrument_available, pyinstrument_top

__all__ = ["measure"]

MODES = ("floor", "load", "verify")
MAX_MEMORY_RATIO = 2.0


def _memory_bytes(field: str) -> int:
    """``VmHWM`` (peak resident) or ``VmRSS`` (resident now) of this process, from ``/proc/self/status``.

    Not ``ru_maxrss``: after a fork (or vfork) and exec, Linux carries the parent's
    high-water mark into the child's ``ru_maxrss``; ``VmHWM`` belongs to this
    program's own address space.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child(mode: str, path: Path) -> dict[str, Any]:
    """One measurement in this process; returns times, step count and memory."""
    import orjson

    import blackbox_mitm.codecs  # noqa: F401  (registers the provider facts verify checks)
    from blackbox_mitm.cassette.load import load_trace
    from blackbox_mitm.codecs.verified import verify_trace

    base = _memory_bytes("VmRSS")
    out: dict[str, Any] = {"mode": mode, "file_bytes": path.stat().st_size}
    t0 = time.perf_counter()
    if mode == "floor":
        raw = path.read_bytes()
        out["rss_after_read_bytes"] = _memory_bytes("VmRSS")
        data = orjson.loads(raw)
        out["rss_after_parse_bytes"] = _memory_bytes("VmRSS")  # the bytes and the objects, the parser's buffers freed
        del raw
        matched = 0
        for step in data["steps"]:
            canonical = orjson.dumps(
                {k: step[k] for k in ("index", "type", "timestamp", "payload", "prevHash")}, option=orjson.OPT_SORT_KEYS
            )
            matched += hashlib.sha256(canonical).hexdigest() == step["hash"]
        out["steps"] = len(data["steps"])
        out["matched"] = matched
    else:
        trace = load_trace(path, recover=False)
        out["load_s"] = time.perf_counter() - t0
        out["steps"] = len(trace.steps)
        if mode == "verify":
            t1 = time.perf_counter()
            problems = verify_trace(trace)
            out["verify_s"] = time.perf_counter() - t1
            out["problems"] = len(problems)
    out["seconds"] = time.perf_counter() - t0
    out["rss_base_bytes"] = base
    out["rss_peak_bytes"] = _memory_bytes("VmHWM")
    out["rss_end_bytes"] = _memory_bytes("VmRSS")  # the result alone: the file's bytes are freed by now
    return out


def run_child(mode: str, path: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [PYTHON, "-m", "benchmarks.verify_load", "--child", mode, str(path)], capture_output=True, text=True, cwd=ROOT, timeout=1800
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the {mode} measurement failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def measure(ctx: Context) -> Section:
    from benchmarks.scaling import agent_cassette, sizes

    section = Section("verify", "3. Loading and verifying a large cassette")
    calls = sizes(ctx)[-1]
    path = agent_cassette(ctx, calls)
    size = path.stat().st_size
    rounds = max(1, min(ctx.rounds, 3))
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
    for _ in range(rounds):
        for mode in MODES:
            runs[mode].append(run_child(mode, path))
    steps = runs["floor"][0]["steps"]
    if runs["floor"][0]["matched"] != steps:
        raise RuntimeError(f"the floor's hashes matched {runs['floor'][0]['matched']} of {steps} steps")
    if any(r["problems"] for r in runs["verify"]):
        raise RuntimeError("the benchmark cassette does not verify")

    floor = summarize(r["seconds"] for r in runs["floor"])
    load = summarize(r["load_s"] for r in runs["load"])
    verify_only = summarize(r["verify_s"] for r in runs["verify"])
    both = summarize(r["seconds"] for r in runs["verify"])

    def mem(mode: str) -> Stats:
        return summarize((r["rss_peak_bytes"] - r["rss_base_bytes"]) / size for r in runs[mode])

    def held(mode: str) -> Stats:
        return summarize((r["rss_end_bytes"] - r["rss_base_bytes"]) / size for r in runs[mode])

    def peak_mb(mode: str) -> Stats:
        return summarize(r["rss_peak_bytes"] / 1e6 for r in runs[mode])

    def rate(s: Stats) -> str:
        return f"{steps / s.median:,.0f}"

    section.add(
        f"The {calls:,}-call agent cassette: **{size / 1e6:.1f} MB, {steps:,} steps**. {rounds} rounds, each measurement in a fresh "
        "process. The floor is `orjson.loads` of the file plus SHA-256 of each step's canonical bytes (sorted-key `orjson.dumps` "
        "of index, type, timestamp, payload and prevHash — for these payloads the same bytes as the canonical JSON, so every hash "
        "matches); `load` is `load_trace`; `verify` is `verify_trace` on the loaded trace (hash chain with the JavaScript-exact "
        "canonical JSON, plus the neutrality rules). Memory: peak RSS minus the RSS after imports, over the file size; *held after* "
        "is the resident memory at the end, with the result still alive and the file's bytes freed.",
        "",
    )
    floor_ratio = {
        "load": ratio_stats([r["load_s"] for r in runs["load"]], [r["seconds"] for r in runs["floor"]]),
        "verify": ratio_stats([r["verify_s"] for r in runs["verify"]], [r["seconds"] for r in runs["floor"]]),
        "both": ratio_stats([r["seconds"] for r in runs["verify"]], [r["seconds"] for r in runs["floor"]]),
    }
    rows = [
        (
            "floor: orjson.loads + sha256 per step",
            floor.fmt(1, 2),
            rate(floor),
            "1.00",
            mem("floor").fmt(1, 2),
            held("floor").fmt(1, 2),
            peak_mb("floor").fmt(1, 0),
        ),
        (
            "`load_trace`",
            load.fmt(1, 2),
            rate(load),
            floor_ratio["load"].fmt(),
            mem("load").fmt(1, 2),
            held("load").fmt(1, 2),
            peak_mb("load").fmt(1, 0),
        ),
        ("`verify_trace` (on the loaded trace)", verify_only.fmt(1, 2), rate(verify_only), floor_ratio["verify"].fmt(), "", "", ""),
        (
            "`load_trace` + `verify_trace` (what a replay does)",
            both.fmt(1, 2),
            rate(both),
            floor_ratio["both"].fmt(),
            mem("verify").fmt(1, 2),
            held("verify").fmt(1, 2),
            peak_mb("verify").fmt(1, 0),
        ),
    ]
    headers = ("", "seconds", "steps/s", "× floor time", "peak memory / file", "held after / file", "peak RSS (MB)")
    section.add(*md_table(headers, rows), "")
    f0 = runs["floor"][0]
    file_part = (f0["rss_after_read_bytes"] - f0["rss_base_bytes"]) / size
    objects_part = (f0["rss_after_parse_bytes"] - f0["rss_after_read_bytes"]) / size
    parser_part = (f0["rss_peak_bytes"] - f0["rss_after_parse_bytes"]) / size
    section.add(
        f"Where the floor's peak comes from (over the file size): the file's bytes {file_part:.2f}x, the parsed Python objects "
        f"{objects_part:.2f}x, and orjson's own parse buffers, alive only inside `orjson.loads`, {parser_part:.2f}x — "
        "orjson parses the whole document into its own tree first, then builds the objects from it, so all three coexist. "
        f"`load_trace` peaks at {mem('load').median:.2f}x against the floor's {mem('floor').median:.2f}x. A peak under 2x would "
        "need a loader that never holds the whole file and its whole parse at once (steps parsed one at a time from a "
        f"stream); the objects alone take {objects_part:.2f}x.",
        "",
    )
    for mode, label in (("load", "load_trace"), ("verify", "load_trace + verify_trace")):
        target = Target(f"{label} of a {size / 1e6:.0f} MB cassette: peak memory / file size", "≤ 2.0", mem(mode).median, MAX_MEMORY_RATIO)
        if target.met is False:
            target.note = (
                f"the floor peaks at {mem('floor').median:.2f}x too: `orjson.loads` holds the file's bytes, its own parse tree "
                f"and the Python objects at once; what stays after the load is {held(mode).median:.2f}x — see section 3"
            )
        section.targets.append(target)
    section.headline.append(
        f"A {size / 1e6:.0f} MB cassette ({steps:,} steps) loads in {load.median:.2f} s ({rate(load)} steps/s) and verifies in "
        f"{verify_only.median:.2f} s more ({rate(verify_only)} steps/s); the floor (parse + hash every step) takes {floor.median:.2f} s, "
        f"so load + verify is {floor_ratio['both'].median:.1f}x the floor. Peak memory: {mem('load').median:.2f}x the file to load, "
        f"{mem('verify').median:.2f}x to load and verify."
    )
    if ctx.profile and pyinstrument_available():
        from blackbox_mitm.cassette.load import load_trace
        from blackbox_mitm.codecs.verified import verify_trace

        trace, text = pyinstrument_top(lambda: load_trace(path, recover=False), lines=30)
        section.add("**Profile: `load_trace`** (pyinstrument):", "", "```", text, "```", "")
        _, text = pyinstrument_top(lambda: verify_trace(trace), lines=30)
        section.add("**Profile: `verify_trace`** (pyinstrument):", "", "```", text, "```", "")
    section.data = {"file_bytes": size, "steps": steps, "calls": calls, "runs": runs}
    return section


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="One load/verify measurement (a child of the benchmark runner).")
    parser.add_argument("--child", choices=MODES, required=True)
    parser.add_argument("path", type=Path)
    args = parser.parse_args(argv)
    json.dump(child(args.child, args.path), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
