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
  10-call cassette, and with the largest benchmark cassette: verified before (the
  run's cache of verified contents warm, ``BLACKBOX_CACHE_DIR`` in the run's
  folder) and the first time (``BLACKBOX_NO_CACHE=1``).

The commands are run in turns (one of each per round), each with the same CA directory.
"""

from __future__ import annotations

import os
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


# A load that verifies the whole file, whatever the cache of verified contents holds (cassette/verified_cache.py).
COLD = {"BLACKBOX_NO_CACHE": "1"}


def _time(argv: Sequence[str], ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None) -> float:
    full = {**os.environ, **env} if env else None
    t0 = time.perf_counter()
    proc = subprocess.run(list(argv), capture_output=True, text=True, cwd=ROOT, timeout=600, stdin=subprocess.DEVNULL, env=full)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in ok or "Traceback" in proc.stderr:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return elapsed


Command = tuple[str, list[str], tuple[int, ...], dict[str, str] | None]


def commands(ctx: Context, small: Path, large: Path, large_calls: int) -> list[Command]:
    """(label, argv, exit codes that are fine, environment changes) of each command, in the order they are run in a round."""
    confdir = str(ctx.confdir)
    mitmdump = [mitmdump_path(), "-q", "--listen-host", "127.0.0.1", "--listen-port", "0", "--set", f"confdir={confdir}"]
    mb = f"{large.stat().st_size / 1e6:.0f} MB"
    big_replay = [*_blackbox(), "replay", str(large), "--confdir", confdir, "--", "true"]
    return [
        ("`python -c pass` (the interpreter)", [PYTHON, "-c", "pass"], (0,), None),
        ("`blackbox --version` (the CLI's imports)", [*_blackbox(), "--version"], (0,), None),
        ("`mitmdump` start → listening → stop", [*mitmdump, "-s", str(STOP_ADDON)], (0,), None),
        (
            "`blackbox replay RUN.json -- true` (10 calls)",
            [*_blackbox(), "replay", str(small), "--confdir", confdir, "--", "true"],
            (0, 1),
            None,
        ),
        (f"`blackbox replay RUN.json -- true` ({large_calls:,} calls, {mb}), verified before (the cache warm)", big_replay, (0, 1), None),
        (
            # Issue #28's yardstick for the big cassette: a process that only loads it (parse, no verify).
            f"`load_trace` of the {mb} cassette alone (python, imports + parse)",
            [PYTHON, "-c", f"from blackbox_mitm.cassette.load import load_trace; load_trace({str(large)!r})"],
            (0,),
            None,
        ),
        (
            "the same python without the load (imports only)",
            [PYTHON, "-c", "from blackbox_mitm.cassette.load import load_trace"],
            (0,),
            None,
        ),
        (
            # The floor a first replay of these bytes cannot go under while it verifies before serving: load + verify.
            f"`load_verified` (load + verify, no cache) of the {mb} cassette alone",
            [PYTHON, "-c", f"from blackbox_mitm.codecs.verified import load_verified; load_verified({str(large)!r})"],
            (0,),
            COLD,
        ),
        (
            "the same python without the load (imports only) ",
            [PYTHON, "-c", "from blackbox_mitm.codecs.verified import load_verified"],
            (0,),
            None,
        ),
        (f"`blackbox replay RUN.json -- true` ({large_calls:,} calls, {mb}), no cache (`BLACKBOX_NO_CACHE=1`)", big_replay, (0, 1), COLD),
    ]


def session_build(cassette: Path, repeat: int = 5) -> float:
    """Median seconds ``replay_session`` spends beyond loading ``cassette`` (in-process, the trace loaded once before):
    the recorded calls paired, their tool-call ids registered, the release rule's scan of overlapping calls."""
    from unittest import mock

    import blackbox_mitm.session.build as build
    from blackbox_mitm.codecs.verified import load_verified

    trace = load_verified(cassette)
    times = []
    with mock.patch.object(build, "load_verified", lambda *args, **kwargs: trace):  # the load is measured on its own
        for _ in range(repeat):
            t0 = time.perf_counter()
            build.replay_session(cassette)
            times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def measure(ctx: Context) -> Section:
    from benchmarks.scaling import agent_cassette, sizes

    section = Section("startup", "4. Start-up")
    large_calls = sizes(ctx)[-1]
    small, large = agent_cassette(ctx, 10), agent_cassette(ctx, large_calls)
    cmds = commands(ctx, small, large, large_calls)
    times: list[list[float]] = [[] for _ in cmds]
    large_rounds = min(ctx.rounds, 3)  # each takes seconds: the cassette's load + verify
    _time(cmds[4][1], cmds[4][2])  # the warm rows' cache: one replay of the big cassette first, not timed
    for r in range(ctx.rounds):
        for i, (_, argv, ok, env) in enumerate(cmds):
            if i >= 4 and r >= large_rounds:
                continue
            times[i].append(_time(argv, ok, env))
    stats: list[Stats] = [summarize(t) for t in times]
    mitm = 2
    rows = []
    for i, (label, *_) in enumerate(cmds):
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
        f"{stats[4].median:.2f} s ({ratio_large.median:.1f}x) with the {large.stat().st_size / 1e6:.0f} MB cassette verified before, "
        f"{stats[9].median:.2f} s the first time (its whole verification included)."
    )
    # The big cassette's own cost (replay big - replay small) against its load alone (load_trace - the same imports).
    extra = [big - small for big, small in zip(times[4], times[3], strict=False)]
    cold = [big - small for big, small in zip(times[9], times[3], strict=False)]
    load_only = [max(1e-3, load - imports) for load, imports in zip(times[5], times[6], strict=False)]
    ratio_load = ratio_stats(extra, load_only)
    verified_only = [max(1e-3, lv - imports) for lv, imports in zip(times[7], times[8], strict=False)]
    ratio_cold = ratio_stats(cold, verified_only)
    section.add(
        f"The big cassette's own cost, replay with it less replay with the 10-call one, is {summarize(extra).fmt(1e3, 0)} ms "
        f"when these bytes verified before; its load alone (`load_trace` less the same imports) {summarize(load_only).fmt(1e3, 0)} ms: "
        f"{ratio_load.fmt()} × the load. The first replay of these bytes (no cache) costs {summarize(cold).fmt(1e3, 0)} ms "
        f"over the small one; its load and verification alone (`load_verified` less the same imports) "
        f"{summarize(verified_only).fmt(1e3, 0)} ms: {ratio_cold.fmt()} × load + verify. A replay verifies before it serves; "
        "what it skips is re-checking contents that verified before under the same provider facts and the same verifier "
        "(`cassette/verified_cache.py`: keyed by the SHA-256 of the text as read, hashed while it is parsed). What is left "
        "over the load: that SHA-256, building the session (the recorded calls paired, their tool-call ids registered) and "
        "starting the proxy. The recorded calls' digests are made as matching reaches them (`matcher/recorded.py`), so none "
        "is made at start-up; and the loaded trace is frozen out of the cyclic collector's walks (`gc.freeze`, "
        "`cassette/stepwise.py`), which would otherwise walk its millions of objects again at each full collection.",
        "",
    )
    built = session_build(large, repeat=2 if ctx.quick else 5)
    section.add(
        f"Of that, building the replay's session beyond the load (the {large_calls:,} recorded calls paired, their tool-call "
        f"ids registered, the release rule's scan for overlapping calls; in-process, median of passes) takes "
        f"{built * 1e3:.0f} ms.",
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
            note=f"with the cache of verified contents warm: the load itself (its SHA-256, the cache key, included) is on both "
            f"sides; over it, building the session ({built * 1e3:.0f} ms: pairing {large_calls:,} calls, registering their ids, "
            f"the release rule's scan), and spawning the command from a process that holds the trace. Nothing is verified "
            f"lazily: a cassette is verified whole before anything is served, or its exact bytes were, by this verifier. The "
            f"first replay of these bytes (no cache): {ratio_cold.median:.2f} × load + verify",
        ),
    ]
    data: dict[str, Any] = {
        "ratio_load": ratio_load.to_json(),
        "session_build_s": built,
        "ratio_first_load_verify": ratio_cold.to_json(),
        "commands": [label for label, *_ in cmds],
        "times_s": times,
        "ratio_small": ratio_small.to_json(),
        "ratio_large": ratio_large.to_json(),
    }

    if ctx.profile and pyspy_path():
        for label, argv, name in ((cmds[3][0], cmds[3][1], "startup-small"), (cmds[4][0], cmds[4][1], "startup-large")):  # warm
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
