"""The per-API benchmark's agent: an official SDK sending distinct calls to one API (section 10).

``--api``:

* ``responses`` — the openai SDK's ``responses.create`` (a JSON Response);
* ``responses-sse`` — the same with ``stream=True``, every event read (``response.completed`` last);
* ``anthropic`` — the anthropic SDK's ``messages.create`` (a JSON message).

Run as its own process, as an agent would be: the SDK's default base URL with
``HTTPS_PROXY`` and the CA bundle from the environment, or ``--base-url`` for the
direct floor. Phases, over consecutive call numbers: ``--warmup`` calls (not
timed), ``seq``: ``--n`` calls one after another, ``conc``: ``--n`` calls by
``--concurrency`` threads sharing the client. Every call asks a different
question and every answer is checked (the fake APIs answer ``Echo: <question>``);
a wrong or failed call exits non-zero. Prints one JSON object: per phase, its
wall time and call count.

``--serve`` (the ``--quick`` run): one process answering client runs read from stdin
(``benchmarks/served.py``), each with its own SDK clients.

    python benchmarks/api_client.py --api responses-sse --warmup 8 --n 300 --concurrency 8 [--base-url http://127.0.0.1:PORT]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.served import serve_or_run

API_KEY = "sk-bench-not-a-real-key-0000000000"
APIS = ("responses", "responses-sse", "anthropic")


def question(i: int) -> str:
    return f"Question {i}: what is {i} + {i}?"


def _check(i: int, text: str) -> None:
    if text != f"Echo: {question(i)}":
        raise RuntimeError(f"call {i}: unexpected answer {text!r}")


def caller(api: str, base_url: str | None) -> Callable[[int], None]:
    """One call of ``api`` by number, through one client shared by every thread."""
    if api == "anthropic":
        import anthropic

        claude = anthropic.Anthropic(api_key=API_KEY, base_url=base_url, max_retries=0, timeout=60)

        def call_anthropic(i: int) -> None:
            message = claude.messages.create(
                model="claude-sonnet-4-5", max_tokens=256, system="Answer briefly.", messages=[{"role": "user", "content": question(i)}]
            )
            _check(i, "".join(block.text for block in message.content if block.type == "text"))

        return call_anthropic
    import openai

    client = openai.OpenAI(api_key=API_KEY, base_url=base_url, max_retries=0, timeout=60)
    if api == "responses":
        return lambda i: _check(i, client.responses.create(model="gpt-4.1", input=question(i), instructions="Answer briefly.").output_text)

    def call_stream(i: int) -> None:
        final: Any = None
        for event in client.responses.create(model="gpt-4.1", input=question(i), instructions="Answer briefly.", stream=True):
            if event.type == "response.completed":
                final = event.response
        if final is None:
            raise RuntimeError(f"call {i}: the stream ended without response.completed")
        _check(i, final.output_text)

    return call_stream


def run_phases(call: Callable[[int], None], first: int, warmup: int, n: int, concurrency: int) -> dict[str, dict[str, Any]]:
    """Warm-up calls, then ``seq`` and ``conc``, over question numbers from ``first``: each phase's wall time and calls."""
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(call, range(first, first + warmup)))
        first += warmup
        phases = {}
        t0 = time.perf_counter()
        for i in range(first, first + n):
            call(i)
        phases["seq"] = {"wall_s": time.perf_counter() - t0, "calls": n}
        first += n
        t0 = time.perf_counter()
        list(pool.map(call, range(first, first + n)))
        phases["conc"] = {"wall_s": time.perf_counter() - t0, "calls": n}
    return phases


def run(argv: list[str]) -> dict[str, Any]:
    """One client run: what the process started with ``argv`` prints."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--api", choices=APIS, default="responses")
    parser.add_argument("--first", type=int, default=0, help="the first warm-up call's question number")
    parser.add_argument("--warmup", type=int, default=8)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--base-url", default=None)
    args = parser.parse_args(argv)
    return {"phases": run_phases(caller(args.api, args.base_url), args.first, args.warmup, args.n, args.concurrency)}


def main(argv: list[str] | None = None) -> int:
    return serve_or_run(run, argv)


if __name__ == "__main__":
    sys.exit(main())
