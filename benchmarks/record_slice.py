"""The recording slice of section 1 alone: (b) mitmdump passthrough and (e) blackbox record, side by side.

    python benchmarks/record_slice.py --rounds 3            # ratios e/b (wall and proxy CPU), sequential and concurrent
    python benchmarks/record_slice.py --rounds 1 --spy      # and a py-spy profile of (e) (an extra, untimed run)

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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import PYTHON, Context, Service, free_port
from benchmarks.profiles import PySpy
from benchmarks.proxy_calls import PROVIDER, _Plan, _run_variant, _service_for, fsync_cost, run_client


def _ratios(results: dict[str, list[dict]], phase: str, key: str) -> list[float]:
    return [e[phase][key] / b[phase][key] for b, e in zip(results["b"], results["e"], strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--spy", action="store_true", help="py-spy (e) during an extra, untimed run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bb-record-slice-", dir=Path(__file__).resolve().parent.parent) as tmp:
        work = Path(tmp)
        (work / "conf").mkdir()
        ctx = Context(quick=False, rounds=args.rounds, workdir=work, confdir=work / "conf", profile=False, log=print)
        plan = _Plan(ctx)
        results: dict[str, list[dict]] = {"b": [], "e": []}
        port = free_port()
        print(f"load before: {os.getloadavg()[0]:.2f}")
        with Service("provider", [PYTHON, str(PROVIDER), "--port", str(port)], port=port, log_dir=work) as provider:
            none = work / "none"
            for r in range(args.rounds):
                for variant in ("be" if r % 2 == 0 else "eb"):
                    results[variant].append(_run_variant(ctx, plan, variant, provider, none, none, r))
                print(
                    f"round {r + 1}: b {results['b'][-1]['seq']['per_call_s'] * 1e3:.2f} ms, "
                    f"e {results['e'][-1]['seq']['per_call_s'] * 1e3:.2f} ms per call (seq)"
                )
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
        with_sync, without = fsync_cost(work, rounds=200)
        print(f"load after: {os.getloadavg()[0]:.2f}")
        for phase in ("seq", "conc"):
            for key, name in (("per_call_s", "wall"), ("proxy_cpu_per_call_s", "proxy CPU")):
                values = _ratios(results, phase, key)
                print(f"e/b {phase} {name}: median {statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})")
        e_seq = [e["seq"]["per_call_s"] for e in results["e"]]
        b_seq = [b["seq"]["per_call_s"] for b in results["b"]]
        no_sync = [(e - with_sync) / b for e, b in zip(e_seq, b_seq, strict=True)]
        print(f"fsync alone: {with_sync * 1e3:.3f} ms with, {without * 1e6:.1f} us without (median of 200 3 KB appends)")
        print(f"e/b seq minus the fsync: median {statistics.median(no_sync):.2f}")


if __name__ == "__main__":
    main()
