"""Section 4: start-up — ``blackbox replay RUN.json -- true`` against mitmdump starting and stopping.

Wall time from spawning the command to its exit, for:

* the interpreter alone (``python -c pass``) and the ``blackbox`` command's own
  imports (``blackbox --version``), as floors;
* ``mitmdump`` starting and stopping: ``mitmdump -q -s benchmarks/mitm_stop_addon.py``,
  whose script shuts mitmproxy down in its ``running`` hook — imports, options,
  the CA, listening on 127.0.0.1, then a clean shutdown;
* ``blackbox replay RUN.json -- true``: load and verify the cassette, start the
  proxy in-process (the same mitmproxy machinery), run ``true`` through it, stop,
  report. ``true`` makes none of the recorded calls, so the replay exits 1 with an
  "incomplete" report — expected here; only the time is measured. With a
  10-call cassette, and with the largest benchmark cassette.

The commands are run in turns (one of each per round), each with the same CA directory.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import BIN, PYTHON, ROOT, Context, Section, Stats, Target, md_table, mitmdump_path, ratio_stats, summarize
from benchmarks.profiles import pyspy_command, pyspy_path, share_of, summarize_collapsed

__all__ = ["measure"]

STOP_ADDON = ROOT / "benchmarks" / "mitm_stop_addon.py"
# Start-up code of ours: the CLI, building the session (load + verify), the runner, the addon.
_OURS_AT_STARTUP = ("blackbox_mitm/",)


def _blackbox() -> list[str]:
    exe = BIN / "blackbox"
    return [str(exe)] if exe.exists() else [PYTHON, "-m", "blackbox_mitm"]


def _time(argv: Sequence[str], ok: tuple[int, ...] = (0,)) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(list(argv), capture_output=True, text=True, cwd=ROOT, timeout=600, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in ok or "Traceback" in proc.stderr:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return elapsed


def commands(ctx: Context, small: Path, large: Path, large_calls: int) -> list[tuple[str, list[str], tuple[int, ...]]]:
    confdir = str(ctx.confdir)
    mitmdump = [mitmdump_path(), "-q", "--listen-host", "127.0.0.1", "--listen-port", "0", "--set", f"confdir={confdir}"]
    return [
        ("`python -c pass` (the interpreter)", [PYTHON, "-c", "pass"], (0,)),
        ("`blackbox --version` (the CLI's imports)", [*_blackbox(), "--version"], (0,)),
        ("`mitmdump` start → listening → stop", [*mitmdump, "-s", str(STOP_ADDON)], (0,)),
        ("`blackbox replay RUN.json -- true` (10 calls)", [*_blackbox(), "replay", str(small), "--confdir", confdir, "--", "true"], (0, 1)),
        (
            f"`blackbox replay RUN.json -- true` ({large_calls:,} calls, {large.stat().st_size / 1e6:.0f} MB)",
            [*_blackbox(), "replay", str(large), "--confdir", confdir, "--", "true"],
            (0, 1),
        ),
        (
            # Issue #28's yardstick for the big cassette: a process that only loads it (parse, no verify).
            f"`load_trace` of the {large.stat().st_size / 1e6:.0f} MB cassette alone (python, imports + parse)",
            [PYTHON, "-c", f"from blackbox_mitm.cassette.load import load_trace; load_trace({str(large)!r})"],
            (0,),
        ),
        ("the same python without the load (imports only)", [PYTHON, "-c", "from blackbox_mitm.cassette.load import load_trace"], (0,)),
        (
            # The floor a replay cannot go under while it verifies before serving: load + verify, nothing else.
            f"`load_verified` (load + verify) of the {large.stat().st_size / 1e6:.0f} MB cassette alone",
            [
                PYTHON,
                "-c",
                f"from blackbox_mitm.codecs.verified import load_verified; load_verified({str(large)!r})",
            ],
            (0,),
        ),
        (
            "the same python without the load (imports only) ",
            [PYTHON, "-c", "from blackbox_mitm.codecs.verified import load_verified"],
            (0,),
        ),
    ]


def measure(ctx: Context) -> Section:
    from benchmarks.scaling import agent_cassette, sizes

    section = Section("startup", "4. Start-up")
    large_calls = sizes(ctx)[-1]
    small, large = agent_cassette(ctx, 10), agent_cassette(ctx, large_calls)
    cmds = commands(ctx, small, large, large_calls)
    times: list[list[float]] = [[] for _ in cmds]
    large_rounds = min(ctx.rounds, 3)  # each takes seconds: the cassette's load + verify
    for r in range(ctx.rounds):
        for i, (_, argv, ok) in enumerate(cmds):
            if i >= 4 and r >= large_rounds:
                continue
            times[i].append(_time(argv, ok))
    stats: list[Stats] = [summarize(t) for t in times]
    mitm = 2
    rows = []
    for i, (label, _, _) in enumerate(cmds):
        vs = ratio_stats(times[i], times[mitm][: len(times[i])]).fmt() if i > mitm else ("1.00" if i == mitm else "")
        rows.append((label, stats[i].fmt(1e3, 0), vs))
    section.add(
        f"Wall time from spawn to exit, {ctx.rounds} rounds (the commands in turns; {large_rounds} for the largest cassette). `mitmdump` runs a script that shuts it down in "
        "its `running` hook: imports, options, the CA, listening on 127.0.0.1, a clean shutdown. `blackbox replay ... -- true` "
        "loads and verifies the cassette, starts the same mitmproxy machinery in-process, runs `true` through it, stops and "
        'reports (exit 1, "incomplete": `true` makes none of the recorded calls — expected here).',
        "",
    )
    section.add(*md_table(("command", "ms", "× mitmdump start/stop"), rows), "")
    ratio_small = ratio_stats(times[3], times[mitm])
    ratio_large = ratio_stats(times[4], times[mitm][: len(times[4])])
    section.headline.append(
        f"Start-up: `blackbox replay RUN.json -- true` takes {stats[3].median:.2f} s with a 10-call cassette, "
        f"{ratio_small.median:.2f}x mitmdump starting and stopping ({stats[mitm].median:.2f} s); "
        f"{stats[4].median:.2f} s ({ratio_large.median:.1f}x) with the {large.stat().st_size / 1e6:.0f} MB cassette, "
        "whose load + verify (section 3) it includes."
    )
    # The big cassette's own cost (replay big - replay small) against its load alone (load_trace - the same imports).
    extra = [big - small for big, small in zip(times[4], times[3], strict=False)]
    load_only = [max(1e-3, load - imports) for load, imports in zip(times[5], times[6], strict=False)]
    ratio_load = ratio_stats(extra, load_only)
    verified_only = [max(1e-3, lv - imports) for lv, imports in zip(times[7], times[8], strict=False)]
    ratio_verified = ratio_stats(extra, verified_only)
    section.add(
        f"The big cassette's own cost, replay with it less replay with the 10-call one, is {summarize(extra).fmt(1e3, 0)} ms; "
        f"its load alone (`load_trace` less the same imports) {summarize(load_only).fmt(1e3, 0)} ms: "
        f"{ratio_load.fmt()} × the load; its load and verification alone (`load_verified` less the same imports) "
        f"{summarize(verified_only).fmt(1e3, 0)} ms: {ratio_verified.fmt()} × load + verify. What a replay adds to the load is "
        "the verification (every step re-hashed: canonical JSON + SHA-256, and the neutrality rules) — the floor while a replay "
        "verifies before it serves — and what is left over it: building the session (the recorded calls paired, their "
        "tool-call ids registered), starting the proxy. The recorded calls' digests are made as matching reaches them "
        "(`matcher/recorded.py`), so none is made at start-up.",
        "",
    )
    section.targets += [
        Target(
            "#28: `blackbox replay RUN -- true`, small cassette, ≤ mitmdump start/stop",
            "≤ 1.00",
            ratio_small.median,
            1.0,
            note="mitmproxy's own imports (`mitmproxy.master` imports every default addon, for mitmdump and us alike) "
            "and the CA's RSA key check (mitmdump loads the CA twice, Blackbox once) are most of both; ours on top: "
            "our own imports (CLI, codecs, matcher, re2: ~0.1 s by `-X importtime`), the cassette's load + verify, "
            "running `true`, the report",
        ),
        Target(
            "#28: `blackbox replay RUN -- true`, big cassette: (big − small cassette) / the big cassette's load alone",
            "≤ 1.00",
            ratio_load.median,
            1.0,
            note=f"verify re-hashes every step and runs the neutrality pre-scan (RE2 gates) before anything is served (a "
            f"cassette that does not verify is never replayed; verification is not made lazy, so `verify`'s promise "
            f"holds): against load + verify the ratio is {ratio_verified.median:.2f}",
        ),
    ]
    data: dict[str, Any] = {
        "ratio_load": ratio_load.to_json(),
        "ratio_load_verify": ratio_verified.to_json(),
        "commands": [label for label, _, _ in cmds],
        "times_s": times,
        "ratio_small": ratio_small.to_json(),
        "ratio_large": ratio_large.to_json(),
    }

    if ctx.profile and pyspy_path():
        for label, argv, name in ((cmds[3][0], cmds[3][1], "startup-small"), (cmds[4][0], cmds[4][1], "startup-large")):
            out = ctx.path(f"profile-{name}.txt")
            error = pyspy_command(argv, out)
            if error:
                section.add(f"*{label}: not profiled ({error}).*", "")
                continue
            summary = summarize_collapsed(out, ours_files=_OURS_AT_STARTUP)
            imports = share_of(out, "_find_and_load")
            section.add(*summary.markdown(f"Profile of {label} (py-spy, every thread)", ours_label="`blackbox_mitm`, imports included"), "")
            section.add(f"Of its busy samples, {100 * imports:.0f}% are imports (`_find_and_load`).", "")
            data.setdefault("profiles", {})[name] = {**summary.to_json(), "imports_share": imports}
    section.data = data
    return section
