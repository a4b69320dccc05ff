"""A mitmdump script that shuts mitmproxy down as soon as it is running (listening).

``mitmdump -s benchmarks/mitm_stop_addon.py`` then measures mitmproxy starting
(imports, options, the CA, binding the port) and stopping, nothing else.
"""

from __future__ import annotations

from mitmproxy import ctx


def running() -> None:
    ctx.master.shutdown()
