"""``--exchanges``, ``--exchange-max-bytes`` and ``--exchanges-max-bytes``: what a recording keeps of the other HTTP traffic."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

__all__ = ["ExchangeOptions", "exchange_options"]


@dataclass(frozen=True, slots=True)
class ExchangeOptions:
    """The flags as given (None: the project config, else the default, decides)."""

    exchanges: str | None = None
    exchange_max_bytes: int | None = None
    exchanges_max_bytes: int | None = None

    def session_kwargs(self, settings: Any) -> dict[str, Any]:
        """``record_session``'s keyword arguments from the effective settings (``config.Effective``)."""
        return {k: v.value for k, v in settings.exchange_settings().items()}

    def flags(self) -> dict[str, Any]:
        return {"exchanges": self.exchanges, "exchange_max_bytes": self.exchange_max_bytes, "exchanges_max_bytes": self.exchanges_max_bytes}


def exchange_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Adds the three flags, collected into one ``exchange`` argument."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        names = ("exchanges", "exchange_max_bytes", "exchanges_max_bytes")
        return f(*args, exchange=ExchangeOptions(*(kwargs.pop(n) for n in names)), **kwargs)

    for option in (
        click.option(
            "--exchanges-max-bytes",
            type=click.IntRange(min=0),
            default=None,
            help="cap on all kept response bodies of the run (default 64 MiB); what is over it is named in a note",
        ),
        click.option(
            "--exchange-max-bytes",
            type=click.IntRange(min=0),
            default=None,
            help="cap on one kept response body (default 16 MiB); a larger download passes through, only its size is kept",
        ),
        click.option(
            "--exchanges",
            type=click.Choice(["all", "model-hosts", "none"]),
            default=None,
            help="the other HTTP(S) exchanges kept for an offline replay: all (default), those to model hosts, or none",
        ),
    ):
        wrapper = option(wrapper)
    return wrapper
