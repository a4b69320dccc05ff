"""Section 5: time to the first streamed event — the recording proxy against plain passthrough (issue #9).

A streamed call (``stream=True``, the openai SDK) to the fake provider, which sends
its events ``EVENT_GAP_MS`` apart; the client times the first chunk it gets (time
to first event, TTFE — what an agent's UI waits for) and the whole stream. Four
variants, interleaved round by round, each its own process as in section 1:

* (a) the SDK straight to the fake provider over HTTP — the floor;
* (b) ``mitmdump`` passthrough as it comes (TLS interception, ``map_remote``):
  mitmproxy buffers whole bodies by default, so the agent gets the first event
  only when the stream has ended — what a naive recording proxy does;
* (s) ``mitmdump`` passthrough with streaming on (a three-line addon sets
  ``flow.response.stream = True`` in ``responseheaders``; ``stream_large_bodies``
  would stream the request too, before ``map_remote`` could redirect it): events
  pass on as they arrive — the fair baseline;
* (e) ``blackbox proxy --mode record``: the streaming tee that records the events
  (decoding, parsing, the journal's fsync at the final event) while passing them on.

Each client makes warm-up calls (not timed) on one keep-alive connection, then N
timed calls. The figure that matters is (e)/(s), the ratio of median TTFEs measured
in the same round: how much recording adds before the first token. It is reported
against a target of 1.10.

    python benchmarks/ttfb.py            # a quick stand-alone run: prints the ratio

``--quick`` makes every client run a job of the section's one client process
(``benchmarks/served.py``) instead of a process of its own.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import PYTHON, ROOT, Context, Section, Service, Stats, Target, free_port, md_table, ratio_stats, summarize
from benchmarks.served import client_run, served_clients

__all__ = ["measure", "ttfb_ratio"]

EVENT_GAP_MS = 20
TARGET = 1.10
VARIANTS = ("a", "b", "s", "e")
LABELS = {
    "a": "(a) direct to the provider (floor)",
    "b": "(b) mitmdump passthrough, default (buffers the body)",
    "s": "(s) mitmdump passthrough, streaming",
    "e": "(e) blackbox record",
}
PROVIDER = ROOT / "benchmarks" / "provider.py"
# Echoed back by the fake model: about 10 two-word text deltas, so a stream lasts ~0.25 s.
QUESTION = " ".join(f"word{i}" for i in range(18))

STREAM_ADDON = """
def responseheaders(flow):
    flow.response.stream = True
"""

CLIENT = r"""
import sys, time
import openai


def run(argv):
    n, warmup, base_url, question = int(argv[0]), int(argv[1]), argv[2], argv[3]
    client = openai.OpenAI(max_retries=0, **({"base_url": base_url} if base_url else {}))
    first, whole = [], []
    for i in range(warmup + n):
        t0 = time.perf_counter()
        t_first, text = None, ""
        for chunk in client.chat.completions.create(model="gpt-4.1-mini", stream=True, messages=[{"role": "user", "content": question}]):
            if t_first is None:
                t_first = time.perf_counter() - t0
            for choice in chunk.choices:
                text += choice.delta.content or ""
        if not text.startswith("Echo: "):
            raise SystemExit(f"unexpected answer {text[:80]!r}")
        if i >= warmup:
            first.append(t_first)
            whole.append(time.perf_counter() - t0)
    return {"first_s": first, "whole_s": whole}


from benchmarks.served import serve_or_run  # --serve: the --quick run's one client process

