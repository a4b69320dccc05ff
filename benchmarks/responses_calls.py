"""Section 10: a call to each other API through each proxy — Responses (HTTP and SSE), Anthropic messages (issue #28).

For each API, the same sequence of distinct calls (so a replay matches by
content) against its fake API (``examples/fake_responses.py`` for Responses,
``benchmarks/provider.py`` — ``examples/fake_provider.py`` — for Anthropic), each
its own process, four ways, interleaved round by round as section 1 does for
chat completions:

* (a) the SDK straight to the fake API over HTTP — the floor;
* (b) plain ``mitmdump`` passthrough (TLS interception, ``map_remote``);
* (c) mitmproxy's ``server_replay`` of a flow file recorded once with ``mitmdump -w``;
* (d) ``blackbox proxy --mode replay`` (strict) of a cassette recorded once.

The client (``benchmarks/api_client.py --api ...``, its own process) sends
warm-up calls, then N one after another (``seq``), then N more from 8 threads
sharing one client (``conc``). The per-call time of a phase is its wall time over N.
A Responses SSE call reads every event of the stream (``stream=True``).

``--quick`` (a smoke run of every API and variant, one round) starts each fake API, each
preparing proxy and each variant's proxy once for the three APIs (``_measure_together``), and
one client process for the section (``api_client.py --serve``, ``benchmarks/served.py``), each
client run a job of it with SDK clients made anew; the full run gives every API its own fake,
proxies and client processes, as above.

    python benchmarks/run.py --only responses
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import PYTHON, ROOT, Context, Section, Service, Target, free_port, md_table, ratio_stats, summarize
from benchmarks.proxy_calls import blackbox_argv, client_environment, map_remote_args, mitmdump_argv, rewrite_flows
from benchmarks.served import client_run, served_clients

__all__ = ["measure"]

CLIENT = ROOT / "benchmarks" / "api_client.py"
VARIANTS = ("a", "b", "c", "d")
LABELS = {
    "a": "(a) direct to the provider (floor)",
    "b": "(b) mitmdump passthrough",
    "c": "(c) mitmdump server_replay",
    "d": "(d) blackbox replay",
}
PHASES = {"seq": "sequential", "conc": "8 concurrent clients"}


@dataclass(frozen=True)
class Api:
    key: str  # api_client.py --api
    label: str
    fake: Path
    host: str


APIS = (
    Api("responses", "Responses (HTTP)", ROOT / "examples" / "fake_responses.py", "api.openai.com"),
    Api("responses-sse", "Responses (SSE)", ROOT / "examples" / "fake_responses.py", "api.openai.com"),
    Api("anthropic", "Anthropic messages", ROOT / "benchmarks" / "provider.py", "api.anthropic.com"),
)


def _client(ctx: Context, api: Api, proxy_url: str | None, base_url: str | None, n: int, warmup: int, first: int = 0) -> dict[str, Any]:
    argv = ["--api", api.key, "--n", str(n), "--warmup", str(warmup), "--concurrency", "8"]
    argv += ["--base-url", base_url] if base_url else []
    argv += ["--first", str(first)] if first else []
    env = client_environment(proxy_url, ctx.confdir)
    return client_run(ctx, "api_client", [str(CLIENT)], argv, env, label=f"the {api.label} benchmark client", timeout=1200)


def _prepare(ctx: Context, api: Api, fake: Service, n: int, warmup: int) -> tuple[Path, Path]:
    """The flow file for (c) and the cassette for (d), each recorded once through the same call sequence."""
    raw, flows = ctx.path(f"{api.key}-flows-raw.mitm"), ctx.path(f"{api.key}-flows.mitm")
    port = free_port()
    argv = mitmdump_argv(port, ctx.confdir, *map_remote_args(fake.url, api.host), "-w", str(raw))
    with Service(f"{api.key}-prep-mitmdump-w", argv, port=port, log_dir=ctx.workdir) as proxy:
        _client(ctx, api, proxy.url, None, n, warmup)
    if rewrite_flows(raw, flows, api.host) != warmup + 2 * n:
        raise RuntimeError(f"the {api.label} flow file does not hold every call")
    cassette = ctx.path(f"{api.key}.json")
    port = free_port()
    argv = blackbox_argv("record", cassette, port, ctx.confdir, "--overwrite", *map_remote_args(fake.url, api.host))
    with Service(f"{api.key}-prep-record", argv, port=port, log_dir=ctx.workdir) as proxy:
        _client(ctx, api, proxy.url, None, n, warmup)
    return flows, cassette


def _service(ctx: Context, api: Api, variant: str, fake: Service, flows: Path, cassette: Path, r: int) -> Service:
    port = free_port()
    if variant == "b":
        argv = mitmdump_argv(port, ctx.confdir, *map_remote_args(fake.url, api.host))
    elif variant == "c":
        argv = mitmdump_argv(port, ctx.confdir, "--server-replay", str(flows), "--set", "server_replay_reuse=true")
        argv += ["--set", "server_replay_extra=kill", "--set", "upstream_cert=false"]
    else:
        argv = blackbox_argv("replay", cassette, port, ctx.confdir)
    return Service(f"{api.key}-{variant}-{r}", argv, port=port, log_dir=ctx.workdir)


def _measure_api(ctx: Context, api: Api, n: int, warmup: int) -> dict[str, dict[str, list[float]]]:
    per_call: dict[str, dict[str, list[float]]] = {p: {v: [] for v in VARIANTS} for p in PHASES}
    fake_port = free_port()
    with Service(f"fake-{api.key}", [PYTHON, str(api.fake), "--port", str(fake_port)], port=fake_port, log_dir=ctx.workdir) as fake:
        flows, cassette = _prepare(ctx, api, fake, n, warmup)
        for r in range(ctx.rounds):
            for variant in VARIANTS[r % 4 :] + VARIANTS[: r % 4]:
                if variant == "a":
                    result = _client(ctx, api, None, fake.url, n, warmup)
                else:
                    with _service(ctx, api, variant, fake, flows, cassette, r) as proxy:
                        result = _client(ctx, api, proxy.url, None, n, warmup)
                for phase in PHASES:
                    per_call[phase][variant].append(result["phases"][phase]["wall_s"] / n)
            ctx.log(
                f"  {api.label} round {r + 1}/{ctx.rounds}: "
                + ", ".join(f"{v} {per_call['seq'][v][-1] * 1e3:.2f}" for v in VARIANTS)
                + " ms/call (seq)"
            )
    return per_call


def _rewrite_by_port(raw: Path, out: Path, hosts: dict[int, str]) -> int:
    """``rewrite_flows`` for a flow file of several fake APIs: each flow given back the real host its fake's port stands for."""
    from mitmproxy import http, io

    with raw.open("rb") as f:
        flows = [flow for flow in io.FlowReader(f).stream() if isinstance(flow, http.HTTPFlow)]
    with out.open("wb") as f:
        writer = io.FlowWriter(f)
        for flow in flows:
            host = hosts[flow.request.port]
            flow.request.scheme, flow.request.host, flow.request.port = "https", host, 443
            flow.request.headers["host"] = host
            writer.add(flow)
    return len(flows)


