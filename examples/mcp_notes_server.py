"""A tiny MCP server over streamable HTTP or stdio (the ``mcp`` package): one tool, ``lookup(word)``.

The end-to-end tests run it on 127.0.0.1 and let the agent reach it as
``https://mcp.example.com/mcp`` through ``--map-remote``; at replay it is
stopped, and the MCP exchanges come from the cassette::

    python examples/mcp_notes_server.py PORT [--json]   # --json: JSON responses instead of SSE
    python examples/mcp_notes_server.py PORT --sse      # the older HTTP+SSE transport (GET /sse, POST /messages/)
    python examples/mcp_notes_server.py --stdio         # over stdio: the agent starts it as its own local tool

Over stdio nothing of it goes through the proxy: at replay the agent starts it
again, and it answers the same.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

NOTES = {"alpha": "alpha is the first letter of the Greek alphabet", "beta": "beta comes second"}

server = MCPServer("notes")


@server.tool()
def lookup(word: str) -> str:
    """What the notes say about a word."""
    return NOTES.get(word, f"no note about {word}")


def main() -> None:
    if "--stdio" in sys.argv:
        server.run("stdio")
        return
    port = int(sys.argv[1])
    json_response = "--json" in sys.argv
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # reached as mcp.example.com through the proxy
    if "--sse" in sys.argv:
        server.run("sse", host="127.0.0.1", port=port, transport_security=security)
        return
    server.run("streamable-http", host="127.0.0.1", port=port, json_response=json_response, transport_security=security)


if __name__ == "__main__":
    main()
