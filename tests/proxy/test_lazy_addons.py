"""proxy.lazy_addons: a Blackbox proxy imports only the mitmproxy addons it runs; the package stays whole for anyone else.

Each check runs in a fresh interpreter: what a process has imported is the point.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def _run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_a_started_proxy_never_imports_the_addons_it_does_not_run(tmp_path: Path) -> None:
    out = _run(
        f"""
        import sys
        from blackbox_mitm.proxy.addon import BlackboxAddon
        from blackbox_mitm.proxy.runner import ProxyRunner
        from blackbox_mitm.session.engine import Session
        from blackbox_mitm.session.plan import REFUSE, RunPlan

        runner = ProxyRunner(BlackboxAddon(Session(RunPlan(tail=REFUSE), run_id="lean"), on_done=lambda: None), confdir={str(tmp_path)!r})
        runner.start()
        assert runner.port > 0
        runner.stop()
        unused = ("mitmproxy.addons.onboarding", "mitmproxy.addons.proxyauth", "mitmproxy.addons.clientplayback",
                  "mitmproxy.addons.savehar", "mitmproxy.addons.mapremote", "mitmproxy.flowfilter", "flask", "ldap3")
        print(sorted(m for m in unused if m in sys.modules))
        """
    )
    assert out == "[]"


def test_the_package_is_mitmproxys_whole_for_whoever_asks_for_more() -> None:
    out = _run(
        """
        import blackbox_mitm.proxy.runner  # installs the lazy package
        import mitmproxy.master
        from mitmproxy import addons
        from mitmproxy.addons import core, termlog

        assert "onboarding" not in vars(addons)  # only what was asked for so far
        names = [type(a).__name__ for a in addons.default_addons()]  # the package's own __init__ runs now
        assert addons.onboarding.Onboarding and core.Core and termlog.TermLog
        print(len(names), names[0], names[-1])
        """
    )
    assert out == _run("from mitmproxy import addons; n = [type(a).__name__ for a in addons.default_addons()]; print(len(n), n[0], n[-1])")


def test_nothing_changes_when_mitmproxy_imported_its_addons_first() -> None:
    out = _run(
        """
        import sys
        from mitmproxy import addons
        whole = sys.modules["mitmproxy.addons"]
        import blackbox_mitm.proxy.runner
        print(sys.modules["mitmproxy.addons"] is whole, hasattr(whole, "default_addons"))
        """
    )
    assert out == "True True"


def test_the_chain_holds_map_remote_only_when_asked() -> None:
    from blackbox_mitm.proxy.runner import proxy_addons

    assert "MapRemote" in [type(a).__name__ for a in proxy_addons()]
    assert [type(a).__name__ for a in proxy_addons(map_remote=False)] == [
        name for name in (type(a).__name__ for a in proxy_addons()) if name != "MapRemote"
    ]
