"""Section 11: time to the first streamed Responses event — the recording proxy against a streaming passthrough (issue #14).

A streamed ``responses.create(stream=True)`` (openai SDK) to the fake Responses
API (``examples/fake_responses.py``), which sends its events ``EVENT_GAP_MS``
apart; the client times the first event it gets and the whole stream (to
``response.completed``). Three variants, interleaved round by round, each its
own process, as section 5 does for chat completions:

* (a) the SDK straight to the fake API over HTTP — the floor;
* (s) ``mitmdump`` passthrough with streaming on (section 5's three-line addon) — the fair baseline;
* (e) ``blackbox proxy --mode record``: the streaming tee recording the events while passing them on.

The figure is (e)/(s), the ratio of median first-event times in the same round,
against the target of 1.10 that chat streams have. ``--quick`` makes every client run a job of
the section's one client process (``benchmarks/served.py``) instead of a process of its own.
"""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks.common import PYTHON, ROOT, Context, Section, Service, Target, free_port, md_table, ratio_stats, summarize
from benchmarks.served import served_clients
from benchmarks.ttfb import EVENT_GAP_MS, TARGET, _proxy, openai_client

__all__ = ["measure"]

FAKE = ROOT / "examples" / "fake_responses.py"
VARIANTS = ("a", "s", "e")
LABELS = {"a": "(a) direct to the provider (floor)", "s": "(s) mitmdump passthrough, streaming", "e": "(e) blackbox record"}

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
        for event in client.responses.create(model="gpt-4.1-mini", stream=True, input=question):
            if t_first is None:
                t_first = time.perf_counter() - t0
            if event.type == "response.output_text.delta":
                text += event.delta
        if text != "Echo: " + question:
            raise SystemExit(f"unexpected answer {text[:80]!r}")
        if i >= warmup:
            first.append(t_first)
            whole.append(time.perf_counter() - t0)
    return {"first_s": first, "whole_s": whole}


from benchmarks.served import serve_or_run  # --serve: the --quick run's one client process

sys.exit(serve_or_run(run))
"""


def _client(ctx: Context, proxy_url: str | None, base_url: str | None, n: int, warmup: int) -> dict[str, Any]:
    return openai_client(
        ctx, proxy_url, base_url, n, warmup, name="responses_ttfb_client", script=CLIENT, label="the Responses TTFB client"
    )


def measure(ctx: Context) -> Section:
    section = Section("responses_ttfb", "11. Time to the first streamed Responses event (recording vs passthrough)")
    n, warmup = (5, 1) if ctx.quick else (12, 2)
    rounds: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    port = free_port()
    argv = [PYTHON, str(FAKE), "--port", str(port), "--stream-delay-ms", str(EVENT_GAP_MS)]
    with served_clients(ctx), Service("responses-ttfb-fake", argv, port=port, log_dir=ctx.workdir) as fake:
        for r in range(ctx.rounds):
            for variant in VARIANTS[r % 3 :] + VARIANTS[: r % 3]:
                if variant == "a":
                    raw = _client(ctx, None, fake.url, n, warmup)
                else:
                    with _proxy(ctx, variant, fake, ctx.path(f"responses-ttfb-{r}.json"), r) as proxy:
                        raw = _client(ctx, proxy.url, None, n, warmup)
                rounds[variant].append({k: statistics.median(raw[k]) for k in ("first_s", "whole_s")})
    stats: dict[str, Any] = {v: {k: summarize(x[k] for x in rounds[v]) for k in ("first_s", "whole_s")} for v in VARIANTS}
    e_s = ratio_stats([x["first_s"] for x in rounds["e"]], [x["first_s"] for x in rounds["s"]])
    section.add(
        f"A streamed `responses.create(stream=True)` answer of about 20 events sent {EVENT_GAP_MS} ms apart by the fake "
        f"Responses API; {n} timed calls per round after {warmup} warm-up call(s). *First event*: from sending the request to "
        "the SDK yielding `response.created`. *Whole stream*: to `response.completed`.",
        "",
        *md_table(
            ("variant", "first event, ms", "whole stream, ms"),
            [(LABELS[v], stats[v]["first_s"].fmt(1e3, 1), stats[v]["whole_s"].fmt(1e3, 1)) for v in VARIANTS],
        ),
        "",
        f"(e) blackbox record / (s) streaming passthrough, first event: {e_s.fmt(1, 2)}",
        "",
    )
    section.targets.append(
        Target(
            "Responses API: time to first streamed event, blackbox record / streaming passthrough",
            f"≤ {TARGET:.2f}",
            float(e_s.median),
            TARGET,
            "",
        )
    )
    section.headline.append(
        f"Responses streams: recording adds ×{e_s.median:.2f} to the time to the first event over a streaming passthrough "
        f"({stats['e']['first_s'].median * 1e3:.1f} ms vs {stats['s']['first_s'].median * 1e3:.1f} ms)."
    )
    section.data = {"n": n, "event_gap_ms": EVENT_GAP_MS, "rounds": rounds, "ratio_e_s": e_s.to_json()}
    return section
