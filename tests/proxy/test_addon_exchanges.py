"""The addon's exchange hooks without sockets (taddons/tflow): kept while recording, served or refused offline."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from mitmproxy import http
from mitmproxy.addons.proxyserver import Proxyserver
from mitmproxy.test import taddons, tflow, tutils

from blackbox_mitm.cassette.exchanges import exchanges_path
from blackbox_mitm.proxy.addon import BlackboxAddon


def _get(path: str = "/page.html?key=abcdefgh12345678", host: str = "docs.example.com") -> http.HTTPFlow:
    req = tutils.treq(host=host, port=443, scheme=b"https", method=b"GET", path=path.encode(), content=b"")
    req.headers["cookie"] = "sid=client-cookie-0001"
    req.headers["authorization"] = "Bearer tok-abcdefghijklmnop"
    return tflow.tflow(req=req)


async def _record(cassette: Path, **options: object) -> None:
    addon = BlackboxAddon()
    with taddons.context(addon, Proxyserver()) as tctx:
        tctx.configure(addon, blackbox_mode="record", blackbox_cassette=str(cassette), **options)
        f = _get()
        addon.requestheaders(f)
        addon.request(f)
        assert f.response is None  # forwarded
        f.response = http.Response.make(200, b"<h1>page</h1>", {"content-type": "text/html", "set-cookie": "s=server-cookie-0002"})
        addon.responseheaders(f)
        kept = options.get("blackbox_exchanges") != "none"
        assert callable(f.response.stream) == kept  # teed: a large body passes through while only its size is kept
        if callable(f.response.stream):
            f.response.stream(b"<h1>page</h1>")
            f.response.stream(b"")
        await addon.response(f)
        addon.done()


def test_a_recording_keeps_the_exchange_without_cookies_or_auth(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    asyncio.run(_record(cassette, blackbox_overwrite=False))
    side = exchanges_path(cassette)
    text = side.read_text()
    for secret in ("client-cookie-0001", "server-cookie-0002", "tok-abcdefghijklmnop", "abcdefgh12345678"):
        assert secret not in text and secret not in cassette.read_text()
    entry = json.loads(text)["exchanges"][0]
    assert (entry["host"], entry["path"], entry["response"]["status"]) == ("docs.example.com", "/page.html", 200)
    assert json.loads(cassette.read_text())["steps"][-1]["payload"]["exchanges"]["count"] == 1


def test_exchanges_none_keeps_nothing(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    asyncio.run(_record(cassette, blackbox_exchanges="none"))
    assert not exchanges_path(cassette).exists()
    assert "exchanges" not in json.loads(cassette.read_text())["steps"][-1]["payload"]


async def _replay(cassette: Path, *flows: http.HTTPFlow) -> None:
    addon = BlackboxAddon()
    with taddons.context(addon, Proxyserver()) as tctx:
        tctx.configure(addon, blackbox_mode="replay", blackbox_cassette=str(cassette))
        for flow in flows:
            addon.requestheaders(flow)
            addon.request(flow)


def test_an_offline_replay_serves_the_recorded_exchange_and_refuses_another(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    asyncio.run(_record(cassette))
    served, refused = _get(), _get("/other.html")
    asyncio.run(_replay(cassette, served, refused))
    assert served.response is not None and served.response.status_code == 200
    assert served.response.content == b"<h1>page</h1>" and "set-cookie" not in served.response.headers
    assert refused.response is not None and refused.response.status_code == 502
    assert refused.response.content is not None
    assert b"blackbox replay is offline: docs.example.com was not contacted (it is not in the recording)" in refused.response.content