def _service_together(ctx: Context, variant: str, remote: list[str], flows: Path, cassette: Path) -> Service:
    """``_service`` for every API at once: (b) maps each API's host to its fake."""
    port = free_port()
    if variant == "b":
        argv = mitmdump_argv(port, ctx.confdir, *remote)
    elif variant == "c":
        argv = mitmdump_argv(port, ctx.confdir, "--server-replay", str(flows), "--set", "server_replay_reuse=true")
        argv += ["--set", "server_replay_extra=kill", "--set", "upstream_cert=false"]
    else:
        argv = blackbox_argv("replay", cassette, port, ctx.confdir)
    return Service(f"apis-{variant}-0", argv, port=port, log_dir=ctx.workdir)


def _measure_together(ctx: Context, n: int, warmup: int) -> dict[str, dict[str, dict[str, list[float]]]]:
    """``--quick``: every API through one proxy a variant, each fake API started once, the section's one served client.

    Each API's question numbers start at its position × 100,000: no two APIs' calls carry the same question."""
    per_call: dict[str, dict[str, dict[str, list[float]]]] = {api.key: {p: {v: [] for v in VARIANTS} for p in PHASES} for api in APIS}
    ports = {script: free_port() for script in sorted({api.fake for api in APIS})}
    with contextlib.ExitStack() as stack:
        fakes = {
            s: stack.enter_context(Service(f"fake-{s.stem}", [PYTHON, str(s), "--port", str(p)], port=p, log_dir=ctx.workdir))
            for s, p in ports.items()
        }

        def each_api(proxy_url: str | None, direct: bool = False) -> dict[str, dict[str, Any]]:
            return {
                api.key: _client(ctx, api, proxy_url, fakes[api.fake].url if direct else None, n, warmup, k * 100_000)
                for k, api in enumerate(APIS)
            }

        remote = [a for api in APIS if api.key != "responses-sse" for a in map_remote_args(fakes[api.fake].url, api.host)]
        raw, flows, cassette = ctx.path("apis-flows-raw.mitm"), ctx.path("apis-flows.mitm"), ctx.path("apis.json")
        port = free_port()
        with Service("apis-prep-w", mitmdump_argv(port, ctx.confdir, *remote, "-w", str(raw)), port=port, log_dir=ctx.workdir) as w:
            each_api(w.url)
        if _rewrite_by_port(raw, flows, {ports[api.fake]: api.host for api in APIS}) != len(APIS) * (warmup + 2 * n):
            raise RuntimeError("the flow file does not hold every API's calls")
        port = free_port()
        argv = blackbox_argv("record", cassette, port, ctx.confdir, "--overwrite", *remote)
        with Service("apis-prep-record", argv, port=port, log_dir=ctx.workdir) as rec:
            each_api(rec.url)
        for variant in VARIANTS:
            if variant == "a":
                result = each_api(None, direct=True)
            else:
                with _service_together(ctx, variant, remote, flows, cassette) as proxy:
                    result = each_api(proxy.url)
            for key, found in result.items():
                for phase in PHASES:
                    per_call[key][phase][variant].append(found["phases"][phase]["wall_s"] / n)
        ctx.log("  every API, one round: " + ", ".join(f"{v} {per_call['responses']['seq'][v][-1] * 1e3:.2f}" for v in VARIANTS))
    return per_call


