"""The command line running several runs of one agent script in one process (tests/e2e/agents/several_runs_agent.py),
and each run's stdout out of its output: the cloud e2e tests record a capability's variants in one agent session."""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import blackbox
from fake_clouds import FakeClouds

from blackbox_mitm.cassette.trace import Trace

RUNNER = Path(__file__).resolve().parent / "agents" / "several_runs_agent.py"


def several(script: Path | str, runs: Sequence[Sequence[str]]) -> list[str]:
    """The command running ``script`` once for each argv in ``runs`` (leading ``NAME=VALUE`` words: that run's variables)."""
    return [sys.executable, str(RUNNER), str(script), *(shlex.join(run) for run in runs)]


def outputs(stdout: str) -> list[str]:
    """Each run's stdout, in order."""
    return re.split(r"^--- run \d+ ---\n", stdout, flags=re.MULTILINE)[1:]


def calls_per_run(trace: Trace) -> list[int]:
    """How many model calls each run of a recording made: a run starts at a call with no assistant message in it."""
    counts: list[int] = []
    for step in trace.steps:
        if step.type == "model_input":
            if not counts or not any(m.get("role") == "assistant" for m in step.payload.get("messages") or []):
                counts.append(0)
            counts[-1] += 1
    return counts


def per_run[T](items: Sequence[T], counts: Sequence[int]) -> list[list[T]]:
    """``items`` (one a model call, in order) cut into runs of ``counts`` items."""
    assert len(items) == sum(counts), (len(items), counts)
    starts = [sum(counts[:i]) for i in range(len(counts))]
    return [list(items[start : start + n]) for start, n in zip(starts, counts, strict=True)]


CHANGED = "What's the weather in Paris and Oslo?"


@dataclass
class Session:
    """A capability's variants as one agent session: recorded, replayed three times with the fake gone, and replayed
    once with a changed prompt (its first run diverges: divergence is read from the neutral input, the same for every
    variant)."""

    cassette: Path
    rec: Any
    calls: list[dict[str, Any]]
    replays: list[Any]
    changed: Any


def record_session(
    cassette: Path,
    confdir: Path,
    remote: str,
    agent: Callable[[str], list[str]],
    question: str,
    *,
    record_env: Mapping[str, str],
    replay_env: Mapping[str, str],
) -> Session:
    """Record ``agent(question)`` against the fake clouds (``--map-remote REMOTE<fake>``), then replay it three times and
    ``agent(CHANGED)`` once, with the fake gone; the fake's model calls are those whose path holds ``/model/``."""
    with FakeClouds() as fake:
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), "--map-remote", remote + fake.url,
                       "--", *agent(question), env=dict(record_env))  # fmt: skip
        assert rec.returncode == 0, rec.stderr
        calls = [r for r in fake.requests if "/model/" in r["path"]]

    def replay(words: list[str]) -> Any:
        return blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *words, env=dict(replay_env))

    return Session(cassette, rec, calls, [replay(agent(question)) for _ in range(3)], replay(agent(CHANGED)))
