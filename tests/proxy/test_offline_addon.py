"""The offline guard is its own small addon (proxy/offline.py): on, it refuses every server connection but Blackbox's loopback ones."""

from __future__ import annotations

from mitmproxy import connection
from mitmproxy.proxy import server_hooks
from mitmproxy.test import tflow

from blackbox_mitm.errors import BlackboxUnsupportedError
from blackbox_mitm.proxy.addon import BlackboxAddon
from blackbox_mitm.proxy.offline import OfflineGuard


def _connect(address: tuple[str, int]) -> server_hooks.ServerConnectionHookData:
    client = connection.Client(peername=("127.0.0.1", 50000), sockname=("127.0.0.1", 8080))
    return server_hooks.ServerConnectionHookData(server=connection.Server(address=address), client=client)


def test_on_it_refuses_every_connection_but_the_loopback_servers() -> None:
    guard = OfflineGuard(lambda: True, {("127.0.0.1", 4242)})
    out, ours = _connect(("api.openai.com", 443)), _connect(("127.0.0.1", 4242))
    guard.server_connect(out)
    guard.server_connect(ours)
    assert out.server.error == "blackbox replay is offline: api.openai.com:443 was not contacted"
    assert ours.server.error is None
    raw = tflow.ttcpflow()
    guard.tcp_start(raw)
    assert raw.error is not None


def test_off_it_lets_everything_through() -> None:
    guard = OfflineGuard(lambda: False, set())
    data = _connect(("api.openai.com", 443))
    guard.server_connect(data)
    assert data.server.error is None


def test_the_addon_carries_it_as_a_child_addon() -> None:
    addon = BlackboxAddon(on_done=lambda: None)
    assert addon.addons == [addon.guard]
    assert not addon.guard.on()  # no session: nothing is replayed
    addon.local_upstreams.add(("127.0.0.1", 9))
    assert ("127.0.0.1", 9) in addon.guard.allowed


def test_an_unsupported_call_names_its_class_once_on_the_wire() -> None:
    err = BlackboxUnsupportedError("n", "several choices", value="2")
    assert str(err) == "n: several choices (it was 2)"
    assert err.client_message == "BlackboxUnsupportedError: n: several choices (it was 2)"
