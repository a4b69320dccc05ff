"""``blackbox mcp``: serve the recorded runs to a model as read-only MCP tools over stdio (``blackbox_mitm.mcp_server``)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from blackbox_mitm.cli.base import command

__all__ = ["mcp"]


@command("mcp")
@click.option(
    "--dir",
    "dirs",
    multiple=True,
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    metavar="DIR",
    help="a folder of cassettes to read (repeatable; default: tests/goldens, runs/ and the config's mcp_dirs)",
)
def mcp(dirs: tuple[Path, ...]) -> None:
    """Serve the runs in DIR as read-only MCP tools on stdin/stdout: list_runs, show_run, list_forks, diff_runs,
    verify_run, replay_report.

    No tool writes, records, replays, forks or reaches the network. Register it with a client, e.g.

    \b
    claude mcp add blackbox -- blackbox mcp
    """
    from blackbox_mitm.config import project_config
    from blackbox_mitm.mcp_server import Folders, default_folders
    from blackbox_mitm.mcp_server.server import serve_stdio

    if dirs:
        paths = list(dirs)
    else:
        config = project_config()
        paths = default_folders(config_dirs=config.values.get("mcp_dirs", []), config_root=config.path.parent if config.path else None)
    folders = Folders.open(paths)
    if sys.stdin.isatty():  # run by hand: say what this is (stdout is the protocol's; an MCP client starts it)
        click.echo(
            f"blackbox mcp: read-only MCP tools on stdin/stdout; {folders.describe()}. An MCP client starts this; Ctrl-C stops.", err=True
        )
    try:
        serve_stdio(folders)
    except KeyboardInterrupt:
        sys.exit(130)
