"""The Gemini benchmark's agent: the official ``google-genai`` SDK sending ``generate_content`` calls one after another.

Run as its own process: a default ``genai.Client()`` (the real host, with
``HTTPS_PROXY`` and the CA from the environment) or ``--base-url`` for the direct
floor. Every call asks a different question; every answer is checked (the fake
Gemini API answers ``You said: <question>``), and a wrong or failed call exits
non-zero. Prints one JSON object: the phase's wall time and each call's latency.

    python benchmarks/gemini_client.py --warmup 4 --n 200 [--base-url http://127.0.0.1:PORT]

``--serve`` (the ``--quick`` run): one process answering client runs read from stdin
(``benchmarks/served.py``), each with its own SDK client.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from google import genai
from google.genai import types

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.served import serve_or_run

MODEL = "gemini-2.5-flash"


def question(i: int) -> str:
    return f"Question {i}: what is {i} + {i}?"


def run(argv: list[str]) -> dict[str, Any]:
    """One client run: what the process started with ``argv`` prints; a wrong answer raises."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--base-url", default=None)
    args = parser.parse_args(argv)
    options = types.HttpOptions(base_url=args.base_url) if args.base_url else None
    client = genai.Client(api_key="AIzaSyBENCHnotArealKEY000000000000000000", http_options=options)
    latencies = []
    started = 0.0
    for i in range(args.warmup + args.n):
        if i == args.warmup:
            started = time.perf_counter()
        t0 = time.perf_counter()
        text = client.models.generate_content(model=MODEL, contents=question(i)).text
        if i >= args.warmup:
            latencies.append(time.perf_counter() - t0)
        if text != f"You said: {question(i)}":
            raise SystemExit(f"call {i}: unexpected answer {text!r}")
    return {"wall_s": time.perf_counter() - started, "latencies_s": latencies}


def main(argv: list[str] | None = None) -> int:
    return serve_or_run(run, argv)


if __name__ == "__main__":
    sys.exit(main())
