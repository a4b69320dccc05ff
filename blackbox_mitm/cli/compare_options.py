"""The options every replaying command shares — ``--mask``, ``--no-mask``, ``--no-default-masks``, ``--redact``, ``--pace``, ``--order-gap`` — and ``blackbox config`` / ``blackbox masks``.

``compare_options`` adds them to a command, which receives them as
``compare: CompareOptions`` (``record`` takes ``--redact`` alone:
``record_options``; ``golden add`` all but ``--redact``: ``mask_options``).
``CompareOptions.settings`` puts them together with the project config
(``blackbox_mitm.config``) into the effective settings; a config or pattern
that cannot be used is a ``ConfigError``, which ``cli.base`` turns into exit 2.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import click
import orjson

from blackbox_mitm.cli.base import command

__all__ = ["CompareOptions", "compare_options", "config_command", "default_or", "mask_options", "masks_command", "record_options"]

type Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


@dataclass(frozen=True, slots=True)
class CompareOptions:
    """The values of ``compare_options`` (or of ``record_options`` / ``mask_options``: the others stay empty)."""

    masks: tuple[str, ...] = ()
    no_default_masks: bool = False
    no_mask: tuple[str, ...] = ()
    redact: tuple[str, ...] = ()
    pace: str | None = None
    order_gap: str | None = None
    no_env_substitution: bool = False

    def settings(self, *, hosts: Iterable[str] = (), match: str | None = None, **exchange_flags: Any) -> Any:
        """The effective settings (``config.Effective``): the project config plus these flags and ``hosts`` / ``match``."""
        from blackbox_mitm.config import effective_settings

        return effective_settings(
            masks=list(self.masks),
            no_default_masks=self.no_default_masks,
            no_mask=list(self.no_mask),
            redact=list(self.redact),
            hosts=hosts,
            match=match,
            pace=self.pace,
            order_gap=self.order_gap,
            **exchange_flags,
            no_env_substitution=self.no_env_substitution,
        )


def default_or(name: str, value: Any) -> Any:
    """``value`` when the user gave option ``name``; None when it is click's default (so the project config decides)."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.get_parameter_source(name) in (click.core.ParameterSource.DEFAULT, None):
        return None
    return value


_redact = click.option(
    "--redact",
    "redact",
    multiple=True,
    metavar="REGEX",
    help="replace what REGEX matches by <redacted:redact-HASH> in every payload before it is hashed (repeatable; adds to the config's)",
)
_pace = click.option(
    "--pace",
    default=None,
    metavar="recorded|FACTOR",
    help="deliver each answer after as long as its call took when recorded ('recorded'), or that times FACTOR (0.1: ten times faster); default: at once",
)
_order_gap = click.option(
    "--order-gap",
    default=None,
    metavar="MS|off",
    help="answers to calls that overlapped when recorded end in the recorded order, at least MS apart (default 25); 'off': as they are ready",
)
_no_default_masks = click.option(
    "--no-default-masks", is_flag=True, help="compare what the built-in masks would ignore (blackbox masks lists them)"
)
_no_mask = click.option(
    "--no-mask",
    "no_mask",
    multiple=True,
    metavar="NAME",
    help="leave out the mask NAME: a built-in one, an agent profile's or the config's (repeatable; blackbox masks lists them)",
)
_no_env = click.option(
    "--no-env-substitution",
    is_flag=True,
    help="keep the run's cwd, HOME, user, host, temp dir and date as they are (default: placeholders, replayed as the live values)",
)
_mask = click.option(
    "--mask",
    "masks",
    multiple=True,
    metavar="REGEX",
    help="strict matching ignores what REGEX matches in compared texts (repeatable; adds to the config's)",
)


def _collecting(f: Callable[..., Any], names: tuple[str, ...]) -> Callable[..., Any]:
    @functools.wraps(f)
    def with_compare(*args: Any, **kwargs: Any) -> Any:
        values = {name: kwargs.pop(name) for name in names}
        return f(*args, compare=CompareOptions(**values), **kwargs)

    return with_compare


def compare_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--mask``, ``--no-mask``, ``--no-default-masks``, ``--redact``, ``--pace``, ``--order-gap`` (``replay``, ``fork``, ``test``,
    ``proxy``), as ``compare``."""
    names = ("masks", "no_mask", "no_default_masks", "redact", "pace", "order_gap", "no_env_substitution")
    return _mask(_no_mask(_no_default_masks(_redact(_pace(_order_gap(_no_env(_collecting(f, names))))))))


def mask_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--mask``, ``--no-mask``, ``--no-default-masks``, ``--pace`` (``golden add``: what a golden keeps beside it), as ``compare``."""
    return _mask(_no_mask(_no_default_masks(_pace(_collecting(f, ("masks", "no_mask", "no_default_masks", "pace"))))))


