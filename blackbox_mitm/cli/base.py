"""What every ``blackbox`` command shares: library errors to exit codes, wrapped-command parsing, logging.

Exit codes, decided here and nowhere else:

    0  success
    1  an outcome: a cassette that does not verify, a replay that diverged, a
       failing golden (the commands say so themselves), and the refusals a
       command declares as outcomes (``exit_codes``: ``golden add`` / ``remove``)
    2  a usage error or unreadable input: every ``BlackboxError`` a command lets
       through, and every ``OSError`` (a file that cannot be read or written)

A library error prints as ``blackbox CMD: message`` then ``hint: ...``, with the
error's ``options`` (Python parameter names) shown as this command's flags.

Commands that wrap an agent (``record``, ``replay``, ``fork``, ``test``) take the
agent's command line after ``--`` or from the first word that is not one of
their options or arguments; an option they do not know is a usage error, never
the start of the agent's command.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from typing import Any

import click

from blackbox_mitm.errors import BlackboxError

__all__ = ["BlackboxCommand", "BlackboxGroup", "Failure", "UsageProblem", "command", "group", "setup_logging"]


class Failure(click.ClickException):
    """A refusal already worded for the terminal (``blackbox CMD: ...``): exit status 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(self.format_message(), err=True)


class Outcome(Failure):
    """The same, for a refusal a command declares an outcome: exit status 1."""

    exit_code = 1


def failure(message: str, exit_code: int) -> Failure:
    return Outcome(message) if exit_code == 1 else Failure(message)


class UsageProblem(Failure):
    """Unreadable input or a usage error stated plainly (no usage text), as ``blackbox CMD: ...``: exit status 2."""

    def __init__(self, message: str) -> None:
        ctx = click.get_current_context(silent=True)
        super().__init__(f"{command_name(ctx)}: {message}" if ctx is not None else message)


class BlackboxCommand(click.Command):
    """A command whose library errors become named refusals; optionally one that wraps an agent's command."""

    def __init__(
        self, *args: Any, exit_codes: Mapping[type[BaseException], int] | None = None, wraps_command: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.exit_codes = dict(exit_codes or {})
        self.wraps_command = wraps_command

    def invoke(self, ctx: click.Context) -> Any:
        return run_translated(ctx, lambda: super(BlackboxCommand, self).invoke(ctx), self.exit_codes)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if self.wraps_command:
            args = mark_wrapped_command(self, ctx, args)
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            maybe = f" (did you mean {' or '.join(exc.possibilities)}?)" if exc.possibilities else ""
            raise click.UsageError(f"no such option: {exc.option_name}{maybe}", ctx) from exc


class BlackboxGroup(click.Group):
    """A group whose commands are ``BlackboxCommand`` and whose subgroups are ``BlackboxGroup``."""

    command_class = BlackboxCommand
    group_class = type  # subgroups are BlackboxGroup too


def command(name: str | None = None, **attrs: Any) -> Callable[[Callable[..., Any]], BlackboxCommand]:
    """``click.command`` making a ``BlackboxCommand`` (register it with ``main.add_command``)."""
    return click.command(name, cls=BlackboxCommand, **attrs)


def group(name: str | None = None, **attrs: Any) -> Callable[[Callable[..., Any]], BlackboxGroup]:
    """``click.group`` making a ``BlackboxGroup``."""
    return click.group(name, cls=BlackboxGroup, **attrs)


def command_name(ctx: click.Context) -> str:
    """``blackbox golden add``: the command as the user typed it, whatever the program was called."""
    names = []
    while ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(["blackbox", *reversed(names)])


def run_translated(ctx: click.Context, call: Callable[[], Any], exit_codes: Mapping[type[BaseException], int]) -> Any:
    """Call ``call()``; a ``BlackboxError`` or ``OSError`` escaping it becomes a ``Failure``.

    Its exit status is 2 unless ``exit_codes`` (the command's) names the error's class or a base of it.
    """
    try:
        return call()
    except BlackboxError as exc:
        code = next((exit_codes[t] for t in type(exc).__mro__ if t in exit_codes), 2)
        raise failure(describe(ctx, exc), code) from exc
    except OSError as exc:
        raise Failure(f"{command_name(ctx)}: {_os_message(exc)}") from exc


def describe(ctx: click.Context, exc: BlackboxError) -> str:
    """``blackbox CMD: message``, then the hint with the error's options spelt as this command's flags."""
    lines = [f"{command_name(ctx)}: {exc}"]
    flags = [_flag(ctx.command, name) for name in exc.options]
    shown = ", ".join(f for f in flags if f)
    if exc.hint and shown:
        lines.append(f"  hint: {exc.hint} ({shown})")
    elif exc.hint:
        lines.append(f"  hint: {exc.hint}")
    elif shown:
        lines.append(f"  see: {shown}")
    return "\n".join(lines)


def _flag(command: click.Command, name: str) -> str | None:
    for param in command.params:
        if isinstance(param, click.Option) and param.name == name:
            return max(param.opts, key=len)
    return None


def _os_message(exc: OSError) -> str:
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"


def mark_wrapped_command(command: click.Command, ctx: click.Context, args: list[str]) -> list[str]:
    """``args`` with ``--`` inserted where the wrapped command starts (at the first word that is not ours).

    Options are read up to there, so an unknown option is reported as one instead
    of starting the wrapped command; ``--`` given by the user is kept as it is.
    """
    takes_value: dict[str, bool] = {}
    for param in command.get_params(ctx):
        if isinstance(param, click.Option):
            for opt in (*param.opts, *param.secondary_opts):
                # an option whose value is optional (--update, --update=ci) takes it only as --opt=value
                takes_value[opt] = not param.is_flag and not param.count and not param._flag_needs_value
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    fixed = len(arguments) - 1  # the last argument is the wrapped command
    out: list[str] = []
    seen = 0
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            return out + args[i:]
        if word.startswith("-") and word != "-":
            out.append(word)
            i += 1
            if i < len(args) and _wants_value(word, takes_value):
                out.append(args[i])
                i += 1
            continue
        if seen < fixed:
            out.append(word)
            seen += 1
            i += 1
            continue
        return [*out, "--", *args[i:]]
    return out


def _wants_value(word: str, takes_value: dict[str, bool]) -> bool:
    """Whether the option ``word`` takes the next word as its value (``--opt=v`` and ``-ov`` do not)."""
    if word.startswith("--"):
        return "=" not in word and takes_value.get(word, False)
    for j in range(1, len(word)):  # a cluster of short options: -vo FILE
        if takes_value.get("-" + word[j], False):
            return j == len(word) - 1
    return False


LOGGERS = ("blackbox_mitm", "blackbox")  # the package's loggers (by __name__), and the older shared name


def setup_logging(verbose: bool = False) -> None:
    """Blackbox's log lines on stderr, bare: warnings always, INFO with ``-v``."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if not any(h.get_name() == "blackbox-stderr" for h in logger.handlers):
            handler = logging.StreamHandler(sys.stderr)
            handler.set_name("blackbox-stderr")
            handler.setFormatter(logging.Formatter("%(message)s"))
            logger.addHandler(handler)
            logger.propagate = False
        logger.setLevel(logging.INFO if verbose else logging.WARNING)