def measure(ctx: Context) -> Section:
    section = Section("responses", "10. A Responses (HTTP and SSE) and an Anthropic messages call through each proxy")
    n, warmup = (5, 2) if ctx.quick else (100, 4)
    rows: list[tuple[str, ...]] = []
    data: dict[str, Any] = {"n": n}
    one_round = ctx.quick and ctx.rounds == 1  # --quick: the three APIs together (_measure_together)
    with served_clients(ctx):
        measured = _measure_together(ctx, n, warmup) if one_round else {api.key: _measure_api(ctx, api, n, warmup) for api in APIS}
    for api in APIS:
        per_call = measured[api.key]
        data[api.key] = per_call
        for phase, phase_label in PHASES.items():
            for v, label in LABELS.items():
                stats = summarize(per_call[phase][v])
                vs_direct = ratio_stats(per_call[phase][v], per_call[phase]["a"]).fmt() if v != "a" else "1.00"
                vs_replay = ratio_stats(per_call[phase][v], per_call[phase]["c"]).fmt() if v != "c" else "1.00"
                rows.append((api.label, phase_label, label, stats.fmt(1e3, 2), vs_direct, vs_replay))
        for phase, phase_label in PHASES.items():
            ours = ratio_stats(per_call[phase]["d"], per_call[phase]["c"])
            section.headline.append(
                f"{api.label} ({phase_label}): a replayed call takes {summarize(per_call[phase]['d']).median * 1e3:.2f} ms through "
                f"`blackbox proxy --mode replay`, {ours.median:.2f}x mitmdump's server_replay and "
                f"{ratio_stats(per_call[phase]['d'], per_call[phase]['b']).median:.2f}x passthrough."
            )
            section.targets.append(
                Target(
                    f"#28: {api.label} replay ≤ 0.9 × server_replay, {phase_label}",
                    "d/c ≤ 0.90",
                    ours.median,
                    0.9,
                    note="mitmproxy's per-flow work is shared by both; ours adds decode + digest + encode (section 1's in-process hooks)",
                )
            )
    section.add(
        f"Per API: {n} distinct calls one after another, then {n} more from 8 threads sharing one client (after {warmup} warm-up "
        f"calls), {ctx.rounds} rounds, the variants interleaved. Each proxy is a fresh process per round; its start-up is not timed. "
        + ("(`--quick`: one proxy a variant for the three APIs, one client process for every variant.) " if one_round else "")
        + "A Responses SSE call is `stream=True` with every event read; Anthropic is the anthropic SDK's `messages.create`.",
        "",
        *md_table(("API", "phase", "variant", "ms per call", "× direct", "× server_replay"), rows),
        "",
    )
    section.data = data
    return section
