"""Tool results in call order: ``order_tool_results`` now lives in ``cassette.payloads``, re-exported here.

The matcher needs it too, and the matcher sits below the session: the rule moved
down to the payloads it reads (see its comment block there).
"""

from __future__ import annotations

from blackbox_mitm.cassette.payloads import order_tool_results

__all__ = ["order_tool_results"]
