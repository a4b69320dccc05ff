"""Section 2: does a call cost more late in a long run than early? Replay and recording along 10–10,000 calls.

The cassettes hold the agent workload (``workload.agent``: a tool round per task,
about 10 KB of request per call, ~100 MB at 10,000 calls), built with the
library's recorder and ``save_trace``. To isolate Blackbox's own cost, the
session is driven in-process, with no sockets and no mitmproxy:

* **replay** — ``Session.on_request`` for every call of the cassette in order
  (decode the request, digest it, strict match, encode the recorded answer). The
  session is built as ``replay_session`` builds it, from a trace loaded once
  (load and verify have their own section);
* **record** — ``Session.on_request`` + ``on_response`` for 10,000 calls (decode,
  hash-chain append, one journal line per call), with and without ``fsync``;
  the journal append is also timed alone, and the one whole-file write at the
  end (``finish``) apart.

The figure is the mean per-call time of the first and of the last window
(1,000 calls at 10,000; a tenth of the run below that) and their ratio. A
flat cost has a ratio near 1; a cost that grows with the run (a rewrite of
earlier steps, a scan of the cassette per call) shows up here.

One measurement goes through the real proxy too: the largest cassette replayed by
``blackbox proxy --mode replay`` to the openai SDK, one call at a time.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import Context, Section, Service, Stats, Target, free_port, md_table, summarize
from benchmarks.profiles import pyinstrument_available, pyinstrument_top
from benchmarks.workload import CHAT_PATH, agent_body, agent_response, build_cassette

__all__ = ["agent_cassette", "measure"]

HEADERS = {
    "content-type": "application/json",
    "authorization": "Bearer sk-bench-not-a-real-key-0000000000",
    "user-agent": "OpenAI/Python 3.57.0",
    "accept": "application/json",
}


def sizes(ctx: Context) -> tuple[int, ...]:
    return (10, 100, 200) if ctx.quick else (10, 1_000, 10_000)


def agent_cassette(ctx: Context, calls: int) -> Path:
    """The agent-workload cassette of ``calls`` calls, built once per run and shared between sections."""
    built: dict[int, Path] = ctx.shared.setdefault("agent_cassettes", {})
    if calls not in built:
        t0 = time.perf_counter()
        built[calls] = build_cassette(ctx.path(f"agent-{calls}.json"), calls, trace_id=f"bench-agent-{calls}")
        size = built[calls].stat().st_size
        ctx.log(f"  built a {calls}-call cassette ({size / 1e6:.1f} MB) in {time.perf_counter() - t0:.1f}s")
    return built[calls]


def _bodies(ctx: Context, n: int) -> tuple[list[bytes], list[bytes]]:
    cache: dict[str, list[bytes]] = ctx.shared.setdefault("agent_bodies", {"req": [], "resp": []})
    req, resp = cache["req"], cache["resp"]
    for i in range(len(req), n):
        req.append(agent_body(i))
        resp.append(agent_response(i))
    return req[:n], resp[:n]


def window(n: int) -> int:
    """Calls per window: 1,000 for the long runs (a 10,000-call run less its first call included), a tenth below."""
    return 1_000 if n >= 5_000 else max(1, n // 10)


# --------------------------------------------------------------------------- in-process drivers


def replay_once(trace: Any, bodies: list[bytes]) -> tuple[float, list[float]]:
    """Build a strict replay session over ``trace`` and serve every body in order; (setup s, per-call s)."""
    from blackbox_mitm.matcher import RecordedCalls
    from blackbox_mitm.session.engine import Answer, ModelRequest, Session
    from blackbox_mitm.session.plan import REFUSE, RunPlan

    t0 = time.perf_counter()
    session = Session(RunPlan(prefix=RecordedCalls(trace), tail=REFUSE, match="strict"), run_id=trace.id)
    setup = time.perf_counter() - t0
    times: list[float] = []
    clock = time.perf_counter
    for i, body in enumerate(bodies):
        t = clock()
        action = session.on_request(ModelRequest(CHAT_PATH, HEADERS, body))
        times.append(clock() - t)
        if not isinstance(action, Answer) or action.status != 200:
            detail = action.body[:300] if isinstance(action, Answer) else action
            raise RuntimeError(f"replay call {i} was not served: {detail!r}")
    assert session.replay is not None
    served = session.replay.status()["model_calls_served"]
    if served != len(bodies):
        raise RuntimeError(f"{served} of {len(bodies)} calls served")
    return setup, times


def record_once(path: Path, bodies: list[bytes], responses: list[bytes], *, fsync: bool) -> dict[str, Any]:
    """Record every call through the session (journal on disk); per-call and per-append times, and the finish."""
    from blackbox_mitm.cassette.trace import now_ms
    from blackbox_mitm.session.build import record_session
    from blackbox_mitm.session.engine import Forward, ModelRequest

    session = record_session(path, overwrite=True, fsync=fsync)
    recorder = session.recorder
    assert recorder is not None and recorder.journal is not None
    journal = recorder.journal
    original_write_steps, original_wait = journal.write, journal.wait_durable
    append_times: list[float] = []
    written: list[float] = []
    clock = time.perf_counter

    def timed_write(steps: Any) -> int:  # an append is the call's line written, then made durable (group commit)
        t = clock()
        seq = original_write_steps(steps)
        written.append(clock() - t)
        return seq

    def timed_wait(seq: int) -> None:
        t = clock()
        original_wait(seq)
        append_times.append(written.pop() + clock() - t)

    journal.write, journal.wait_durable = timed_write, timed_wait  # type: ignore[method-assign]
    lines: list[bytes] = []
    original_write = journal._write

    def keep_line(data: bytes) -> int:
        lines.append(data)
        return original_write(data)

    journal._write = keep_line  # type: ignore[method-assign]
    times: list[float] = []
    try:
        for i, body in enumerate(bodies):
            t = clock()
            action = session.on_request(ModelRequest(CHAT_PATH, HEADERS, body))
            if not isinstance(action, Forward):
                raise RuntimeError(f"record call {i} was not forwarded: {action!r}")
            answer = session.on_response(action.ticket, 200, responses[i], response_ms=now_ms())
            times.append(clock() - t)
            if answer is not None:
                raise RuntimeError(f"record call {i} was refused: {answer.body[:300]!r}")
        journal_bytes = journal.path.stat().st_size
        del journal.write, journal.wait_durable, journal._write  # the terminal event's append is not a call's: untimed
        t = clock()
        recorder.finish(path, exit_code=0)
        finish_s = clock() - t
    except BaseException:
        recorder.discard()
        raise
    cassette_bytes = path.stat().st_size
    path.unlink()
    return {
        "times": times,
        "append": append_times,
        "lines": lines,  # one per call (the header line was written before the wrapper)
        "finish_s": finish_s,
        "journal_bytes": journal_bytes,
        "cassette_bytes": cassette_bytes,
    }


def write_floor(path: Path, lines: list[bytes], *, fsync: bool) -> list[float]:
    """The same journal lines appended with bare ``os.write`` (+ ``os.fsync``): the file system's own cost per append."""
    times: list[float] = []
    clock = time.perf_counter
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
    try:
        for line in lines:
            t = clock()
            os.write(fd, line)
            if fsync:
                os.fsync(fd)
            times.append(clock() - t)
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    return times


