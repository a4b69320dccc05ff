"""``mitmproxy.addons`` imported one addon at a time: start-up without the addons a Blackbox proxy never runs.

``mitmproxy.master`` imports ``mitmproxy.addons.termlog``, and importing any
submodule first runs the package's ``__init__``, which imports every default
addon — the onboarding app (Flask, Werkzeug, Jinja2), proxy auth (ldap3),
client and server playback, HAR export, ... — none of which the runner's chain
(``runner.proxy_addons``) holds. Those imports were about a third of the CPU time
of importing ``mitmproxy.master`` (issue #28: ``blackbox replay RUN -- true``
against mitmdump's start and stop).

``install()`` puts the package in ``sys.modules`` without running its
``__init__``: a submodule (``from mitmproxy.addons import core``) is imported
alone, as any package's submodule is; any other name (``default_addons``, as
``mitmproxy.tools.main`` asks for) runs the real ``__init__`` first, so the
package then is exactly mitmproxy's. Nothing changes when the package is
already imported (``mitmdump -s blackbox_mitm/proxy/addon.py``: mitmdump
imported it before our script).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from typing import Any

__all__ = ["install"]

_NAME = "mitmproxy.addons"
_lock = threading.Lock()


def install() -> None:
    """Make ``mitmproxy.addons`` import its submodules one at a time (a no-op once it is imported)."""
    with _lock:
        if _NAME in sys.modules:
            return
        import mitmproxy

        spec = importlib.util.find_spec(_NAME)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return  # not the package we know: let it import as it does
        module = importlib.util.module_from_spec(spec)  # __path__, __spec__, __file__ set; __init__ not run
        loader = spec.loader

        def __getattr__(name: str) -> Any:  # the module's own (PEP 562)
            if name.startswith("__"):
                raise AttributeError(f"module {_NAME!r} has no attribute {name!r}")
            if importlib.util.find_spec(f"{_NAME}.{name}") is not None:
                return importlib.import_module(f"{_NAME}.{name}")  # one addon module, on its own
            with _lock:
                if "__getattr__" in module.__dict__:  # the first thread here runs the real __init__; the rest wait for it
                    del module.__dict__["__getattr__"]
                    loader.exec_module(module)  # the package's own __init__: every default addon, default_addons()
            try:
                return module.__dict__[name]
            except KeyError:
                raise AttributeError(f"module {_NAME!r} has no attribute {name!r}") from None

        module.__dict__["__getattr__"] = __getattr__
        sys.modules[_NAME] = module
        vars(mitmproxy)["addons"] = module  # as an import sets it
