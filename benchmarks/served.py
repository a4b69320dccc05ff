"""The ``--quick`` run's one process of a benchmark client script for a section, instead of one a client run.

A smoke run (``--quick``) makes every client run of a section once, and most of such a
run's CPU would be the client's start-up (``import openai`` alone is about 0.6 s): under
``served_clients(ctx)``, ``served(ctx, name, *command)`` starts ``python COMMAND --serve`` once and
hands it each client run as a job — its argv and its environment (the proxy, the CA
bundle) — on a line of stdin; the script (``serve_jobs``) sets ``os.environ`` to that
environment, makes its SDK clients anew, as a process started with it would, and prints
its JSON object on a line of stdout. The full run starts every client run as a process
of its own and never comes here.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import PYTHON, ROOT, Context

__all__ = ["ServedClient", "client_run", "serve_jobs", "serve_or_run", "served", "served_clients"]


class ServedClient:
    """``python COMMAND --serve`` (a script, or ``-c CODE``): one client process answering jobs, each a client run's argv
    and environment."""

    def __init__(self, command: Sequence[str], log_path: Path) -> None:
        self.log_path = log_path
        with log_path.open("ab") as log:
            argv = [PYTHON, *command, "--serve"]
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT)

    def run(self, argv: Sequence[str], env: dict[str, str]) -> dict[str, Any]:
        """What ``python COMMAND *argv`` run with ``env`` would print (its JSON object)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"argv": list(argv), "env": env}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            status = self.proc.wait(60)
            raise RuntimeError(f"the served benchmark client exited ({status}):\n{self.log_path.read_text(errors='replace')[-4000:]}")
        result: dict[str, Any] = json.loads(line)
        return result

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@contextlib.contextmanager
def served_clients(ctx: Context) -> Iterator[None]:
    """Within: under ``--quick``, ``served(ctx, name, ...)`` gives the section's one process of a client; all closed after."""
    if not ctx.quick:
        yield
        return
    clients: dict[str, ServedClient] = {}
    ctx.shared["served"] = clients
    try:
        yield
    finally:
        del ctx.shared["served"]
        for client in clients.values():
            client.close()


def served(ctx: Context, name: str, *command: str) -> ServedClient | None:
    """The section's served process of the client ``name``, ``python COMMAND`` (started on first use), or None: outside
    ``served_clients`` or not ``--quick``, the caller starts each client run as its own process."""
    clients: dict[str, ServedClient] | None = ctx.shared.get("served")
    if clients is None:
        return None
    if name not in clients:
        clients[name] = ServedClient(command, ctx.path(f"served-{name}.log"))
    return clients[name]


def serve_jobs(run: Callable[[list[str]], dict[str, Any]]) -> int:
    """A client script's ``--serve``: each stdin line a job (``argv``, ``env``); ``os.environ`` set to its env, then
    ``run(argv)``'s JSON object printed on a line."""
    for line in sys.stdin:
        job = json.loads(line)
        os.environ.clear()
        os.environ.update(job["env"])
        print(json.dumps(run(job["argv"])), flush=True)
    return 0


def client_run(
    ctx: Context, name: str, command: Sequence[str], argv: Sequence[str], env: dict[str, str], *, label: str, timeout: float
) -> dict[str, Any]:
    """One run of the client ``python COMMAND *argv`` with ``env``, its JSON object: under ``--quick`` a job of the
    section's served process, otherwise a process of its own (``label`` names it when it fails)."""
    client = served(ctx, name, *command)
    if client is not None:
        return client.run(argv, env)
    proc = subprocess.run([PYTHON, *command, *argv], env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{label} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def serve_or_run(run: Callable[[list[str]], dict[str, Any]], argv: list[str] | None = None) -> int:
    """A client script's main: ``--serve`` answers jobs (``serve_jobs``); any other argv is one run, its JSON printed."""
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--serve"]:
        return serve_jobs(run)
    print(json.dumps(run(argv)))
    return 0
