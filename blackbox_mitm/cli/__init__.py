"""The ``blackbox`` command: a thin click layer over the library.

Each command parses its options, calls one library function, and turns library
errors into ``click.ClickException`` (exit 2 for unreadable input or usage).
Commands live in one module per area and register themselves on ``main``.
"""

from __future__ import annotations

import click

from blackbox_mitm import __version__


class UsageProblem(click.ClickException):
    """Unreadable input or a usage error stated plainly (no usage text): exit status 2.

    Exit 1 is kept for outcomes: a cassette that does not verify, a replay that diverged.
    """

    exit_code = 2


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="blackbox")
def main() -> None:
    """Record an LLM agent's model calls through mitmproxy, replay them offline, fork them."""


# Registration: importing a module adds its commands to ``main``.
from blackbox_mitm.cli import cassette_commands as _cassette_commands  # noqa: E402,F401
from blackbox_mitm.cli import fork_commands as _fork_commands  # noqa: E402,F401
from blackbox_mitm.cli import golden_commands as _golden_commands  # noqa: E402,F401
from blackbox_mitm.cli import run_commands as _run_commands  # noqa: E402,F401
