"""An MCP client over the older HTTP+SSE transport (the ``mcp`` package): initialize, list the tools, call ``lookup``.

python tests/e2e/agents/mcp_sse_client.py https://mcp.example.com/sse
"""

from __future__ import annotations

import asyncio
import sys

from mcp.client.session import ClientSession
from mcp.client.sse import sse_client


async def main(url: str) -> None:
    async with sse_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        result = await session.call_tool("lookup", {"word": "alpha"})
        text = getattr(result.content[0], "text", "")
        print(f"tools: {[t.name for t in tools.tools]}; lookup(alpha): {text}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
