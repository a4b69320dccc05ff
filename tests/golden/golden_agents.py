"""Agents that misbehave on purpose, for `blackbox test`: each wraps examples/openai_weather_agent.py.

python golden_agents.py MODE [ARGS...] QUESTION

exit-after N          run the agent to its answer, then exit N
first-call-only       make the first model call, then exit 0 (a run that stops early)
overrun               run the agent to its answer, then ask the model once more
flood BYTES           write BYTES to stdout and to stderr, then run the agent
peer DIR COUNT RUN    create DIR/RUN, wait (at most 20 s) until DIR holds COUNT files, then run the agent
echo-env OUT [ARG..]  write argv and the BLACKBOX_* / key variables to OUT as JSON, then run the agent
mark DIR RUN          create DIR/RUN, then run the agent (shows which goldens ran a command)
proxy-as GOLDEN RUN QUESTION
                      in the golden GOLDEN only, name RUN in the proxy URL instead ("-": no run at all), then run the agent
weather CITY FORECAST CELSIUS QUESTION
                      run the agent with CITY's weather changed (its tool now answers differently)
sleep PIDFILE [--ignore-term]
                      write the process id to PIDFILE, then sleep for a minute (deaf to SIGTERM if asked)
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def weather_agent() -> Any:
    """The example agent, imported late: `sleep` must start before the openai SDK has loaded."""
    sys.path.insert(0, str(EXAMPLES))
    import openai_weather_agent

    return openai_weather_agent


def answer(question: str) -> int:
    return int(weather_agent().main([question]))


def first_call_only(question: str) -> int:
    agent = weather_agent()
    real_ask = agent.ask
    calls = 0

    def ask_once(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        if calls:
            sys.exit(0)
        calls += 1
        return real_ask(*args, **kwargs)

    agent.ask = ask_once
    return answer(question)


def overrun(question: str) -> int:
    code = answer(question)
    if code:
        return code
    return answer(question)


def flood(size: int, question: str) -> int:
    line = b"x" * 1023 + b"\n"
    for stream in (sys.stdout.buffer, sys.stderr.buffer):
        left = size
        while left > 0:
            stream.write(line[:left])
            left -= len(line)
        stream.flush()
    return answer(question)


def peer(directory: str, count: int, run: str, question: str) -> int:
    folder = Path(directory)
    (folder / run).touch()
    deadline = time.monotonic() + 120  # a bound for a missing peer, not a timing: a loaded machine starts them slowly
    while len(list(folder.iterdir())) < count:
        if time.monotonic() > deadline:
            print(f"golden_agents: no peer showed up in {folder}", file=sys.stderr)
            return 9
        time.sleep(0.05)
    return answer(question)


def echo_env(out: str, args: list[str]) -> int:
    keys = ("BLACKBOX_RUN", "BLACKBOX_RUN_INPUT", "BLACKBOX_CASSETTE", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HTTPS_PROXY")
    Path(out).write_text(json.dumps({"argv": args, "env": {k: os.environ.get(k) for k in keys}}))
    return answer(os.environ["BLACKBOX_RUN_INPUT"])


def proxy_as(golden: str, run: str, question: str) -> int:
    if Path(os.environ["BLACKBOX_CASSETTE"]).stem == golden:
        for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
            scheme, _, rest = os.environ[name].partition("://")
            where = rest.rpartition("@")[2]
            os.environ[name] = f"{scheme}://{where}" if run == "-" else f"{scheme}://{run}@{where}"
    return answer(question)


def main(argv: list[str]) -> int:
    mode, *rest = argv
    if mode == "exit-after":
        code = answer(rest[1])
        return int(rest[0]) if code == 0 else code
    if mode == "first-call-only":
        return first_call_only(rest[0])
    if mode == "overrun":
        return overrun(rest[0])
    if mode == "flood":
        return flood(int(rest[0]), rest[1])
    if mode == "peer":
        return peer(rest[0], int(rest[1]), rest[2], rest[3])
    if mode == "echo-env":
        return echo_env(rest[0], rest[1:])
    if mode == "mark":
        (Path(rest[0]) / rest[1]).touch()
        return answer(rest[2])
    if mode == "proxy-as":
        return proxy_as(rest[0], rest[1], rest[2])
    if mode == "weather":
        weather_agent().WEATHER[rest[0].lower()] = {"forecast": rest[1], "celsius": int(rest[2])}
        return answer(rest[3])
    if mode == "sleep":
        if "--ignore-term" in rest:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        Path(rest[0]).write_text(str(os.getpid()))
        time.sleep(600)  # far past any timeout a test sets, however loaded the machine: only a kill ends it early
        return 0
    raise SystemExit(f"golden_agents: unknown mode {mode}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
