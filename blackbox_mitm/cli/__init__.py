"""The ``blackbox`` command: a thin click layer over the library.

Each command parses its options and calls the library; library errors become
exit codes in one place (``cli.base``: 2 for usage and unreadable input, 1 for
outcomes). Commands live in one module per area (``@command()`` from
``cli.base``, shared options from ``cli.options``) and are registered below with
one ``main.add_command`` line each.
"""

from __future__ import annotations

import importlib

import click

from blackbox_mitm import __version__
from blackbox_mitm.cli.base import BlackboxGroup, UsageProblem

__all__ = ["COMMANDS", "UsageProblem", "main"]

#: Every command: its name -> the module and attribute that define it. A module is imported when its command is
#: run (or listed by --help), not before: ``blackbox replay`` never imports the golden runner, diff, view, the mcp
#: SDK or the compressors (issue #28: start-up no slower than mitmdump's). tests/cli/test_cli_lazy.py checks the
#: table against the modules.
COMMANDS: dict[str, tuple[str, str]] = {
    "record": ("run_commands", "record"),
    "replay": ("run_commands", "replay"),
    "proxy": ("proxy_commands", "proxy"),
    "certs": ("run_commands", "certs"),
    "fork": ("fork_commands", "fork"),
    "forks": ("fork_commands", "forks"),
    "verify": ("cassette_commands", "verify"),
    "show": ("cassette_commands", "show"),
    "diff": ("cassette_commands", "diff"),
    "recover": ("cassette_commands", "recover"),
    "golden": ("golden_commands", "golden"),
    "test": ("golden_commands", "test_command"),
    "junit": ("golden_commands", "junit"),
    "masks": ("compare_options", "masks_command"),
    "config": ("compare_options", "config_command"),
    "view": ("view_commands", "view"),
    "compress": ("compress_commands", "compress"),
    "decompress": ("compress_commands", "decompress"),
    "mcp": ("mcp_commands", "mcp"),
}


class _LazyGroup(BlackboxGroup):
    """The ``blackbox`` group: each command's module is imported the first time the command is looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attr = COMMANDS[cmd_name]
            self.add_command(getattr(importlib.import_module(f"blackbox_mitm.cli.{module}"), attr), cmd_name)
        return self.commands.get(cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="blackbox")
def main() -> None:
    """Record an LLM agent's model calls through mitmproxy, replay them offline, fork them."""
