"""``blackbox mcp``: recorded runs, their forks and their differences as read-only tools for a model, over MCP stdio.

``folders`` names the folders read and turns a run name into one of their files
(never a path built from it); ``runs`` reads a file once (a cassette verified and
summarized, a replay report, or neither); ``untrusted`` fences and bounds every
string read from them; ``tools`` writes each tool's answer with the functions the
``blackbox`` commands call; ``server`` registers the tools on the official MCP
SDK and serves them. Nothing here writes, records, replays, forks or opens a
socket: a model given these tools cannot spend the user's key or change a golden.
"""

from __future__ import annotations

from blackbox_mitm.mcp_server.folders import Folders, default_folders

__all__ = ["Folders", "default_folders"]