def record_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--redact`` and ``--no-env-substitution`` (``record``), as ``compare``."""
    return _redact(_no_env(_collecting(f, ("redact", "no_env_substitution"))))


@command("masks")
@click.option("--json", "as_json", is_flag=True, help="print the masks as JSON")
def masks_command(as_json: bool) -> None:
    """List the built-in masks: volatile text of known agents that strict replay ignores (off: --no-default-masks, or one
    by one: --no-mask NAME).

    Then the agent profiles: the masks and the lists compared sorted that a replay adds when the agent's User-Agent names it.
    """
    from blackbox_mitm.matcher.masks import BUILT_IN_MASKS
    from blackbox_mitm.matcher.profiles import PROFILES

    if as_json:
        listed: list[dict[str, Any]] = [m.to_json() for m in BUILT_IN_MASKS]
        listed += [{**m.to_json(), "profile": p.name, "userAgents": list(p.user_agents)} for p in PROFILES for m in p.masks]
        listed += [
            {"name": u.name, "list": u.block, "item": u.item, "about": u.about, "compared": "sorted", "profile": p.name}
            for p in PROFILES
            for u in p.unordered
        ]
        click.echo(orjson.dumps(listed, option=orjson.OPT_INDENT_2).decode())
        return
    for mask in BUILT_IN_MASKS:
        click.echo(f"{mask.name}\n  pattern: {mask.pattern}\n  {mask.about}")
    click.echo("\nagent profiles (chosen by the first model call's User-Agent):")
    for profile in PROFILES:
        click.echo(f"{profile.name}: User-Agent {', '.join(a + '…' for a in profile.user_agents)} — {profile.about}")
        for mask in profile.masks:
            click.echo(f"  {mask.name}\n    pattern: {mask.pattern}\n    {mask.about}")
        for rule in profile.unordered:
            click.echo(f"  {rule.name} (compared sorted)\n    list: {rule.block}\n    item: {rule.item}\n    {rule.about}")
        for prefix in profile.background:
            click.echo(f"  background request (not a divergence when a replay makes it and the recording lacks it): {prefix}…")


@command("config")
@compare_options
@click.option("--host", "hosts", multiple=True, metavar="HOST[=CODEC]", help="as for record and replay")
@click.option("--match", type=click.Choice(["strict", "sequence"]), default=None)
@click.option("--json", "as_json", is_flag=True, help="print the settings as JSON")
def config_command(compare: CompareOptions, hosts: tuple[str, ...], match: str | None, as_json: bool) -> None:
    """Print the effective settings — the project config (found walking up from here) plus any flags — and where each came from.

    \b
    blackbox config
    blackbox config --mask 'session-[0-9a-f]+' --pace recorded
    """
    data = compare.settings(hosts=hosts, match=match).to_json()
    if as_json:
        click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
        return
    where = data["config"] if data["table"] is None else f"{data['config']} [{data['table']}]"
    click.echo(f"config: {where or 'none found (blackbox.toml, or [tool.blackbox] in pyproject.toml, from here up)'}")
    click.echo(f"match: {data['match']['value']}  ({data['match']['source']})")
    click.echo(f"pace: {data['pace']['value']}  ({data['pace']['source']})")
    click.echo(f"order gap: {data['order_gap']['value']}  ({data['order_gap']['source']})")
    click.echo(f"default masks: {'on' if data['default_masks']['value'] else 'off'}  ({data['default_masks']['source']})")
    if data["no_mask"]:
        click.echo("masks off: " + ", ".join(f"{m['name']} ({m['source']})" for m in data["no_mask"]))
    for key in ("exchanges", "exchange_max_bytes", "exchanges_max_bytes"):
        if key in data:
            click.echo(f"{key.replace('_', ' ')}: {data[key]['value']}  ({data[key]['source']})")
    env = data["env_substitution"]
    click.echo(f"env substitution: {'on' if env['value'] else 'off'}  ({env['source']})")
    _rows("masks", [(m["name"], m["pattern"], m["source"]) for m in data["mask"]])
    _rows("redact", [(r["name"], r["pattern"], r["source"]) for r in data["redact"]])
    _rows("hosts", [(h["value"], h["codec"] or "", h["source"]) for h in data["hosts"]], extra="(besides the providers' own)")


def _rows(title: str, rows: list[tuple[str, str, str]], extra: str = "") -> None:
    if not rows:
        click.echo(f"{title}: none")
        return
    click.echo(f"{title}: {extra}".rstrip())
    width = max(len(name) for name, _, _ in rows)
    for name, pattern, source in rows:
        middle = f"  {pattern}" if pattern else ""
        click.echo(f"  {name:<{width}}{middle}  ({source})")
