"""The benchmark runner: every measurement of issue #8 in one run, written up as ``docs/benchmarks.md``.

    python benchmarks/run.py                       # full run (about ten minutes on a busy 2-core machine), report on stdout
    python benchmarks/run.py --write docs/benchmarks.md --json bench.json
    python benchmarks/run.py --quick               # tiny N, one round: a smoke run (under a minute)
    python benchmarks/run.py --only calls,startup --rounds 3

Sections (``--only`` keys), each a module with ``measure(ctx: Context) -> Section``:

* ``calls`` — ``proxy_calls``: a model call through each proxy, with the openai SDK;
* ``scaling`` — ``scaling``: replay and recording cost along 10 / 1,000 / 10,000-call runs;
* ``verify`` — ``verify_load``: load and verify of a ~100 MB cassette, time and peak memory;
* ``startup`` — ``startup``: ``blackbox replay RUN.json -- true`` against mitmdump starting and stopping;
* ``ttfb`` — ``ttfb`` when that module exists (time to the first streamed byte).
* ``view`` — ``view_load``: ``blackbox view`` of a Claude Code-sized run, page size and load time in headless Chromium.
* ``gemini`` — ``gemini_calls``: a Gemini call (google-genai) direct, replayed and recorded.
* ``ws_turn`` — ``ws_turn``: a replayed Responses turn over the WebSocket against the same call over HTTPS.
* ``responses`` — ``responses_calls``: a Responses API call through each proxy (direct, passthrough, server_replay, blackbox replay).
* ``responses_ttfb`` — ``responses_ttfb``: time to the first streamed Responses event, recording against a streaming passthrough.
* ``goldens`` — ``goldens``: 16 goldens under ``blackbox test -j 2`` (one proxy, a proxy per golden, 4 shards) against the agents bare.
* ``big_runs`` — ``big_runs``: a Claude Code-sized run plain, gzip and zstd: size, load, verify, replay start-up, peak memory.
* ``agent`` — ``agent_calls``: a Claude Code-shaped session of 60–120 KB requests replayed in-process, hooks against
  ``server_replay``'s and the cost split by step (issue #28).

``--quick`` is the test suite's smoke run (tests/benchmarks/): every section, variant, API, table and
target once, at a tiny N — and, where a section's method allows it, without the process starts a
full run repeats: each section's client runs as jobs of one client process (``benchmarks/served.py``),
a recording variant's run doubling as the replay's cassette, one proxy a variant for several APIs.
The full run's measurements are not touched by any of this.

Every figure is a median over rounds with its min and max; every comparison is a
ratio of figures measured in the same round. The numbers are never pass/fail:
the report states each target as met or missed, and the run fails only when a
measurement could not be made. Everything listens on 127.0.0.1; every process
started here is stopped before the run ends.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson

from benchmarks.common import ROOT, Context, Section, machine_info, md_table
from benchmarks.profiles import pyinstrument_available, pyspy_path

SECTIONS: tuple[tuple[str, str], ...] = (
    ("calls", "benchmarks.proxy_calls"),
    ("scaling", "benchmarks.scaling"),
    ("verify", "benchmarks.verify_load"),
    ("startup", "benchmarks.startup"),
    ("ttfb", "benchmarks.ttfb"),
    ("view", "benchmarks.view_load"),
    ("gemini", "benchmarks.gemini_calls"),
    ("ws_turn", "benchmarks.ws_turn"),
    ("responses", "benchmarks.responses_calls"),
    ("responses_ttfb", "benchmarks.responses_ttfb"),
    ("goldens", "benchmarks.goldens"),
    ("big_runs", "benchmarks.big_runs"),
    ("agent", "benchmarks.agent_calls"),
)
OPTIONAL = {"ttfb", "gemini", "ws_turn", "responses", "responses_ttfb"}
# Rounds at most, per section: those whose round takes minutes (a 10,000-call recording with an fsync per call, a
# golden suite), or whose figure is a ratio within one round (scaling's last/first window), so that `make bench`
# stays within about ten minutes on a busy 2-core machine.
ROUND_CAPS: dict[str, int] = {"scaling": 1, "goldens": 1, "view": 1, "big_runs": 2, "ttfb": 2, "responses_ttfb": 2}
DEFAULT_ROUNDS = 3


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _exists(module_name: str) -> bool:
    return (ROOT / (module_name.replace(".", "/") + ".py")).exists()


def _compile_package() -> str:
    """Compile blackbox_mitm to bytecode (``__pycache__``) before anything is timed; what the report says of it.

    An installed package is compiled when pip installs it (mitmproxy's modules here are);
    an editable checkout is compiled on first import, unless ``PYTHONDONTWRITEBYTECODE``
    is set (it is on this machine), in which case every start-up would compile our
    modules from source — about half a second that no user's start-up pays.
    """
    import compileall

    ok = compileall.compile_dir(str(ROOT / "blackbox_mitm"), quiet=2, workers=1)
    return "blackbox_mitm compiled to bytecode before the run (as `pip install` compiles an installed package)" + (
        "" if ok else " — some modules failed to compile"
    )


def _cpu_seconds() -> float:
    """User + system CPU of this process and of every child it has waited for (the section's proxies, fakes, clients)."""

    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _drop_mitmproxy_log_handlers() -> None:
    """A section that ran a mitmproxy master in this process leaves its log handler on the root logger, bound to a
    closed event loop; a later section's log line would then raise. Removed after every section."""
    import logging

    root = logging.getLogger()
    for handler in list(root.handlers):
        if type(handler).__module__.startswith("mitmproxy"):
            root.removeHandler(handler)


def _section_from(key: str, module_name: str, ctx: Context) -> Section | None:
    if key in OPTIONAL and not _exists(module_name):
        return None
    started = time.perf_counter()
    try:
        module = importlib.import_module(module_name)
        measure: Callable[[Context], Any] | None = getattr(module, "measure", None)
        if measure is None:
            raise RuntimeError(f"{module_name} has no measure(ctx) function")
        found = measure(ctx)
        section = found if isinstance(found, Section) else _wrap(key, module, found)
    except Exception as exc:
        section = Section(key, f"{key}: failed")
        section.error = "".join(traceback.format_exception(exc))[-4000:]
        section.add("The measurement failed:", "", "```", section.error.rstrip(), "```")
    section.seconds = time.perf_counter() - started
    return section


def _wrap(key: str, module: Any, found: Any) -> Section:
    """A section from a module that returned markdown text or a dict instead of a ``Section``."""
    title = (module.__doc__ or key).strip().splitlines()[0].rstrip(".")
    section = Section(key, title)
    if isinstance(found, str):
        section.add(*found.splitlines())
    else:
        section.data = found if isinstance(found, dict) else {"result": found}
        section.add("```json", orjson.dumps(section.data, option=orjson.OPT_INDENT_2, default=str).decode(), "```")
    return section


def render(info: dict[str, Any], sections: list[Section], ctx: Context, total_s: float) -> str:
    lines = [
        "# Benchmarks: what does Blackbox cost?",
        "",
        "<!-- Generated by `make bench` (python benchmarks/run.py --write docs/benchmarks.md); do not edit by hand. -->",
        "",
        f"**Commit {info['commit']}; machine load (1/5/15-minute load average on {info['nproc']} cores) "
        f"{info['loadavg_start']} at the start, {info.get('loadavg_end')} at the end.** Every section below comes from this one "
        "run of this one commit.",
        "",
        f"One run of `python benchmarks/run.py{' --quick' if ctx.quick else ''}` on {info['date']}, "
        f"{ctx.rounds} round{'s' if ctx.rounds != 1 else ''}, {total_s / 60:.1f} minutes. "
        "Every figure is the **median over rounds, with (min–max)**; every comparison is a **ratio of figures measured in the "
        "same round**, side by side, then summarized — absolute times on a shared 2-core machine are noise, ratios much less so. "
        "Nothing here is pass/fail: each target (issues #8 and #28) is reported as met or missed, and by how much.",
        "",
        "## The machine",
        "",
    ]
    lines += md_table(
        ("", ""),
        [
            ("CPU", f"{info['cpu']}, {info['nproc']} cores (`nproc`)"),
            ("RAM", f"{info['ram_gib']} GiB"),
            ("kernel", info["kernel"]),
            ("Python", info["python"]),
            ("mitmproxy", info["mitmproxy"]),
            ("openai SDK", f"{info['openai']} (HTTP client: httpx2 {info['httpx2']})"),
            ("orjson", info["orjson"]),
            ("blackbox-mitm", f"{info['blackbox']}, commit {info['commit']}"),
            ("load average", f"{info['loadavg_start']} at the start, {info.get('loadavg_end')} at the end"),
            ("profilers", info["profilers"]),
            ("bytecode", info.get("bytecode", "")),
        ],
    )
    lines += ["", "## Summary", ""]
    for section in sections:
        lines += [f"* {h}" for h in section.headline]
    targets = [(s, t) for s in sections for t in s.targets]
    if targets:
        lines += ["", "**Targets** (issues #8 and #28):", ""]
        lines += md_table(
            ("target", "goal", "result", "what holds it back"),
            [(t.name, t.goal, t.verdict(), t.note or ("—" if t.met else "see the section")) for _, t in targets],
        )
    failed = [s for s in sections if s.error]
    if failed:
        lines += ["", "**Measurements that failed:** " + ", ".join(s.key for s in failed) + "."]
    for section in sections:
        lines += ["", f"## {section.title}", "", *section.lines]
        lines += ["", f"*({section.seconds:.0f} s)*"]
    lines += [
        "",
        "## Reproducing",
        "",
        "`make bench` (or `.venv/bin/python benchmarks/run.py --write docs/benchmarks.md`). `--quick` is the smoke run that "
        "the test suite makes (tests/benchmarks/test_bench_smoke.py); `--rounds N` and `--only calls,scaling,verify,startup` "
        "narrow a run; `--json FILE` keeps every raw figure. Profiles need `py-spy` and `pyinstrument` in the venv "
        "(`.venv/bin/pip install py-spy pyinstrument`; they are not dependencies of the project).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Blackbox benchmarks (issue #8): measure and write the report.")
    parser.add_argument("--quick", action="store_true", help="tiny N and one round: a smoke run")
    parser.add_argument("--rounds", type=int, default=None, help=f"rounds per measurement (default {DEFAULT_ROUNDS}; --quick: 1)")
    parser.add_argument("--write", type=Path, default=None, help="write the markdown report here (default: print it)")
    parser.add_argument("--json", type=Path, default=None, help="also write every figure as JSON here")
    parser.add_argument("--only", default="", help="comma-separated section keys: " + ",".join(k for k, _ in SECTIONS))
    parser.add_argument("--no-profile", action="store_true", help="skip the py-spy / pyinstrument profiles (on by default unless --quick)")
    parser.add_argument("--keep", action="store_true", help="keep the working directory (cassettes, flow files, logs)")
    args = parser.parse_args(argv)

    rounds = args.rounds if args.rounds is not None else (1 if args.quick else DEFAULT_ROUNDS)
    if rounds < 1:
        parser.error("--rounds must be at least 1")
    only = {k.strip() for k in args.only.split(",") if k.strip()}
    unknown = only - {k for k, _ in SECTIONS}
    if unknown:
        parser.error(f"unknown section(s): {', '.join(sorted(unknown))}")

    workdir = Path(tempfile.mkdtemp(prefix="blackbox-bench-"))
    # The run's own cache of verified contents (cassette/verified_cache.py), for every process it starts: what an
    # earlier run or the user's own replays left in ~/.cache never changes a figure, and it goes with the folder.
    os.environ["BLACKBOX_CACHE_DIR"] = str(workdir / "verified-cache")
    info = machine_info()
    info["bytecode"] = _compile_package()
    profile = not args.no_profile and not args.quick
    tools = [name for name, ok in (("py-spy", pyspy_path() is not None), ("pyinstrument", pyinstrument_available())) if ok]
    info["profilers"] = (", ".join(tools) + " (the `bench` extra, installed by `make bench`)") if tools else "none installed"
    if not profile:
        info["profilers"] += "; profiling off for this run"
    started = time.perf_counter()
    sections: list[Section] = []
    try:
        from blackbox_mitm.proxy.environment import ensure_ca

        confdir = workdir / "mitmproxy"
        ensure_ca(confdir)
        ctx = Context(quick=args.quick, rounds=rounds, workdir=workdir, confdir=confdir, profile=profile, log=_log)
        _log(f"blackbox benchmarks: {'quick' if args.quick else 'full'} run, {rounds} round(s), working in {workdir}")
        for key, module_name in SECTIONS:
            if only and key not in only:
                continue
            if key in OPTIONAL and not _exists(module_name):
                continue
            _log(f"[{key}] ...")
            section_ctx = dataclasses.replace(ctx, rounds=min(ctx.rounds, ROUND_CAPS.get(key, ctx.rounds)))
            cpu_before = _cpu_seconds()
            section = _section_from(key, module_name, section_ctx)
            if section is None:
                continue
            sections.append(section)
            _drop_mitmproxy_log_handlers()
            cpu = _cpu_seconds() - cpu_before
            _log(f"[{key}] {'FAILED' if section.error else 'done'} in {section.seconds:.1f}s ({cpu:.1f}s CPU with its processes)")
            if section.error:
                _log(section.error)
    finally:
        if args.keep:
            _log(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    total = time.perf_counter() - started
    try:
        info["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        info["loadavg_end"] = None
    report = render(info, sections, ctx, total)
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(report, encoding="utf-8")
        _log(f"wrote {args.write}")
    else:
        print(report)
    if args.json:
        payload = {"machine": info, "quick": args.quick, "rounds": rounds, "seconds": total, "sections": [s.to_json() for s in sections]}
        args.json.write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str) + b"\n")
    return 1 if any(s.error for s in sections) else 0


if __name__ == "__main__":
    sys.exit(main())
