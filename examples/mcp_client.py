"""Call one of ``blackbox mcp``'s tools the way an MCP client does: start the server over stdio, list, call, print.

    python examples/mcp_client.py                                  # the tools the server offers
    python examples/mcp_client.py list_runs
    python examples/mcp_client.py list_forks run=weather.json --dir out/demo
    python examples/mcp_client.py show_run run=weather.json start=0 count=5 payloads=true --dir out/demo

Arguments are NAME=VALUE (a VALUE that is JSON, such as 5 or true, is sent as
JSON); ``--dir DIR`` is passed on to ``blackbox mcp``. Uses the official ``mcp``
Python SDK, as any MCP client would.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


async def main(argv: list[str]) -> int:
    dirs = [a for i, a in enumerate(argv) if i > 0 and argv[i - 1] == "--dir"]
    words = [a for i, a in enumerate(argv) if a != "--dir" and (i == 0 or argv[i - 1] != "--dir")]
    blackbox = Path(sys.executable).parent / "blackbox"
    server = StdioServerParameters(command=str(blackbox), args=["mcp", *(x for d in dirs for x in ("--dir", d))], cwd=str(Path.cwd()))
    async with Client(server) as client:
        if not words:
            for tool in (await client.list_tools()).tools:
                print(f"{tool.name}: {tool.description.split('. ')[0] if tool.description else ''}")
            return 0
        name, *pairs = words
        arguments = {key: _value(value) for key, _, value in (p.partition("=") for p in pairs)}
        result = await client.call_tool(name, arguments)
        print("\n".join(c.text for c in result.content if c.type == "text"))
        return 1 if result.is_error else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv[1:]))
