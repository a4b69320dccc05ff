"""The one served-id recipe: ids of synthesized answers are derived from their content.

The same answer at the same time is the same bytes, so a replay is reproducible.
``digest`` hashes a key text; ``answer_key`` is the key of a model_output served
at ``created_ms`` (a new codec uses it). The Anthropic and Responses codecs build
their keys their own way, kept so that their served ids stay byte-identical to
the ids earlier versions served.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["SORTED_JSON", "SORTED_JSON_STR", "answer_key", "digest"]


#: ``json.dumps(value, sort_keys=True)``'s encoder, built once: ``answer_key`` runs on every served answer.
SORTED_JSON = json.JSONEncoder(sort_keys=True)
#: The same with ``default=str`` (the Responses codec's served-id digests).
SORTED_JSON_STR = json.JSONEncoder(sort_keys=True, default=str)


def digest(key: str, length: int = 24) -> str:
    """The first ``length`` hex digits of the SHA-256 of ``key`` (a lone surrogate hashed as it is, never written)."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def answer_key(output: Any, created_ms: int) -> str:
    """The key of a model_output served at ``created_ms``: ``"<created_ms>:<its JSON, keys sorted>"``."""
    return f"{created_ms}:{SORTED_JSON.encode(output)}"
