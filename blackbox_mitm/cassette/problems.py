"""A broken rule of a cassette, as ``verify`` reports it, and how its messages quote values."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, TypedDict

__all__ = ["Problem", "key_path", "quote", "short_digest"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One broken rule: the step it is in (None for the trace itself), a short code, the reason.

    Codes: ``version``, ``format`` (a file the loader refuses), ``index``, ``id``,
    ``type``, ``shape``, ``prev_hash``, ``hash``, ``provider_id``, ``provider_field``,
    ``param``, ``tool_call_id``, ``credential_name``, ``credential``, ``exchanges`` (the exchanges file beside the cassette), ``media`` (the media file).
    """

    step: int | None
    code: str
    reason: str
    where: str | None = None

    def __str__(self) -> str:
        return f"step {self.step}: {self.reason}" if self.step is not None else self.reason

    def to_json(self) -> ProblemJSON:
        return {"step": self.step, "code": self.code, "where": self.where, "reason": self.reason}


class ProblemJSON(TypedDict):
    """A ``Problem`` as ``blackbox verify --json`` writes it."""

    step: int | None
    code: str
    where: str | None
    reason: str


_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def key_path(key: Any) -> str:
    key = str(key)
    return f".{key}" if _IDENT.fullmatch(key) else f"[{quote(key)}]"


def quote(value: Any, limit: int = 60) -> str:
    """A value quoted for a message: JSON-escaped, cut at ``limit``, printable on any terminal."""
    if not isinstance(value, str):
        return "null" if value is None else repr(value)
    text = value if len(value) <= limit else value[: limit - 1] + "…"
    return json.dumps(text, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8")


def short_digest(digest: str | None) -> str:
    return "null" if digest is None else (digest[:12] + "…" if len(digest) > 12 else quote(digest))
