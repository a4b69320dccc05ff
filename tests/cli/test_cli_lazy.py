"""The ``blackbox`` group imports a command's module only when the command is used (issue #28: start-up)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import click

from blackbox_mitm.cli import COMMANDS, main


def test_every_command_in_the_table_is_the_command_its_module_defines() -> None:
    ctx = click.Context(main)
    for name, (module, attr) in COMMANDS.items():
        command = main.get_command(ctx, name)
        assert command is getattr(importlib.import_module(f"blackbox_mitm.cli.{module}"), attr)
        assert command.name == name
    assert main.list_commands(ctx) == sorted(COMMANDS)
    assert main.get_command(ctx, "no-such-command") is None


def test_replay_does_not_import_the_other_commands_modules() -> None:
    """Resolving ``replay`` (what ``blackbox replay RUN -- CMD`` does first) leaves golden, diff, view and mcp unimported."""
    code = (
        "import sys, click; from blackbox_mitm.cli import main; main.get_command(click.Context(main), 'replay'); "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('blackbox_mitm.golden', 'blackbox_mitm.view', "
        "'blackbox_mitm.mcp_server', 'blackbox_mitm.cassette.diff', 'blackbox_mitm.cli.golden_commands', 'mcp')))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120).stdout
    assert out.strip() == ""
