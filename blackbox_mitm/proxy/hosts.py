"""The addon's host table: which hosts it intercepts, and the codec each host named with one speaks.

Both ways of starting the addon build it here, with ``host_table``: the CLI
(``BlackboxAddon.use_hosts``, given the project config's hosts and ``--host``
flags, after every registered provider's own) and mitmdump's options
(``blackbox_hosts``, whose default is those providers' hosts, then the project
config's ``[tool.blackbox.hosts]``). A ``HOST=CODEC`` spec names the codec a
host speaks (``codecs.codec_for``'s ``named``); when a host is named twice, the
later spec's codec wins. No mitmproxy import.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from blackbox_mitm.codecs import default_hosts, host_spec

__all__ = ["DEFAULT_HOSTS", "HostTable", "host_table"]

DEFAULT_HOSTS = default_hosts()


@dataclass(frozen=True, slots=True)
class HostTable:
    """The intercepted hosts (lower case, each once, in the order given) and ``{host: codec name}`` for the named ones."""

    hosts: tuple[str, ...]
    codecs: dict[str, str] = field(default_factory=dict)


def host_table(specs: Iterable[str], *, base: Iterable[str] = DEFAULT_HOSTS) -> HostTable:
    """``base``'s hosts, then those of ``specs`` (``HOST`` or ``HOST=CODEC``; blank ones skipped).

    ``ConfigError`` for a spec that is no host or names an unknown codec (``codecs.host_spec``).
    """
    named = [host_spec(spec) for spec in specs if spec.strip()]
    hosts = tuple(dict.fromkeys([*base, *(host for host, _ in named)]))
    return HostTable(hosts, {host: codec for host, codec in named if codec is not None})