def _windows(times: list[float]) -> dict[str, float]:
    w = window(len(times))
    first, last = times[:w], times[-w:]
    return {
        "mean_s": sum(times) / len(times),
        "first_mean_s": sum(first) / w,
        "last_mean_s": sum(last) / w,
        "first_median_s": statistics.median(first),
        "last_median_s": statistics.median(last),
        "ratio_mean": (sum(last) / sum(first)) if sum(first) else 0.0,
        "ratio_median": statistics.median(last) / statistics.median(first),
        "window": w,
    }


def _agg(rounds: list[dict[str, float]], key: str) -> Stats:
    return summarize(r[key] for r in rounds)


# --------------------------------------------------------------------------- through the proxy


def through_proxy(ctx: Context, cassette: Path, calls: int) -> dict[str, Any]:
    from benchmarks.proxy_calls import blackbox_argv, run_client

    port = free_port()
    argv = blackbox_argv("replay", cassette, port, ctx.confdir)
    with Service(f"scaling-replay-{calls}", argv, port=port, log_dir=ctx.workdir, ready_timeout=600) as proxy:
        ready_s, pid = proxy.started_s, proxy.pid
        raw = run_client(
            ctx,
            proxy_url=proxy.url,
            base_url=None,
            args=["--workload", "agent", "--first", "0", "--warmup", "0", "--n", str(calls), "--phases", "seq"],
            watch=[pid],
            timeout=3600,
        )
    phase = raw["phases"]["seq"]
    # The first call also opens the connection (TCP, TLS with a freshly minted certificate): not the cassette's doing.
    result = _windows(phase["latencies_s"][1:])
    result["ready_s"] = ready_s
    result["proxy_cpu_per_call_s"] = phase["cpu_s"][str(pid)] / phase["calls"]
    return result


