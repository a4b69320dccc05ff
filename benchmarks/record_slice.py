"""The recording slice of section 1 alone: (b) mitmdump passthrough and (e) blackbox record, side by side.

    python benchmarks/record_slice.py --rounds 3            # ratios e/b (wall and proxy CPU), sequential and concurrent
    python benchmarks/record_slice.py --rounds 1 --spy      # and a py-spy profile of (e) (an extra, untimed run)
    python benchmarks/record_slice.py --baseline DIR        # and (e0): the same recording by the blackbox_mitm under DIR, and e/e0

It runs the same processes, client and workload as ``proxy_calls`` (section 1), only variants (b) and (e), in
alternating order per round, so that a change to the recording path can be measured before and after without the
whole section. It prints figures; it writes no report (``run.py --only calls`` writes section 1).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import PYTHON, Context, Service, free_port
from benchmarks.profiles import PySpy
from benchmarks.proxy_calls import (
    PROVIDER,
    _count_calls,
    _Plan,
    _run_variant,
    _service_for,
    blackbox_argv,
    fsync_cost,
    map_remote_args,
    run_client,
)


def _baseline_run(ctx: Context, plan: _Plan, provider: Service, baseline: Path, round_no: int) -> dict[str, Any]:
    """(e) recorded by the package under ``baseline`` (an older checkout), measured as ``_run_variant`` measures (e)."""
    cassette = ctx.path(f"record0-{round_no}.json")
    port = free_port()
    argv = blackbox_argv("record", cassette, port, ctx.confdir, "--overwrite", *map_remote_args(provider.url))
    boot = f"import runpy, sys; sys.path.insert(0, {str(baseline)!r}); sys.argv[0] = 'blackbox'; runpy.run_module('blackbox_mitm', run_name='__main__')"
    argv[1:3] = ["-c", boot]
    with Service(f"e0-round{round_no}", argv, port=port, log_dir=ctx.workdir) as service:
        raw = run_client(ctx, proxy_url=service.url, base_url=None, args=plan.client_args(), watch=[service.pid, provider.pid])
        pid = service.pid
    if _count_calls(cassette) != plan.total:
        raise RuntimeError("(e0) did not record every call")
    cassette.unlink()
    return {
        phase: {
            "per_call_s": raw["phases"][phase]["wall_s"] / raw["phases"][phase]["calls"],
            "proxy_cpu_per_call_s": raw["phases"][phase]["cpu_s"].get(str(pid), 0.0) / raw["phases"][phase]["calls"],
        }
        for phase in ("seq", "conc")
    }


def _ratios(results: dict[str, list[dict[str, Any]]], phase: str, key: str, num: str = "e") -> list[float]:
    return [e[phase][key] / b[phase][key] for b, e in zip(results["b"], results[num], strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--spy", action="store_true", help="py-spy (e) during an extra, untimed run")
    parser.add_argument("--baseline", type=Path, help="a folder holding another blackbox_mitm: its recording as (e0)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bb-record-slice-", dir=Path(__file__).resolve().parent.parent) as tmp:
        work = Path(tmp)
        (work / "conf").mkdir()
        ctx = Context(quick=False, rounds=args.rounds, workdir=work, confdir=work / "conf", profile=False, log=print)
        plan = _Plan(ctx)
        results: dict[str, list[dict[str, Any]]] = {"b": [], "e": [], "e0": []}
        port = free_port()
        print(f"load before: {os.getloadavg()[0]:.2f}")
        with Service("provider", [PYTHON, str(PROVIDER), "--port", str(port)], port=port, log_dir=work) as provider:
            none = work / "none"
            for r in range(args.rounds):
                order = ["b", "e", *(["e0"] if args.baseline else [])]
                order = order[r % len(order) :] + order[: r % len(order)]
                for variant in order:
                    if variant == "e0":
                        results["e0"].append(_baseline_run(ctx, plan, provider, args.baseline.resolve(), r))
                    else:
                        results[variant].append(_run_variant(ctx, plan, variant, provider, none, none, r))
                print(f"round {r + 1}: " + ", ".join(f"{v} {results[v][-1]['seq']['per_call_s'] * 1e3:.2f} ms" for v in order) + " (seq)")
            if args.spy:
                service = _service_for(ctx, "e", provider, none, none, 99)
                assert service is not None
                with service:
                    spy = PySpy(service.pid, work / "profile-e.txt", rate=500)
                    with spy:
                        run_client(ctx, proxy_url=service.url, base_url=None, args=plan.client_args(), watch=[])
                    summary = spy.summary()
                print(summary if summary is not None else spy.error)
                if (work / "profile-e.txt").exists():
                    Path("/tmp/record-slice-profile-e.txt").write_bytes((work / "profile-e.txt").read_bytes())
        with_sync, appended, without = fsync_cost(work, rounds=200)
        print(f"load after: {os.getloadavg()[0]:.2f}")
        for num in ("e", "e0") if args.baseline else ("e",):
            for phase in ("seq", "conc"):
                for key, name in (("per_call_s", "wall"), ("proxy_cpu_per_call_s", "proxy CPU")):
                    values = _ratios(results, phase, key, num)
                    print(f"{num}/b {phase} {name}: median {statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})")
        for phase in ("seq", "conc") if args.baseline else ():  # this tree's recording against the baseline's, round by round
            for key, name in (("per_call_s", "wall"), ("proxy_cpu_per_call_s", "proxy CPU")):
                values = [e[phase][key] / e0[phase][key] for e, e0 in zip(results["e"], results["e0"], strict=True)]
                print(f"e/e0 {phase} {name}: median {statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})")
        e_seq = [e["seq"]["per_call_s"] for e in results["e"]]
        b_seq = [b["seq"]["per_call_s"] for b in results["b"]]
        no_sync = [(e - with_sync) / b for e, b in zip(e_seq, b_seq, strict=True)]
        print(
            f"fsync alone: the journal {with_sync * 1e3:.3f} ms, appended {appended * 1e3:.3f} ms, {without * 1e6:.1f} us without (medians of 200 3 KB lines)"
        )
        print(f"e/b seq minus the fsync: median {statistics.median(no_sync):.2f}")


if __name__ == "__main__":
    main()
