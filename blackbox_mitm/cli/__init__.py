"""The ``blackbox`` command: a thin click layer over the library.

Each command parses its options and calls the library; library errors become
exit codes in one place (``cli.base``: 2 for usage and unreadable input, 1 for
outcomes). Commands live in one module per area (``@command()`` from
``cli.base``, shared options from ``cli.options``) and are registered below with
one ``main.add_command`` line each.
"""

from __future__ import annotations

import click

from blackbox_mitm import __version__
from blackbox_mitm.cli import (
    cassette_commands,
    compress_commands,
    fork_commands,
    golden_commands,
    mcp_commands,
    run_commands,
    view_commands,
)
from blackbox_mitm.cli import compare_options as compare_commands
from blackbox_mitm.cli.base import BlackboxGroup, UsageProblem

__all__ = ["UsageProblem", "main"]


@click.group(cls=BlackboxGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="blackbox")
def main() -> None:
    """Record an LLM agent's model calls through mitmproxy, replay them offline, fork them."""


# Registration: one line per command.
main.add_command(run_commands.record)
main.add_command(run_commands.replay)
main.add_command(run_commands.proxy)
main.add_command(run_commands.certs)
main.add_command(fork_commands.fork)
main.add_command(fork_commands.forks)
main.add_command(cassette_commands.verify)
main.add_command(cassette_commands.show)
main.add_command(cassette_commands.diff)
main.add_command(cassette_commands.recover)
main.add_command(golden_commands.golden)
main.add_command(golden_commands.test_command)
main.add_command(golden_commands.junit)
main.add_command(compare_commands.masks_command)
main.add_command(compare_commands.config_command)
main.add_command(view_commands.view)
main.add_command(compress_commands.compress)
main.add_command(compress_commands.decompress)
main.add_command(mcp_commands.mcp)
