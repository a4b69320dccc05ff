"""The offline guard: in an offline replay no connection leaves the proxy. A small mitmproxy addon of its own.

Not for CONNECT tunnels of any protocol, absolute-form HTTP, WebSockets, HTTP/2,
raw TCP inside a tunnel, or a request that could not be answered: whatever the
client sends, the server connection is refused before it is dialled. Only
Blackbox's own loopback servers (the pacer, a WebSocket replayer), listed in
``allowed``, are reached. ``BlackboxAddon`` owns one (as a child addon, in
mitmproxy's ``addons`` attribute) and says when it is on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from mitmproxy import tcp
from mitmproxy.proxy import server_hooks

__all__ = ["OfflineGuard"]

log = logging.getLogger(__name__)


class OfflineGuard:
    """Refuses every server connection while ``on()`` is true, except to the loopback servers in ``allowed``."""

    def __init__(self, on: Callable[[], bool], allowed: set[tuple[str, int]]) -> None:
        self.on = on
        self.allowed = allowed  # shared with the addon, which adds its loopback servers as they start

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        if not self.on():
            return
        address = data.server.address
        if address is not None and (str(address[0]), int(address[1])) in self.allowed:
            return
        where = f"{address[0]}:{address[1]}" if address else "an upstream"
        data.server.error = f"blackbox replay is offline: {where} was not contacted"
        log.info("blackbox: offline: refused a connection to %s", where)

    def tcp_start(self, flow: tcp.TCPFlow) -> None:
        """Raw TCP inside a tunnel (not TLS, not HTTP): an offline replay never relays it."""
        if self.on():
            flow.kill()
