"""Section 10: a Responses API call through each proxy, with the official openai SDK (issue #14).

The same sequence of ``responses.create`` calls (each distinct, so a replay
matches by content) against the fake Responses API (``examples/fake_responses.py``,
its own process), four ways, interleaved round by round, as section 1 does for
chat completions:

* (a) the SDK straight to the fake API over HTTP — the floor;
* (b) plain ``mitmdump`` passthrough (TLS interception, ``map_remote``);
* (c) mitmproxy's ``server_replay`` of a flow file recorded once with ``mitmdump -w``;
* (d) ``blackbox proxy --mode replay`` (strict) of a cassette recorded once.

The client (``benchmarks/responses_client.py``, its own process) sends warm-up
calls, then N one after another (``seq``), then N more from 8 threads sharing
one client (``conc``). The per-call time of a phase is its wall time over N.

    python benchmarks/run.py --only responses
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from benchmarks.common import PYTHON, ROOT, Context, Section, Service, Target, free_port, md_table, ratio_stats, summarize
from benchmarks.proxy_calls import blackbox_argv, client_environment, map_remote_args, mitmdump_argv, rewrite_flows

__all__ = ["measure"]

CLIENT = ROOT / "benchmarks" / "responses_client.py"
FAKE = ROOT / "examples" / "fake_responses.py"
VARIANTS = ("a", "b", "c", "d")
LABELS = {
    "a": "(a) direct to the provider (floor)",
    "b": "(b) mitmdump passthrough",
    "c": "(c) mitmdump server_replay",
    "d": "(d) blackbox replay",
}
PHASES = {"seq": "sequential", "conc": "8 concurrent clients"}


def _client(ctx: Context, proxy_url: str | None, base_url: str | None, n: int, warmup: int) -> dict[str, Any]:
    argv = [PYTHON, str(CLIENT), "--n", str(n), "--warmup", str(warmup), "--concurrency", "8"]
    argv += ["--base-url", base_url] if base_url else []
    proc = subprocess.run(argv, env=client_environment(proxy_url, ctx.confdir), capture_output=True, text=True, timeout=1200, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"the Responses benchmark client failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def _prepare(ctx: Context, fake: Service, n: int, warmup: int) -> tuple[Path, Path]:
    """The flow file for (c) and the cassette for (d), each recorded once through the same call sequence."""
    raw, flows = ctx.path("responses-flows-raw.mitm"), ctx.path("responses-flows.mitm")
    port = free_port()
    with Service(
        "responses-prep-mitmdump-w",
        mitmdump_argv(port, ctx.confdir, *map_remote_args(fake.url), "-w", str(raw)),
        port=port,
        log_dir=ctx.workdir,
    ) as proxy:
        _client(ctx, proxy.url, None, n, warmup)
    if rewrite_flows(raw, flows) != warmup + 2 * n:
        raise RuntimeError("the Responses flow file does not hold every call")
    cassette = ctx.path("responses.json")
    port = free_port()
    argv = blackbox_argv("record", cassette, port, ctx.confdir, "--overwrite", *map_remote_args(fake.url))
    with Service("responses-prep-record", argv, port=port, log_dir=ctx.workdir) as proxy:
        _client(ctx, proxy.url, None, n, warmup)
    return flows, cassette


def _service(ctx: Context, variant: str, fake: Service, flows: Path, cassette: Path, r: int) -> Service:
    port = free_port()
    if variant == "b":
        argv = mitmdump_argv(port, ctx.confdir, *map_remote_args(fake.url))
    elif variant == "c":
        argv = mitmdump_argv(port, ctx.confdir, "--server-replay", str(flows), "--set", "server_replay_reuse=true")
        argv += ["--set", "server_replay_extra=kill", "--set", "upstream_cert=false"]
    else:
        argv = blackbox_argv("replay", cassette, port, ctx.confdir)
    return Service(f"responses-{variant}-{r}", argv, port=port, log_dir=ctx.workdir)


def measure(ctx: Context) -> Section:
    section = Section("responses", "10. A Responses API call through each proxy (openai SDK)")
    n, warmup = (10, 2) if ctx.quick else (300, 8)
    per_call: dict[str, dict[str, list[float]]] = {p: {v: [] for v in VARIANTS} for p in PHASES}
    fake_port = free_port()
    with Service("fake-responses", [PYTHON, str(FAKE), "--port", str(fake_port)], port=fake_port, log_dir=ctx.workdir) as fake:
        flows, cassette = _prepare(ctx, fake, n, warmup)
        for r in range(ctx.rounds):
            for variant in VARIANTS[r % 4 :] + VARIANTS[: r % 4]:
                if variant == "a":
                    result = _client(ctx, None, fake.url, n, warmup)
                else:
                    with _service(ctx, variant, fake, flows, cassette, r) as proxy:
                        result = _client(ctx, proxy.url, None, n, warmup)
                for phase in PHASES:
                    per_call[phase][variant].append(result["phases"][phase]["wall_s"] / n)
            ctx.log(
                f"  round {r + 1}/{ctx.rounds}: "
                + ", ".join(f"{v} {per_call['seq'][v][-1] * 1e3:.2f}" for v in VARIANTS)
                + " ms/call (seq)"
            )
    rows = []
    for phase, phase_label in PHASES.items():
        for v, label in LABELS.items():
            stats = summarize(per_call[phase][v])
            vs_direct = ratio_stats(per_call[phase][v], per_call[phase]["a"]).fmt() if v != "a" else "1.00"
            vs_pass = ratio_stats(per_call[phase][v], per_call[phase]["b"]).fmt() if v != "b" else "1.00"
            rows.append((phase_label, label, stats.fmt(1e3, 2), vs_direct, vs_pass))
    section.add(
        f"{n} distinct `responses.create` calls one after another, then {n} more from 8 threads sharing one client (after "
        f"{warmup} warm-up calls), {ctx.rounds} rounds, the variants interleaved. Each proxy is a fresh process per round; "
        "its start-up is not timed.",
        "",
        *md_table(("phase", "variant", "ms per call", "× direct", "× passthrough"), rows),
        "",
    )
    for phase, phase_label in PHASES.items():
        ours = ratio_stats(per_call[phase]["d"], per_call[phase]["c"])
        section.headline.append(
            f"Responses API ({phase_label}): a replayed `responses.create` call takes "
            f"{summarize(per_call[phase]['d']).median * 1e3:.2f} ms through `blackbox proxy --mode replay`, "
            f"{ours.median:.2f}x mitmdump's server_replay and "
            f"{ratio_stats(per_call[phase]['d'], per_call[phase]['b']).median:.2f}x passthrough."
        )
        section.targets.append(
            Target(
                f"#28: Responses (HTTP) replay ≤ 0.9 × server_replay, {phase_label}",
                "d/c ≤ 0.90",
                ours.median,
                0.9,
                note="see section 1's in-process hooks: mitmproxy's per-flow work is shared; ours is decode + digest + encode",
            )
        )
    section.data = {"n": n, "per_call_s": per_call}
    return section
