"""Run a real mitmproxy in-process, on a thread of its own, on 127.0.0.1 and a free port.

Used by ``blackbox record/replay/fork/test/proxy`` and by the pytest plugin. It is
mitmproxy's own ``Master`` with its default addons (TLS interception with the CA
in ``confdir``, ``map_remote``, ...) plus the Blackbox addon, started and stopped
from synchronous code.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from blackbox_mitm.proxy import lazy_addons

lazy_addons.install()  # before mitmproxy.master: only the addons the chain holds are imported (proxy/lazy_addons.py)

from mitmproxy import master, options  # noqa: E402

from blackbox_mitm.errors import ProxyStartError  # noqa: E402
from blackbox_mitm.proxy.addon import BlackboxAddon  # noqa: E402
from blackbox_mitm.proxy.environment import default_confdir  # noqa: E402

__all__ = ["ProxyRunner", "ProxyStartError"]

log = logging.getLogger(__name__)


class _Ready:
    def __init__(self, runner: ProxyRunner) -> None:
        self.runner = runner

    def running(self) -> None:
        from mitmproxy import ctx

        ps = ctx.master.addons.get("proxyserver")
        addrs = ps.listen_addrs() if ps else []
        if addrs:
            self.runner.port = int(addrs[0][1])
        else:
            self.runner.error = "the proxy did not start listening (is the address in use?)"
        self.runner._ready.set()


class ProxyRunner:
    """``with ProxyRunner(addon) as proxy: ... proxy.url ...``"""

    def __init__(
        self,
        addon: BlackboxAddon,
        *,
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
        confdir: str | Path | None = None,
        map_remote: Sequence[str] = (),
        intercept_only: Sequence[str] | None = None,
        offline: bool = False,
        extra_options: dict[str, Any] | None = None,
    ) -> None:
        self.addon = addon
        self.listen_host = listen_host
        self.port = listen_port
        # The same default as the client environment's CA bundle ($BLACKBOX_CONFDIR, else ~/.mitmproxy).
        self.confdir: Path = Path(confdir).expanduser() if confdir else default_confdir()
        self.map_remote = list(map_remote)
        self.intercept_only = list(intercept_only) if intercept_only else None
        self.offline = offline
        self.extra_options = dict(extra_options or {})
        self.error: str | None = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._master: master.Master | None = None
        self._crash: BaseException | None = None

    @property
    def url(self) -> str:
        return f"http://{self.listen_host}:{self.port}"

    def start(self, timeout: float = 60.0) -> ProxyRunner:
        self._thread = threading.Thread(target=self._run, name="blackbox-proxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise ProxyStartError(f"the proxy did not start within {timeout:.0f}s")
        if self._crash is not None:
            raise ProxyStartError(f"the proxy failed to start: {self._crash}") from self._crash
        if self.error:
            self.stop()
            raise ProxyStartError(f"{self.error} ({self.listen_host}:{self.port})")
        return self

    def stop(self, timeout: float = 60.0) -> None:
        if self._master is not None:
            self._master.shutdown()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self) -> ProxyRunner:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _options(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "listen_host": self.listen_host,
            "listen_port": self.port,
            # Never dial an upstream before our request hook decided (offline replay, map_remote).
            "connection_strategy": "lazy",
        }
        values["confdir"] = str(self.confdir)
        if self.map_remote:
            values["map_remote"] = self.map_remote
        if self.offline:
            values["upstream_cert"] = False
        if self.intercept_only:
            # Only provider hosts are intercepted; other TLS passes through untouched.
            values["allow_hosts"] = [_host_pattern(h) for h in self.intercept_only]
        values.update(self.extra_options)
        return values

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # surface start-up failures to start()
            self._crash = exc
            log.error("blackbox: the proxy stopped with an error: %s", exc)
        finally:
            self._ready.set()

    async def _main(self) -> None:
        opts = options.Options()
        m = master.Master(opts)
        m.addons.add(*proxy_addons(map_remote=bool(self.map_remote) or "map_remote" in self.extra_options))
        m.addons.add(self.addon, _Ready(self))
        opts.update(**self._options())
        self._master = m
        await m.run()


def proxy_addons(*, map_remote: bool = True) -> list[Any]:
    """mitmproxy's addons that a Blackbox proxy uses, in ``default_addons()`` order; the others are left out.

    Every addon in the chain is offered every event of every flow (mitmproxy's ``trigger_event`` walks the whole
    chain, a context manager per addon and hook), and in a replay that walk was most of the proxy's own time per
    call (issue #28's profiles: ``_iter_hooks``, ``trigger_event`` and ``contextlib`` above our hooks). The proxy
    this runner starts sets only the options below, so it keeps:

    * ``Core``, ``Proxyserver``, ``NextLayer``, ``TlsConfig`` — a proxy that intercepts TLS (``allow_hosts``,
      ``connection_strategy``, ``upstream_cert`` are core options);
    * ``Block`` — refuses clients from outside the machine (``block_global``): the proxy listens on 127.0.0.1 anyway;
    * ``DisableH2C`` — answers an HTTP/2 cleartext upgrade instead of passing it on unparsed;
    * ``DnsResolver`` and ``UpstreamAuth`` — name resolution for DNS-mode clients, and ``upstream_auth`` when
      mitmproxy runs in upstream mode;
    * ``MapRemote`` — ``map_remote``, which points a provider at a local server (``--map-remote``); with
      ``map_remote=False`` (the runner's choice when it sets no ``map_remote``) it is left out, and with it the
      import of mitmproxy's flow-filter grammar (pyparsing), which only it needs.

    Left out: what a user of ``mitmdump`` drives by options or commands that Blackbox never sets — playback
    (client and server), saving flows and HAR files, scripts, onboarding (mitm.it: ``blackbox certs`` hands out
    the CA), proxy auth, body / header rewriting, sticky cookies and auth, anticache, anticomp, block lists,
    command history, comments, cuts, exports, the browser, Alt-Svc rewriting, DNS HTTPS-record stripping.
    ``mitmdump -s blackbox_mitm/proxy/addon.py`` keeps mitmdump's own chain.
    """
    from mitmproxy.addons import block, core, disable_h2c, dns_resolver, next_layer, proxyserver, tlsconfig, upstream_auth

    remote: list[Any] = []
    if map_remote:
        from mitmproxy.addons import mapremote

        remote.append(mapremote.MapRemote())
    return [
        core.Core(),
        block.Block(),
        disable_h2c.DisableH2C(),
        proxyserver.Proxyserver(),
        dns_resolver.DnsResolver(),
        next_layer.NextLayer(),
        *remote,
        _tls_config(tlsconfig.TlsConfig),
        upstream_auth.UpstreamAuth(),
    ]


def _tls_config(base: type[Any]) -> Any:
    """mitmproxy's ``TlsConfig`` that loads the CA once per start, not twice.

    ``TlsConfig`` loads the CA (an RSA key check of ~0.1 s) in ``configure`` when ``confdir`` or another of its
    options changes, and again in ``running``, for setups where ``configure`` never saw ``confdir`` (its own FIXME).
    This runner always sets ``confdir``, so by ``running`` the CA is loaded for the options in force (any later
    change goes through ``configure`` again); ``running`` loads it only when nothing did. Its name stays
    ``tlsconfig`` (mitmproxy names an addon by its class).
    """

    class TlsConfig(base):  # type: ignore[misc]
        def running(self) -> None:
            if self.certstore is None:
                super().running()

    return TlsConfig()


def _host_pattern(host: str) -> str:
    """A host (or a pattern such as ``*.openai.azure.com``) as the regular expression ``allow_hosts`` takes."""
    from blackbox_mitm.codecs import host_regex

    return host_regex(host)
