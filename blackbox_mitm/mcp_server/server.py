"""The MCP server: the six read tools of ``tools`` registered on the official SDK's ``MCPServer``, served over stdio.

Every tool is annotated read-only, idempotent, not destructive and closed-world
(it reads local files only), and its description says what the untrusted-data
block means. A ``BlackboxError`` (a refused run name, a file that is not a
cassette) becomes a tool error with its message; nothing else is caught here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from blackbox_mitm import __version__
from blackbox_mitm.errors import BlackboxError
from blackbox_mitm.mcp_server import tools
from blackbox_mitm.mcp_server.folders import Folders
from blackbox_mitm.mcp_server.untrusted import BLOCK_MEANING

__all__ = ["TOOL_NAMES", "build_server", "serve_stdio"]

TOOL_NAMES = ("list_runs", "show_run", "list_forks", "diff_runs", "verify_run", "replay_report")

_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
_RUN = "the run, as list_runs names it: LABEL/FILE (runs/weather.json), the file name, or the run id"
INSTRUCTIONS = (
    "Blackbox's recorded runs of LLM agents (hash-chained cassettes), their forks, their differences and replay "
    "reports, read-only: no tool records, replays, forks, writes or reaches the network. " + BLOCK_MEANING
)

Run = Annotated[str, Field(description=_RUN)]


def _answer(call: Callable[[], str]) -> str:
    try:
        return call()
    except BlackboxError as exc:
        raise ToolError(str(exc)) from exc


def build_server(folders: Folders) -> MCPServer[Any]:
    """The server, with the read tools over ``folders``."""
    server: MCPServer[Any] = MCPServer("blackbox", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    for fn in _read_tools(folders):
        description = f"{_DESCRIBED[fn.__name__]} Read-only. {BLOCK_MEANING}"
        server.add_tool(fn, description=description, annotations=_READ_ONLY, structured_output=False)
    return server


def _read_tools(folders: Folders) -> list[Callable[..., str]]:
    """The read tools over ``folders``, in the order a client lists them; their parameters are the tools' arguments."""

    def list_runs(
        offset: Annotated[int, Field(description="how many files to skip (paging)", ge=0)] = 0,
        limit: Annotated[int, Field(description=f"files per page (at most {tools.MAX_RUNS})", ge=1)] = tools.PAGE_RUNS,
    ) -> str:
        return _answer(lambda: tools.list_runs(folders, offset=offset, limit=limit))

    def show_run(
        run: Run,
        start: Annotated[int, Field(description="the first step to show (steps are numbered from 0)", ge=0)] = 0,
        count: Annotated[int, Field(description=f"how many steps (at most {tools.MAX_STEPS})", ge=1)] = tools.PAGE_STEPS,
        payloads: Annotated[bool, Field(description="also return each step's recorded payload as JSON")] = False,
        payload_offset: Annotated[int, Field(description="with payloads: skip this many characters of each payload", ge=0)] = 0,
    ) -> str:
        return _answer(lambda: tools.show_run(folders, run, start=start, count=count, payloads=payloads, payload_offset=payload_offset))

    def list_forks(run: Run) -> str:
        return _answer(lambda: tools.list_forks(folders, run))

    def diff_runs(
        a: Annotated[str, Field(description="the first run (" + _RUN + ")")],
        b: Annotated[str, Field(description="the second run, the same way")],
        tail: Annotated[int, Field(description="steps of each run to list after the divergence (0: all)", ge=0)] = 10,
    ) -> str:
        return _answer(lambda: tools.diff_runs(folders, a, b, tail=tail))

    def verify_run(run: Run) -> str:
        return _answer(lambda: tools.verify_run(folders, run))

    def replay_report(run: Run) -> str:
        return _answer(lambda: tools.replay_report(folders, run))

    return [list_runs, show_run, list_forks, diff_runs, verify_run, replay_report]


# What each read tool tells the client it does (its name -> the text).
_DESCRIBED: dict[str, str] = {
    "list_runs": "List the recorded runs in the folders, newest first, a page at a time (offset, limit), with the total count: "
    "each file's run id, steps, model calls, how it ended, when it was recorded, its parent run, and whether it verifies.",
    "show_run": "A run's timeline as `blackbox show` prints it, one line per step, a page of steps at a time (start, count); "
    "with payloads=true each step's recorded payload too, long ones cut with a note saying how to read on. "
    "A cassette that does not verify is reported as such and its steps are not served.",
    "list_forks": "What `blackbox forks` says: the run's forks in the folders, each with the step it was cut at, how it ended, "
    "its steps, its first divergence from the parent, the delta, and whether it diverged before the cut.",
    "diff_runs": "What `blackbox diff A B` says: both cassettes verified, then the first step where the runs part, why "
    "(input, decision or length, and the first differing field), and how each goes on.",
    "verify_run": "What `blackbox verify --all` says: the format version, the hash chain and provider neutrality (no "
    "provider ids, response fields or credentials), with every problem.",
    "replay_report": "The newest replay report of the run found in the folders (written by `blackbox replay --report FILE`): "
    "the verdict, model calls served, and the first divergence in full. This server never replays.",
}


def serve_stdio(folders: Folders) -> None:
    """Serve the read tools on stdin/stdout until the client closes them."""
    build_server(folders).run("stdio")
