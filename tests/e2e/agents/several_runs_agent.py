"""Several runs of one agent script in one process, one after another: the e2e tests' way to record (and replay)
the variants of a capability (whole and streamed, two model ids, two regions...) in one agent session.

    python tests/e2e/agents/several_runs_agent.py AGENT.py "ARGV OF RUN 1" "ARGV OF RUN 2" ...

Each run's argv is one shell-quoted string: leading ``NAME=VALUE`` words set environment variables for that run
(as a shell would; they are restored after it), the rest is the agent's own command line. The agent script is
imported once (its SDK too, which is most of an agent's start-up) and its ``main()`` called once a run, with
``sys.argv`` set to the run's; each run's output follows a ``--- run N ---`` line on stdout. Stops at the first run
whose ``main()`` returns non-zero and exits with that status, as the agent alone would.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def load(script: str) -> Any:
    """The agent script as a module (not ``__main__``: importing it runs nothing)."""
    spec = importlib.util.spec_from_file_location("agent_of_several_runs", script)
    assert spec is not None and spec.loader is not None, script
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(Path(script).resolve().parent))
    spec.loader.exec_module(module)
    return module


def run_once(agent: Any, script: str, words: list[str]) -> int:
    """One run: its variables set, ``sys.argv`` its own; the variables put back after."""
    saved: dict[str, str | None] = {}
    while words and ASSIGNMENT.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        saved.setdefault(name, os.environ.get(name))
        os.environ[name] = value
    sys.argv = [script, *words]
    try:
        return int(agent.main() or 0)
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


def main() -> int:
    script, runs = sys.argv[1], sys.argv[2:]
    agent = load(script)
    for number, argv in enumerate(runs, 1):
        print(f"--- run {number} ---", flush=True)
        code = run_once(agent, script, shlex.split(argv))
        sys.stdout.flush()
        if code != 0:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
