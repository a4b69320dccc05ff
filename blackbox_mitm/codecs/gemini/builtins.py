"""Gemini's built-in tools that are recorded: each is a provider-defined tool definition, compared as sent.

A built-in tool is a ``tools[]`` entry with one key other than
``functionDeclarations``; it becomes ``{"name": key, "builtin": {key: options}}``
(``grounding.decode_builtin``), compared whole in a strict replay. What each
gives back, and where Blackbox keeps it:

* ``googleSearch``, ``googleSearchRetrieval``, ``enterpriseWebSearch`` (Vertex's
  web search, the same shape), ``urlContext``, ``googleMaps`` and ``fileSearch``
  run at Google inside the call and answer with text and the candidate's
  ``groundingMetadata`` (Maps: place chunks and ``googleMapsWidgetContextToken``;
  file search: ``retrievedContext`` chunks naming their ``fileSearchStore``),
  ``urlContextMetadata`` or ``citationMetadata``: model output, kept as the
  answer's ``grounding`` (``grounding``). File search store names
  (``fileSearchStoreNames``) are references, kept as sent and never read.
* ``codeExecution``: the code and its result are parts of the answer (``code_execution``).
* ``computerUse`` (``{environment, excludedPredefinedFunctions}``): the model
  answers ordinary ``functionCall`` parts for its predefined actions
  (``click_at``, ``type_text_at``, ``navigate``, ...) and the client sends
  ``functionResponse`` parts back, usually with a screenshot in their ``parts``
  (``multimodal``): nothing runs at Google, so there is nothing more to keep.

The options of the four built-ins recorded since google-genai 3.3 (``RENAMED``)
are read with camelCase keys whatever the spelling: the SDK sends them in proto
JSON's snake_case (``file_search_store_names``), other clients in camelCase, and
the API takes both. (The older ones are kept exactly as sent, as they always were.)
The options of ``toolConfig.retrievalConfig`` (the user's location for Maps) are
a compared control (``retrievalConfig``). Other built-ins (``mcpServers``,
Vertex's ``retrieval``, third-party search) are refused by name
(``gemini.builtin_tool``): they reach servers or stores Blackbox never sees.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["RENAMED", "TOOLS", "options"]

TOOLS = frozenset(
    {
        "googleSearch",
        "googleSearchRetrieval",
        "enterpriseWebSearch",
        "urlContext",
        "googleMaps",
        "fileSearch",
        "codeExecution",
        "computerUse",
    }
)

RENAMED = frozenset({"fileSearch", "googleMaps", "computerUse", "enterpriseWebSearch"})
_SNAKE = re.compile(r"_([a-z0-9])")


def _camel(value: Any) -> Any:
    if isinstance(value, list):
        return [_camel(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = _SNAKE.sub(lambda m: m.group(1).upper(), key) if isinstance(key, str) else key
        if name not in out or name == key:  # both spellings: the camelCase one wins
            out[name] = _camel(item)
    return out


def options(key: str, value: Any) -> Any:
    """A built-in's options as compared: camelCase keys for ``RENAMED`` ones, as sent for the others."""
    return _camel(value) if key in RENAMED else value
