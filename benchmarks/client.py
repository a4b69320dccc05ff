"""The benchmark's agent: the official ``openai`` SDK sending a fixed sequence of chat completions.

Run as its own process, exactly as an agent would be: one client object, the
default base URL (``https://api.openai.com/v1``) with ``HTTPS_PROXY`` and the CA
bundle from the environment — or ``--base-url`` for the direct floor. Prints one
JSON object on stdout: per phase, the wall time and each call's latency.

Phases, in this order, over consecutive call numbers:

* warm-up: ``--warmup`` calls, ``--concurrency`` at a time (opens the connections);
* ``seq``: ``--n`` calls one after another (one ``OpenAI`` client);
* ``conc``: ``--n`` calls by ``--concurrency`` workers sharing one ``AsyncOpenAI`` client.

``--watch-pid PID`` (repeatable) adds each phase's CPU seconds of those processes
(the proxy, the provider), read from ``/proc`` at the phase's start and end.

Every answer is checked (the simple workload's answer is ``Echo: <question>``);
a wrong or failed call exits non-zero — a benchmark of failing calls means nothing.

``--serve`` (the ``--quick`` run): one process answering client runs read from stdin
(``benchmarks/served.py``), each with its own SDK clients.

    python benchmarks/client.py --workload simple --warmup 8 --n 500 --concurrency 8 --phases seq,conc
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import proc_cpu_seconds
from benchmarks.served import serve_or_run
from benchmarks.workload import MODEL, TOOLS, agent_messages, simple_expected, simple_messages

API_KEY = "sk-bench-not-a-real-key-0000000000"
CALL_TIMEOUT_S = 60.0


def _kwargs(workload: str, i: int) -> dict[str, Any]:
    if workload == "simple":
        return {"model": MODEL, "messages": simple_messages(i), "tools": TOOLS, "temperature": 0}
    return {"model": MODEL, "messages": agent_messages(i), "tools": TOOLS, "temperature": 0}


def _check(workload: str, i: int, completion: Any) -> None:
    message = completion.choices[0].message
    if workload == "simple":
        if message.content != simple_expected(i):
            raise SystemExit(f"call {i}: unexpected answer {message.content!r}")
    elif i % 2 == 0:
        if not message.tool_calls:
            raise SystemExit(f"call {i}: expected a tool call, got {message.content!r}")
    elif not message.content:
        raise SystemExit(f"call {i}: expected a final answer")


def _sync_phase(client: Any, workload: str, numbers: range) -> dict[str, Any]:
    requests = {i: _kwargs(workload, i) for i in numbers}  # built before the clock starts
    latencies: list[float] = []
    start = time.perf_counter()
    for i in numbers:
        t = time.perf_counter()
        completion = client.chat.completions.create(**requests[i])
        latencies.append(time.perf_counter() - t)
        _check(workload, i, completion)
    return {"wall_s": time.perf_counter() - start, "calls": len(latencies), "latencies_s": latencies}


async def _async_phase(client: Any, workload: str, numbers: range, concurrency: int) -> dict[str, Any]:
    requests = {i: _kwargs(workload, i) for i in numbers}  # built before the clock starts
    todo = iter(numbers)
    latencies: list[float] = []

    async def worker() -> None:
        for i in todo:  # shared iterator: each number is taken once
            t = time.perf_counter()
            completion = await client.chat.completions.create(**requests[i])
            latencies.append(time.perf_counter() - t)
            _check(workload, i, completion)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return {"wall_s": time.perf_counter() - start, "calls": len(latencies), "latencies_s": latencies}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--workload", choices=("simple", "agent"), default="simple")
    parser.add_argument("--base-url", default=None, help="talk to this URL directly (the floor); default: the SDK's own")
    parser.add_argument("--first", type=int, default=0, help="number of the first timed call (warm-up calls come before it)")
    parser.add_argument("--warmup", type=int, default=8, help="warm-up calls for each client (sync and async)")
    parser.add_argument("--n", type=int, default=500, help="calls per phase")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--phases", default="seq,conc")
    parser.add_argument("--watch-pid", type=int, action="append", default=[], help="report this process's CPU time per phase")
    return parser


def run(argv: list[str]) -> dict[str, Any]:
    """One client run: what the process started with ``argv`` prints."""
    return asyncio.run(_main(_parser().parse_args(argv)))


def main(argv: list[str] | None = None) -> int:
    return serve_or_run(run, argv)


def warmup_numbers(first: int, warmup: int, phases: list[str]) -> list[range]:
    """The warm-up call numbers: ``warmup`` for each client a phase uses, just before ``first``."""
    clients = sorted(set(phases))
    n = first - warmup * len(clients)
    return [range(n + j * warmup, n + (j + 1) * warmup) for j in range(len(clients))]


async def _main(args: argparse.Namespace) -> dict[str, Any]:
    import openai

    options: dict[str, Any] = {"api_key": API_KEY, "max_retries": 0, "timeout": CALL_TIMEOUT_S}
    if args.base_url:
        options["base_url"] = args.base_url.rstrip("/") + "/v1"
    phases = [p for p in args.phases.split(",") if p]
    sync_client = openai.OpenAI(**options)
    async_client = openai.AsyncOpenAI(**options)

    async def run(phase: str, numbers: range) -> dict[str, Any]:
        if phase == "seq":
            return _sync_phase(sync_client, args.workload, numbers)  # blocks the loop: nothing else runs
        return await _async_phase(async_client, args.workload, numbers, args.concurrency)

    out: dict[str, Any] = {"phases": {}, "warmup": {}}
    try:
        for phase, numbers in zip(sorted(set(phases)), warmup_numbers(args.first, args.warmup, phases), strict=True):
            if numbers:
                out["warmup"][phase] = await run(phase, numbers)
        n = args.first
        for phase in phases:
            before = {pid: proc_cpu_seconds(pid) for pid in args.watch_pid}
            client_before = time.process_time()
            result = await run(phase, range(n, n + args.n))
            result["cpu_s"] = {str(pid): proc_cpu_seconds(pid) - t for pid, t in before.items()}
            result["client_cpu_s"] = time.process_time() - client_before
            out["phases"][phase] = result
            n += args.n
    finally:
        sync_client.close()
        await async_client.close()
    return out


if __name__ == "__main__":
    sys.exit(main())
