"""What every codec shares: one JSON module, one refusal table type, one served-id recipe.

``jsonio`` reads and writes bodies (compact, raw UTF-8, never invalid UTF-8);
``refusals`` holds ``Refusal`` and ``RefusalTable`` (each codec's ``REFUSALS``);
``ids`` makes the content-derived ids a synthesized answer carries. Plain Python,
no provider's own facts: those live in each codec package. Two transports shared
by more than one codec are here too: ``eventstream`` (AWS's binary event stream)
and ``aws`` (the hosts, credential names and key variables both Bedrock codecs name as theirs).
"""

from __future__ import annotations

from blackbox_mitm.codecs.common.ids import answer_key, digest
from blackbox_mitm.codecs.common.jsonio import dumps, dumps_bytes, load_object, loads, loads_or_none
from blackbox_mitm.codecs.common.refusals import Refusal, RefusalTable, quote_value

__all__ = [
    "Refusal",
    "RefusalTable",
    "answer_key",
    "digest",
    "dumps",
    "dumps_bytes",
    "load_object",
    "loads",
    "loads_or_none",
    "quote_value",
]
