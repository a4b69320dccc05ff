"""The runner's addon chain (proxy.runner.proxy_addons): every option a Blackbox proxy sets exists, and the chain is small."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mitmproxy import addons, certs, master, options

from blackbox_mitm.proxy.addon import BlackboxAddon
from blackbox_mitm.proxy.runner import ProxyRunner, proxy_addons
from blackbox_mitm.session.engine import Session
from blackbox_mitm.session.plan import REFUSE, RunPlan


def test_every_option_the_runner_sets_is_defined_by_the_chain(tmp_path: Path) -> None:
    addon = BlackboxAddon(Session(RunPlan(tail=REFUSE), run_id="chain"), on_done=lambda: None)
    runner = ProxyRunner(
        addon,
        confdir=tmp_path,
        map_remote=["|https://api\\.openai\\.com|http://127.0.0.1:9"],
        intercept_only=["api.openai.com"],
        offline=True,
        extra_options={"blackbox_stream_delay_ms": 5},
    )

    async def configure() -> None:
        m = master.Master(options.Options())
        m.addons.add(*proxy_addons())
        m.addons.add(addon)
        m.options.update(**runner._options())  # an option nothing defines would raise KeyError here
        assert m.addons.get("proxyserver") is not None
        assert m.addons.get("mapremote") is not None
        assert m.options.map_remote == runner.map_remote
        assert m.options.block_global is True  # clients from outside the machine are still refused

    asyncio.run(configure())


def test_the_chain_is_a_subset_of_mitmproxys_default_addons_in_its_order() -> None:
    default = [type(a).__name__ for a in addons.default_addons()]
    ours = [type(a).__name__ for a in proxy_addons()]
    assert ours == [name for name in default if name in ours]
    assert len(ours) < len(default)
    assert {"Core", "Proxyserver", "NextLayer", "TlsConfig", "MapRemote", "Block"} <= set(ours)


def test_a_started_proxy_loads_its_ca_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = certs.CertStore.from_store
    loads: list[str] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        loads.append(str(kwargs.get("path", args[0] if args else "")))
        return real(*args, **kwargs)

    monkeypatch.setattr(certs.CertStore, "from_store", staticmethod(counted))
    addon = BlackboxAddon(Session(RunPlan(tail=REFUSE), run_id="ca-once"), on_done=lambda: None)
    runner = ProxyRunner(addon, confdir=tmp_path, offline=True).start()
    try:
        assert runner.port > 0
    finally:
        runner.stop()
    assert loads == [str(tmp_path)]  # once, from the run's confdir (mitmproxy's own TlsConfig loads it twice)


def test_the_chain_keeps_mitmproxys_addon_names() -> None:
    assert [type(a).__name__.lower() for a in proxy_addons()] == [
        "core",
        "block",
        "disableh2c",
        "proxyserver",
        "dnsresolver",
        "nextlayer",
        "mapremote",
        "tlsconfig",
        "upstreamauth",
    ]