sys.exit(serve_or_run(run))
"""


def openai_client(
    ctx: Context,
    proxy_url: str | None,
    base_url: str | None,
    n: int,
    warmup: int,
    *,
    name: str = "ttfb_client",
    script: str = CLIENT,
    label: str = "the TTFB client",
) -> dict[str, Any]:
    """A streaming openai ``script`` (this section's chat client unless given) run ``n`` times after ``warmup``."""
    from benchmarks.proxy_calls import client_environment

    env = client_environment(proxy_url, ctx.confdir)
    env["OPENAI_API_KEY"] = "sk-bench-not-a-real-key-000"
    argv = [str(n), str(warmup), base_url + "/v1" if base_url else "", QUESTION]
    return client_run(ctx, name, ["-c", script], argv, env, label=label, timeout=900)


def _proxy(ctx: Context, variant: str, provider: Service, cassette: Path, round_no: int) -> Service:
    from benchmarks.proxy_calls import blackbox_argv, map_remote_args, mitmdump_argv

    port = free_port()
    if variant == "b":
        argv = mitmdump_argv(port, ctx.confdir, *map_remote_args(provider.url))
    elif variant == "s":
        addon = ctx.path("ttfb_stream_addon.py")
        addon.write_text(STREAM_ADDON)
        argv = mitmdump_argv(port, ctx.confdir, *map_remote_args(provider.url), "-s", str(addon))
    else:
        argv = blackbox_argv("record", cassette, port, ctx.confdir, "--overwrite", *map_remote_args(provider.url))
    return Service(f"ttfb-{variant}-round{round_no}", argv, port=port, log_dir=ctx.workdir)


def _recorded_calls(cassette: Path) -> int:
    from blackbox_mitm.cassette import load_trace

    return sum(1 for s in load_trace(cassette).steps if s.type == "model_input")


def run_rounds(ctx: Context) -> dict[str, Any]:
    """Every variant, every round; returns each round's median TTFE and stream time per variant."""
    n, warmup = (5, 1) if ctx.quick else (12, 2)
    results: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    port = free_port()
    argv = [PYTHON, str(PROVIDER), "--port", str(port), "--stream-delay-ms", str(EVENT_GAP_MS)]
    with served_clients(ctx), Service("ttfb-provider", argv, port=port, log_dir=ctx.workdir) as provider:
        for round_no in range(ctx.rounds):
            order = VARIANTS[round_no % len(VARIANTS) :] + VARIANTS[: round_no % len(VARIANTS)]
            for variant in order:
                ctx.log(f"[ttfb] round {round_no + 1}/{ctx.rounds}: {LABELS[variant]}")
                if variant == "a":
                    raw = openai_client(ctx, None, provider.url, n, warmup)
                else:
                    cassette = ctx.path(f"ttfb-record-{round_no}.json")
                    with _proxy(ctx, variant, provider, cassette, round_no) as proxy:
                        raw = openai_client(ctx, proxy.url, None, n, warmup)
                    if variant == "e":
                        calls = _recorded_calls(cassette)
                        if calls != n + warmup:
                            raise RuntimeError(f"(e) recorded {calls} streamed calls, expected {n + warmup}")
                        cassette.unlink()
                results[variant].append({"first_s": statistics.median(raw["first_s"]), "whole_s": statistics.median(raw["whole_s"])})
    return {"calls_per_round": n, "warmup": warmup, "event_gap_ms": EVENT_GAP_MS, "rounds": results}


def _stats(rounds: dict[str, list[dict[str, float]]], variant: str, key: str) -> Stats:
    return summarize(r[key] for r in rounds[variant])


def _ratio(rounds: dict[str, list[dict[str, float]]], num: str, den: str, key: str = "first_s") -> Stats:
    return ratio_stats([r[key] for r in rounds[num]], [r[key] for r in rounds[den]])


def ttfb_ratio(ctx: Context) -> float:
    """The median over rounds of (blackbox record TTFE) / (streaming passthrough TTFE)."""
    return _ratio(run_rounds(ctx)["rounds"], "e", "s").median


def measure(ctx: Context) -> Section:
    data = run_rounds(ctx)
    rounds = data["rounds"]
    section = Section("ttfb", "5. Time to the first streamed event (recording vs passthrough)")
    section.add(
        f"A streamed chat completion (openai SDK, `stream=True`) of about 13 events sent {EVENT_GAP_MS} ms apart by the fake "
        f"provider; {data['calls_per_round']} timed calls per round after {data['warmup']} warm-up call(s), on one keep-alive "
        "connection. *First event*: from sending the request to the SDK yielding the first chunk. *Whole stream*: to `[DONE]`.",
        "",
    )
    section.add(
        *md_table(
            ("variant", "first event, ms", "whole stream, ms"),
            [(LABELS[v], _stats(rounds, v, "first_s").fmt(1e3, 1), _stats(rounds, v, "whole_s").fmt(1e3, 1)) for v in VARIANTS],
        )
    )
    e_s = _ratio(rounds, "e", "s")
    s_a = _ratio(rounds, "s", "a")
    b_s = _ratio(rounds, "b", "s")
    section.add(
        "",
        *md_table(
            ("ratio (first event)", "median (min–max)"),
            [
                ("(e) blackbox record / (s) streaming passthrough", e_s.fmt(1, 2)),
                ("(s) streaming passthrough / (a) direct", s_a.fmt(1, 2)),
                ("(b) buffering passthrough / (s) streaming passthrough", b_s.fmt(1, 2)),
            ],
        ),
        "",
        "(b) shows what recording without a streaming tee would cost: the first event arrives with the last one.",
    )
    section.targets.append(
        Target(
            "time to first streamed event: blackbox record / streaming passthrough",
            f"≤ {TARGET:.2f}",
            float(e_s.median),
            TARGET,
            "" if e_s.median <= TARGET else "the tee's per-chunk decode and parse, and the proxy's own hop",
        )
    )
    section.headline.append(
        f"Streaming: recording adds ×{e_s.median:.2f} to the time to the first streamed event over a streaming passthrough "
        f"({_stats(rounds, 'e', 'first_s').median * 1e3:.1f} ms vs {_stats(rounds, 's', 'first_s').median * 1e3:.1f} ms); "
        f"a buffering proxy would take {_stats(rounds, 'b', 'first_s').median * 1e3:.0f} ms."
    )
    section.data = {
        **data,
        "ratios": {"e/s": e_s.to_json(), "s/a": s_a.to_json(), "b/s": b_s.to_json()},
    }
    return section


if __name__ == "__main__":
    import shutil
    import tempfile

    from blackbox_mitm.proxy.environment import ensure_ca

    work = Path(tempfile.mkdtemp(prefix="blackbox-ttfb-"))
    try:
        ensure_ca(work / "mitmproxy")
        context = Context(quick=True, rounds=3, workdir=work, confdir=work / "mitmproxy", profile=False, log=print)
        print(f"time to first streamed event, blackbox record / streaming passthrough: {ttfb_ratio(context):.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
