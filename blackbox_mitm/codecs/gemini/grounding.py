"""Gemini's Google Search grounding: the ``googleSearch`` / ``urlContext`` tools, and the metadata an answer carries.

Grounding runs at Google inside one call: the answer's text comes with the
candidate's ``groundingMetadata`` (the queries, the sources, which text spans
they support) and, for URL context, ``urlContextMetadata``; recitation sources
come as ``citationMetadata``. They are model output: kept with the answer as
``grounding`` (``cassette/server_parts.py``), those keys as the provider sent
them, and put back on the candidate of a replay (on the last chunk of a stream,
where Gemini sends them). The request's ``googleSearch``, ``googleSearchRetrieval``
and ``urlContext`` tools are provider-defined tool definitions (``builtin``).
Gemini never sends grounding back in the history, so there is nothing to read there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from blackbox_mitm.cassette.payloads import ToolDefinition, builtin_tool
from blackbox_mitm.codecs.gemini import builtins

__all__ = ["GROUNDING_KEYS", "SERVED_TOOLS", "decode_builtin", "grounding_of", "served_grounding"]

# Every recorded built-in (``builtins``): grounding, code execution (``code_execution``), computer use.
SERVED_TOOLS = builtins.TOOLS
GROUNDING_KEYS = ("groundingMetadata", "urlContextMetadata", "citationMetadata")


def decode_builtin(key: str, value: Any) -> ToolDefinition:
    """``{"googleSearch": {...}}`` -> ``{"name": "googleSearch", "builtin": {"googleSearch": {...}}}``."""
    return cast(ToolDefinition, builtin_tool(key, {key: builtins.options(key, value)}))


def grounding_of(candidate: Mapping[str, Any]) -> dict[str, Any] | None:
    """The candidate's grounding and citation metadata (the keys it has), None when it has none."""
    found = {key: candidate[key] for key in GROUNDING_KEYS if candidate.get(key)}
    return found or None


def served_grounding(output: Mapping[str, Any]) -> dict[str, Any]:
    """The recorded metadata, to put on the served candidate (empty when none was recorded)."""
    given = output.get("grounding")
    return {key: given[key] for key in GROUNDING_KEYS if key in given} if isinstance(given, dict) else {}
