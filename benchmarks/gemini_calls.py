"""Section 8: a Gemini call through Blackbox, with the official google-genai SDK.

The same sequence of ``generate_content`` calls (each distinct, so a replay
matches by content) against the fake Gemini API (``examples/fake_gemini.py``,
its own process), three ways, interleaved round by round:

* (a) the SDK straight to the fake API over HTTP — the floor;
* (c) mitmproxy's ``server_replay`` of a flow file recorded once with ``mitmdump -w`` (issue #28);
* (d) ``blackbox proxy --mode replay`` (strict) of a cassette recorded once;
* (e) ``blackbox proxy --mode record`` to the fake API (journal fsynced per call).

The client (``benchmarks/gemini_client.py``) is its own process and sends the
calls one after another; the per-call time is the phase's wall time over N.
``--quick`` (one round, a smoke run) runs (e) first and replays its recording as (d)'s
cassette instead of recording one beforehand, and makes every client run a job of one
client process (``benchmarks/served.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.common import PYTHON, ROOT, Context, Section, Service, Target, free_port, md_table, ratio_stats, summarize
from benchmarks.proxy_calls import client_environment, mitmdump_argv
from benchmarks.served import client_run, served_clients

__all__ = ["measure"]

CLIENT = ROOT / "benchmarks" / "gemini_client.py"
FAKE = ROOT / "examples" / "fake_gemini.py"
LABELS = {
    "a": "(a) direct to the provider (floor)",
    "c": "(c) mitmdump server_replay",
    "d": "(d) blackbox replay",
    "e": "(e) blackbox record",
}
HOST = "generativelanguage.googleapis.com"


def _flows(ctx: Context, fake_url: str, n: int, warmup: int) -> Path:
    """The flow file (c) replays: the calls recorded once with ``mitmdump -w``, given back their real destination."""
    from mitmproxy import http, io

    raw, out = ctx.path("gemini-flows-raw.mitm"), ctx.path("gemini-flows.mitm")
    port = free_port()
    argv = mitmdump_argv(port, ctx.confdir, "--map-remote", rf"|https://generativelanguage\.googleapis\.com|{fake_url}", "-w", str(raw))
    with Service("gemini-prep-mitmdump-w", argv, port=port, log_dir=ctx.workdir) as proxy:
        _client(ctx, proxy.url, None, n, warmup)
    with raw.open("rb") as f:
        flows = [flow for flow in io.FlowReader(f).stream() if isinstance(flow, http.HTTPFlow)]
    with out.open("wb") as f:
        writer = io.FlowWriter(f)
        for flow in flows:
            flow.request.scheme, flow.request.host, flow.request.port = "https", HOST, 443
            flow.request.headers["host"] = HOST
            writer.add(flow)
    return out


def _server_replay(ctx: Context, flows: Path, name: str) -> Service:
    port = free_port()
    argv = mitmdump_argv(port, ctx.confdir, "--server-replay", str(flows), "--set", "server_replay_reuse=true")
    argv += ["--set", "server_replay_extra=kill", "--set", "upstream_cert=false"]
    return Service(name, argv, port=port, log_dir=ctx.workdir)


def _client(ctx: Context, proxy_url: str | None, base_url: str | None, n: int, warmup: int) -> dict[str, Any]:
    argv = ["--n", str(n), "--warmup", str(warmup), *(["--base-url", base_url] if base_url else [])]
    env = {k: v for k, v in client_environment(proxy_url, ctx.confdir).items() if not k.startswith(("GEMINI_", "GOOGLE_"))}
    return client_run(ctx, "gemini_client", [str(CLIENT)], argv, env, label="the Gemini benchmark client", timeout=1200)


def _proxy(mode: str, cassette: Path, fake_url: str, ctx: Context, name: str) -> Service:
    port = free_port()
    argv = [PYTHON, "-m", "blackbox_mitm", "proxy", "--mode", mode, "--cassette", str(cassette), "--listen-port", str(port)]
    argv += ["--confdir", str(ctx.confdir)]
    if mode == "record":
        argv += ["--overwrite", "--map-remote", rf"|https://generativelanguage\.googleapis\.com|{fake_url}"]
    return Service(name, argv, port=port, log_dir=ctx.workdir)


def measure(ctx: Context) -> Section:
    section = Section("gemini", "8. A Gemini call through Blackbox (google-genai)")
    n, warmup = (5, 1) if ctx.quick else (100, 4)
    per_call: dict[str, list[float]] = {k: [] for k in LABELS}
    fake_port = free_port()
    fake_service = Service("fake-gemini", [PYTHON, str(FAKE), "--port", str(fake_port)], port=fake_port, log_dir=ctx.workdir)
    with served_clients(ctx), fake_service as fake:
        cassette = ctx.path("gemini.json")
        # --quick, one round: (e) goes first and records (d)'s cassette (the same command as this preparing record).
        first_e = ctx.quick and ctx.rounds == 1
        if not first_e:
            with _proxy("record", cassette, fake.url, ctx, "gemini-prep-record") as proxy:
                _client(ctx, proxy.url, None, n, warmup)
        flows = _flows(ctx, fake.url, n, warmup)
        variants = list(LABELS)
        for r in range(ctx.rounds):
            order = ["e", "a", "c", "d"] if first_e else variants[r % 4 :] + variants[: r % 4]
            for variant in order:
                if variant == "a":
                    result = _client(ctx, None, fake.url, n, warmup)
                elif variant == "c":
                    with _server_replay(ctx, flows, f"gemini-c-{r}") as proxy:
                        result = _client(ctx, proxy.url, None, n, warmup)
                else:
                    mode = "replay" if variant == "d" else "record"
                    target = cassette if variant == "d" or first_e else ctx.path(f"gemini-record-{r}.json")
                    with _proxy(mode, target, fake.url, ctx, f"gemini-{variant}-{r}") as proxy:
                        result = _client(ctx, proxy.url, None, n, warmup)
                per_call[variant].append(result["wall_s"] / n)
    stats = {k: summarize(v) for k, v in per_call.items()}
    rows = []
    for k, label in LABELS.items():
        vs = ratio_stats(per_call[k], per_call["a"]).fmt() if k != "a" else "1.00"
        rows.append((label, stats[k].fmt(1e3, 2), vs))
    section.add(
        f"{n} distinct `generate_content` calls one after another (after {warmup} warm-up calls), {ctx.rounds} rounds, the variants "
        "interleaved. Each proxy is a fresh `blackbox proxy` process per round; its start-up is not timed.",
        "",
        *md_table(("variant", "ms per call", "× direct"), rows),
        "",
        f"(d) / (c), replay against server_replay, measured in the same round: {ratio_stats(per_call['d'], per_call['c']).fmt()}.",
        "",
    )
    replay = ratio_stats(per_call["d"], per_call["a"])
    section.headline.append(
        f"Gemini: a replayed `generate_content` call (google-genai) takes {stats['d'].median * 1e3:.1f} ms through "
        f"`blackbox proxy --mode replay`, {replay.median:.2f}x the direct call to the fake API ({stats['a'].median * 1e3:.1f} ms)."
    )
    ours = ratio_stats(per_call["d"], per_call["c"])
    section.headline.append(f"Gemini: replay / mitmproxy's server_replay = {ours.median:.2f} (sequential).")
    section.targets.append(
        Target(
            "#28: Gemini replay ≤ 0.9 × server_replay, sequential",
            "d/c ≤ 0.90",
            ours.median,
            0.9,
            note="mitmproxy's per-flow work is shared by both; ours adds decode + digest + encode (section 1's hooks)",
        )
    )
    section.data = {"n": n, "per_call_s": per_call}
    return section
