"""Options shared by several ``blackbox`` commands, each group one decorator.

``run_options`` is on every command that runs an agent (``record``, ``replay``,
``fork``, ``test``): an option added there reaches all four, and its value
arrives in the command's ``run: RunOptions`` (add the field here too).
``proxy_options`` is on every command that starts a proxy (``record``,
``replay``, ``fork``, ``proxy``). The single options (``--match``, ``-o``,
``--overwrite``, ``--map-remote``, ``--report``) are spelt once here and reused.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from blackbox_mitm.cli.paths import OutputFile
from blackbox_mitm.matcher.recorded import MATCH_MODES

__all__ = [
    "MATCH_MODES",
    "RunOptions",
    "check_map_remote",
    "compact_option",
    "confdir_option",
    "map_remote_option",
    "match_option",
    "output_option",
    "overwrite_option",
    "proxy_options",
    "report_option",
    "run_options",
]

type Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


@dataclass(frozen=True, slots=True)
class RunOptions:
    """The values of ``run_options``."""

    confdir: str | None = None


def _stack(*decorators: Decorator) -> Decorator:
    def apply(f: Callable[..., Any]) -> Callable[..., Any]:
        for decorator in reversed(decorators):
            f = decorator(f)
        return f

    return apply


confdir_option = click.option(
    "--confdir",
    type=click.Path(file_okay=False),
    default=None,
    help="mitmproxy's confdir, where the CA lives (default ~/.mitmproxy or $BLACKBOX_CONFDIR).",
)


def run_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options of every command that runs an agent; the command receives them as ``run``."""

    @functools.wraps(f)
    def with_run(*args: Any, confdir: str | None, **kwargs: Any) -> Any:
        return f(*args, run=RunOptions(confdir=confdir), **kwargs)

    return confdir_option(with_run)


proxy_options = _stack(
    click.option(
        "--host",
        "hosts",
        multiple=True,
        metavar="HOST[=CODEC]",
        help="another model host to intercept, e.g. llm.corp.example=openai naming the codec it speaks (repeatable; a codec name that is not one is refused, with the list).",
    ),
    click.option("-v", "--verbose", is_flag=True, help="log refusals, provider errors and non-model endpoints as they happen."),
)


def match_option(help: str | None = None) -> Decorator:
    return click.option(
        "--match",
        type=click.Choice(MATCH_MODES),
        default="strict",
        show_default=True,
        help=help or "strict compares every request with the recording; sequence serves the answers in order.",
    )


def output_option(help: str) -> Decorator:
    return click.option("-o", "--output", required=True, type=OutputFile(), help=help)


def report_option(help: str) -> Decorator:
    return click.option("--report", type=OutputFile(), default=None, help=help)


def overwrite_option(help: str = "replace an existing cassette") -> Decorator:
    return click.option("--overwrite", is_flag=True, help=help)


def compact_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--compact``: write the cassette on one line instead of indented (``record``, ``compress``)."""
    return click.option(
        "--compact", is_flag=True, help="write the cassette as compact JSON on one line (default: indented, for people and diffs)"
    )(f)


def check_map_remote(ctx: click.Context, param: click.Parameter, specs: tuple[str, ...]) -> tuple[str, ...]:
    for spec in specs:
        if spec.endswith("|") and spec.count("|") > 2:
            raise click.BadParameter(
                f"{spec!r} ends with '|': mitmproxy would read its first part as a flow filter. Write it as |FROM-REGEX|TO-URL"
            )
        if not spec or spec.count(spec[0]) < 2:
            raise click.BadParameter(f"{spec!r} is not a map_remote spec; write it as |FROM-REGEX|TO-URL")
    return specs


def map_remote_option(help: str | None = None) -> Decorator:
    return click.option(
        "--map-remote",
        "map_remote",
        multiple=True,
        metavar="SPEC",
        callback=check_map_remote,
        help=help or r"mitmproxy map_remote spec, e.g. '|https://api\.openai\.com|http://127.0.0.1:9000' (repeatable).",
    )