# --------------------------------------------------------------------------- the section


def measure(ctx: Context) -> Section:
    from blackbox_mitm.cassette.load import load_trace

    section = Section("scaling", "2. Scaling with run length")
    section.add(
        "The cassettes hold the agent workload — a coding agent's tool round per task: the task, then the task with a ~4 KB "
        "source file as the tool result; about 10 KB of request JSON per call, ~100 MB at 10,000 calls — built with the library's "
        "own recorder (`Trace.append`) and `save_trace`. To isolate Blackbox's own cost the session is driven in-process, with no "
        "sockets and no mitmproxy: **replay** is `Session.on_request` for every call in order (decode, digest, strict match, encode "
        "the recorded answer), on a session built as `replay_session` builds it from a trace loaded once (load and verify are "
        "section 3); **record** is `Session.on_request` + `on_response` per call (decode, hash-chain append, one journal line per "
        "call), with and without fsync, with the journal append also timed alone and the one whole-file write at the end "
        "(`finish`) apart. The figure is the mean per-call time of the first and of the last window (1,000 calls at 10,000; a "
        "tenth of the run below that) and their ratio: a flat cost has a ratio near 1; a cost that grows with the run (a "
        "rewrite of earlier steps, a scan of the cassette per call) shows up as a ratio above 1.",
        "",
    )
    sizes_ = sizes(ctx)
    largest = sizes_[-1]
    bodies, responses = _bodies(ctx, largest)
    data: dict[str, Any] = {"replay": {}, "record": {}}

    # Replay, in-process.
    replay_rows = []
    replay_stats: dict[int, dict[str, Stats]] = {}
    last_trace = None
    for n in sizes_:
        path = agent_cassette(ctx, n)
        trace = load_trace(path)
        calls = sum(1 for s in trace.steps if s.type == "model_output")
        rounds: list[dict[str, float]] = []
        for _ in range(ctx.rounds):
            setup, times = replay_once(trace, bodies[:calls])
            w = _windows(times)
            w["setup_s"] = setup
            rounds.append(w)
        st = {k: _agg(rounds, k) for k in ("mean_s", "first_mean_s", "last_mean_s", "ratio_mean", "ratio_median", "setup_s")}
        replay_stats[n] = st
        data["replay"][n] = {"calls": calls, "steps": len(trace.steps), "bytes": path.stat().st_size, "rounds": rounds}
        calls_window = window(calls)
        replay_rows.append(
            (
                f"{calls:,}",
                f"{path.stat().st_size / 1e6:.1f} MB",
                st["setup_s"].fmt(1e3, 1),
                st["mean_s"].fmt(1e6, 0),
                "—" if calls < 100 else st["first_mean_s"].fmt(1e6, 0),
                "—" if calls < 100 else st["last_mean_s"].fmt(1e6, 0),
                "—" if calls < 100 else f"{st['ratio_mean'].fmt()} / {st['ratio_median'].fmt()}",
                "—" if calls < 100 else f"{calls_window:,}",
            )
        )
        last_trace = trace
        ctx.log(f"  replay {calls}: {st['mean_s'].median * 1e6:.0f} µs/call, last/first {st['ratio_mean'].median:.2f}")
    section.add(f"**Replay, in-process** ({ctx.rounds} rounds; µs per call; setup = matcher index + session over a loaded trace):", "")
    section.add(
        *md_table(
            ("calls", "cassette", "setup (ms)", "per call", "first window", "last window", "last/first (mean / median)", "window"),
            replay_rows,
        ),
        "",
    )
    big = replay_stats[largest]
    section.targets.append(
        Target(
            f"replay of {largest:,} calls: per-call time, last window / first window (in-process)",
            "≤ 1.20",
            big["ratio_mean"].median,
            1.2,
        )
    )

    # Record, in-process.
    rec_rounds = max(1, min(ctx.rounds, 3))
    record_rows = []
    record_stats: dict[str, dict[str, Stats]] = {}
    for fsync in (True, False):
        label = "fsync" if fsync else "no fsync"
        runs = []
        for r in range(rec_rounds):
            os.sync()  # start each run with no one else's dirty pages queued for the disk
            res = record_once(ctx.path(f"record-{label.replace(' ', '-')}-{r}.json"), bodies, responses, fsync=fsync)
            os.sync()
            floor = _windows(write_floor(ctx.path("floor.journal"), res.pop("lines"), fsync=fsync))
            w = _windows(res["times"])
            a = _windows(res["append"])
            runs.append(
                {
                    **w,
                    "append_mean_s": a["mean_s"],
                    "append_first_s": a["first_mean_s"],
                    "append_last_s": a["last_mean_s"],
                    "append_ratio": a["ratio_mean"],
                    "floor_mean_s": floor["mean_s"],
                    "floor_ratio": floor["ratio_mean"],
                    "finish_s": res["finish_s"],
                    "journal_bytes": res["journal_bytes"],
                    "cassette_bytes": res["cassette_bytes"],
                }
            )
        keys = (
            "mean_s",
            "first_mean_s",
            "last_mean_s",
            "ratio_mean",
            "append_mean_s",
            "append_first_s",
            "append_last_s",
            "append_ratio",
            "floor_mean_s",
            "floor_ratio",
            "finish_s",
        )
        st = {k: _agg(runs, k) for k in keys}
        record_stats[label] = st
        data["record"][label] = runs
        record_rows.append(
            (
                label,
                st["mean_s"].fmt(1e6, 0),
                st["first_mean_s"].fmt(1e6, 0),
                st["last_mean_s"].fmt(1e6, 0),
                st["ratio_mean"].fmt(),
                st["append_first_s"].fmt(1e6, 0),
                st["append_last_s"].fmt(1e6, 0),
                st["append_ratio"].fmt(),
                st["floor_mean_s"].fmt(1e6, 0),
                st["floor_ratio"].fmt(),
                st["finish_s"].fmt(1e3, 0),
            )
        )
        ctx.log(f"  record {largest} ({label}): {st['mean_s'].median * 1e6:.0f} µs/call, last/first {st['ratio_mean'].median:.2f}")
    journal_mb = data["record"]["fsync"][0]["journal_bytes"] / 1e6
    cassette_mb = data["record"]["fsync"][0]["cassette_bytes"] / 1e6
    section.add(
        f"**Recording {largest:,} calls, in-process** ({rec_rounds} rounds; µs per call; the journal grows by one line per call: "
        f"{journal_mb:.1f} MB at the end, written once, never rewritten; `finish` writes the {cassette_mb:.1f} MB cassette once, "
        "at the end of the run):",
        "",
    )
    section.add(
        *md_table(
            (
                "journal",
                "per call",
                "first window",
                "last window",
                "last/first",
                "append: first window",
                "append: last window",
                "append last/first",
                "floor: bare write per append",
                "floor last/first",
                "finish (ms)",
            ),
            record_rows,
        ),
        "",
    )
    section.add(
        "*Floor*: the very lines the journal wrote, appended again to a fresh file with bare `os.write` (and `os.fsync` in the "
        "fsync rows) right after each run: what the file system itself charges per append, and how that drifts along the run.",
        "",
    )
    for label in ("fsync", "no fsync"):
        st = record_stats[label]
        target = Target(
            f"recording {largest:,} calls ({label}): journal append, last window / first window",
            "flat (≤ 1.20)",
            st["append_ratio"].median,
            1.2,
        )
        if target.met is False:
            target.note = (
                f"the bare write{'+fsync' if label == 'fsync' else ''} floor of the same lines drifts {st['floor_ratio'].median:.2f} "
                f"(appends cost {st['append_mean_s'].median * 1e6:.0f} µs, the floor {st['floor_mean_s'].median * 1e6:.0f} µs)"
            )
        section.targets.append(target)

    # Through the proxy.
    t0 = time.perf_counter()
    proxied = through_proxy(ctx, agent_cassette(ctx, largest), largest)
    data["through_proxy"] = proxied
    ctx.log(f"  through the proxy: {largest} calls in {time.perf_counter() - t0:.0f}s, last/first {proxied['ratio_mean']:.2f}")
    section.add(
        f"**Replay of {largest:,} calls through the proxy** (`blackbox proxy --mode replay`, openai SDK, one call at a time, one round): "
        f"the proxy was ready {proxied['ready_s']:.1f} s after it was started (loading and verifying the "
        f"{data['replay'][largest]['bytes'] / 1e6:.0f} MB cassette); then {proxied['mean_s'] * 1e3:.2f} ms per call, "
        f"{proxied['proxy_cpu_per_call_s'] * 1e3:.2f} ms of proxy CPU per call; first {proxied['window']:,} calls "
        f"{proxied['first_mean_s'] * 1e3:.2f} ms, last {proxied['window']:,} {proxied['last_mean_s'] * 1e3:.2f} ms: "
        f"last/first = {proxied['ratio_mean']:.2f} (medians: {proxied['ratio_median']:.2f}).",
        "",
    )
    section.targets.append(
        Target(f"replay of {largest:,} calls through the proxy: last window / first window", "≤ 1.20", proxied["ratio_mean"], 1.2)
    )
    section.headline.append(
        f"Along a {largest:,}-call replay the per-call cost stays flat: last/first window = {big['ratio_mean'].median:.2f} in-process "
        f"({big['mean_s'].median * 1e6:.0f} µs of Blackbox per call), {proxied['ratio_mean']:.2f} through the proxy. Recording: "
        f"journal append last/first = {record_stats['fsync']['append_ratio'].median:.2f} "
        f"({record_stats['fsync']['append_mean_s'].median * 1e6:.0f} µs per append with fsync, "
        f"{record_stats['no fsync']['append_mean_s'].median * 1e6:.0f} µs without)."
    )

    if ctx.profile and pyinstrument_available() and last_trace is not None:
        trace = last_trace
        calls = data["replay"][largest]["calls"]
        profiled: list[tuple[str, Callable[[], Any]]] = [
            (f"replay of {calls:,} calls (Session.on_request)", lambda: replay_once(trace, bodies[:calls])),
            (
                f"recording of {largest:,} calls without fsync (with fsync, `os.fsync` is most of it: see the table)",
                lambda: record_once(ctx.path("record-profile.json"), bodies, responses, fsync=False),
            ),
        ]
        for title, fn in profiled:
            _, text = pyinstrument_top(fn, lines=45)
            section.add(f"**Profile: {title}** (pyinstrument, in-process):", "", "```", text, "```", "")
    section.data = data
    return section
