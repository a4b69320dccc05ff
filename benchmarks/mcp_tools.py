"""``blackbox mcp`` over stdio: start-up, and each read tool's answer time in a folder of 1,000 cassettes.

The folder is the MCP tests' (``tests/mcp_server/mcp_runs.py``: a run with two
forks, a 200-step run, ...) plus 1,000 copies of its weather run. One real
``blackbox mcp`` process, the official ``mcp`` client; each call is timed from
request to answer, a repeated call shows what the server keeps between calls.
Not part of ``make bench`` (docs/mcp.md quotes it):

    python -m benchmarks.mcp_tools
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "mcp_server"))

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_runs", {}),
    ("list_runs", {}),
    ("list_runs", {"offset": 500, "limit": 100}),
    ("show_run", {"run": "long.json", "count": 200}),
    ("list_forks", {"run": "weather.json"}),
    ("list_forks", {"run": "weather.json"}),
]


async def measure(runs: Path) -> None:
    blackbox = Path(sys.executable).parent / "blackbox"
    start = time.perf_counter()
    params = StdioServerParameters(command=str(blackbox), args=["mcp", "--dir", str(runs)], cwd=str(runs.parent))
    async with Client(params) as client:
        await client.list_tools()
        print(f"spawn to tools/list: {time.perf_counter() - start:.2f} s")
        for name, args in CALLS:
            t = time.perf_counter()
            result = await client.call_tool(name, args)
            text = "".join(c.text for c in result.content if c.type == "text")
            print(f"{name} {args}: {(time.perf_counter() - t) * 1000:.0f} ms, {len(text):,} characters")


def main() -> None:
    from mcp_runs import make_folder

    with tempfile.TemporaryDirectory(prefix="blackbox-mcp-bench-") as tmp:
        runs = make_folder(Path(tmp))
        for i in range(1000):
            shutil.copy(runs / "weather.json", runs / f"copy-{i:04d}.json")
        anyio.run(measure, runs)


if __name__ == "__main__":
    main()
