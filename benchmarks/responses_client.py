"""The Responses benchmark's agent: the official ``openai`` SDK sending ``responses.create`` calls.

Run as its own process, as an agent would be: the default base URL
(``https://api.openai.com/v1``) with ``HTTPS_PROXY`` and the CA bundle from the
environment, or ``--base-url`` for the direct floor. Phases, over consecutive
call numbers: ``--warmup`` calls (not timed), ``seq``: ``--n`` calls one after
another, ``conc``: ``--n`` calls by ``--concurrency`` threads sharing the client.
Every call asks a different question and every answer is checked (the fake
Responses API answers ``Echo: <question>``); a wrong or failed call exits
non-zero. Prints one JSON object: per phase, its wall time and call count.

    python benchmarks/responses_client.py --warmup 8 --n 500 --concurrency 8 [--base-url http://127.0.0.1:PORT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import openai

MODEL = "gpt-4.1"


def question(i: int) -> str:
    return f"Question {i}: what is {i} + {i}?"


def call(client: openai.OpenAI, i: int) -> None:
    text = client.responses.create(model=MODEL, input=question(i), instructions="Answer briefly.").output_text
    if text != f"Echo: {question(i)}":
        raise RuntimeError(f"call {i}: unexpected answer {text!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=8)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--base-url", default=None)
    args = parser.parse_args(argv)
    client = openai.OpenAI(api_key="sk-bench-not-a-real-key-0000000000", base_url=args.base_url, max_retries=0, timeout=60)
    first = 0
    with ThreadPoolExecutor(args.concurrency) as pool:
        list(pool.map(lambda i: call(client, i), range(args.warmup)))
        first += args.warmup
        phases = {}
        t0 = time.perf_counter()
        for i in range(first, first + args.n):
            call(client, i)
        phases["seq"] = {"wall_s": time.perf_counter() - t0, "calls": args.n}
        first += args.n
        t0 = time.perf_counter()
        list(pool.map(lambda i: call(client, i), range(first, first + args.n)))
        phases["conc"] = {"wall_s": time.perf_counter() - t0, "calls": args.n}
    print(json.dumps({"phases": phases}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
