"""The main job, end to end, with no API key and no internet: `make demo`.

1. start a scripted fake provider on 127.0.0.1 (it speaks OpenAI's wire format);
2. record the OpenAI weather agent through the real proxy (its SDK thinks it
   talks to https://api.openai.com; map_remote sends the calls to the fake);
3. show and verify the cassette;
4. stop the provider and replay the agent offline: identical output;
5. fork the run at the Paris tool result with a sunny forecast, diff the branch
   against its parent, and list the parent's forks.

Every step runs the real `blackbox` command and prints it first.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from fake_provider import FakeProvider  # noqa: E402

OUT = ROOT / "out" / "demo"
QUESTION = "What's the weather in Paris and Lyon?"
AGENT = [sys.executable, str(HERE / "openai_weather_agent.py"), QUESTION]
SUN = '{"forecast": "sun", "celsius": 24}'


def say(title: str) -> None:
    print(f"\n\033[1m== {title}\033[0m", flush=True)


def blackbox(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    shown = " ".join(shlex.quote(a if not a.startswith(str(ROOT)) else os.path.relpath(a, ROOT)) for a in args)
    print(f"$ blackbox {shown}", flush=True)
    proc = subprocess.run([sys.executable, "-m", "blackbox_mitm", *args], cwd=ROOT, capture_output=True, text=True, env=ENV)
    if proc.stdout:
        print(proc.stdout.rstrip())
    if proc.stderr:
        print(proc.stderr.rstrip())
    if check and proc.returncode not in (0,):
        sys.exit(f"demo: `blackbox {args[0]}` exited {proc.returncode}")
    return proc


def remote(url: str) -> list[str]:
    return ["--map-remote", rf"|https://api\.openai\.com|{url}"]


ENV = dict(os.environ)
ENV.setdefault("OPENAI_API_KEY", "sk-demo-not-a-real-key")  # the fake provider takes any key
ENV.pop("HTTPS_PROXY", None)
ENV.pop("https_proxy", None)


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    confdir = str(OUT / "mitmproxy")  # the demo's own CA, so your ~/.mitmproxy is untouched
    parent = str(OUT / "weather.json")
    child = str(OUT / "sunny.json")

    say("1-2. record the agent through the proxy, against a local fake provider")
    with FakeProvider() as provider:
        print(f"(fake provider on {provider.url})")
        rec = blackbox("record", "-o", parent, "--overwrite", "--confdir", confdir, *remote(provider.url), "--", *AGENT)
        recorded = rec.stdout.strip()

    say("3. the cassette: a timeline, and its hash chain verified")
    blackbox("show", parent)
    blackbox("verify", parent)

    say("4. replay offline: the provider is stopped, nothing leaves the machine")
    rep = blackbox("replay", parent, "--confdir", confdir, "--", *AGENT)
    if rep.stdout.strip() != recorded:
        sys.exit(f"demo: the replay printed {rep.stdout.strip()!r}, the recording {recorded!r}")
    print("identical output: yes")

    say("5. what if the Paris forecast had been sunny? fork at the tool result and go live")
    steps = __import__("orjson").loads(Path(parent).read_bytes())["steps"]
    at = next(s["index"] for s in steps if s["type"] == "tool_result")
    with FakeProvider() as provider:
        blackbox(
            "fork",
            parent,
            "--at",
            str(at),
            "--tool-result",
            SUN,
            "-o",
            child,
            "--overwrite",
            "--confdir",
            confdir,
            *remote(provider.url),
            "--",
            *AGENT,
        )
    blackbox("diff", parent, child, check=False)
    blackbox("forks", parent)
    print(f"\ndemo: done — the cassettes are in {os.path.relpath(OUT, ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
