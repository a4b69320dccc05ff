"""Refused fields, as data: ``Refusal`` rows and the ``RefusalTable`` each codec keeps its rows in.

A codec never writes a refusal's reason itself: it calls ``REFUSALS.refuse(row_id,
field, value)`` with the JSON path of the offending field, and the reason comes
from its table. Every message has one format, ``field: reason (it was VALUE)``,
the value shown as JSON and shortened to ``VALUE_CHARS``. ``malformed`` is the
same error for a body the codec cannot read at all. The tests read the same
tables (one parametrized case per row), and ``docs/gen_refusals.py`` prints them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NoReturn

from blackbox_mitm.errors import BlackboxUnsupportedError

__all__ = ["VALUE_CHARS", "Refusal", "RefusalTable", "quote_value"]

VALUE_CHARS = 80
_UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class Refusal:
    id: str
    provider: str  # the codec's PROVIDER
    side: str  # "request" | "response" | "path"
    what: str  # the limitations page's wording
    reason: str


def quote_value(value: Any) -> str:
    """A refused value as JSON, shortened: what the message names besides the field."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


@dataclass(frozen=True, slots=True)
class RefusalTable:
    """One codec's refusal rows, and the errors it raises from them.

    ``reads`` names the bodies the codec reads, for ``malformed``: ``"a
    chat.completions body"``.
    """

    provider: str
    rows: tuple[Refusal, ...]
    reads: str = "a body"
    _by_id: dict[str, Refusal] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_id: dict[str, Refusal] = {}
        for r in self.rows:
            if r.id in by_id:
                raise ValueError(f"refusal row {r.id!r} is defined twice")
            by_id[r.id] = r
        object.__setattr__(self, "_by_id", by_id)

    def __iter__(self) -> Iterator[Refusal]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __contains__(self, item: object) -> bool:
        return item in self.rows

    def row(self, row_id: str) -> Refusal:
        return self._by_id[row_id]

    def refuse(self, row_id: str, field: str, value: Any = _UNSET) -> NoReturn:
        """Raise the BlackboxUnsupportedError of row ``row_id`` for ``field`` (a JSON path), naming ``value`` when given."""
        r = self._by_id[row_id]
        shown = None if value is _UNSET else quote_value(value)
        raise BlackboxUnsupportedError(field, r.reason, provider=self.provider, value=shown)

    def malformed(self, field: str, what: str) -> NoReturn:
        """Raise the BlackboxUnsupportedError for a body the codec cannot read: ``what`` is wrong at ``field``."""
        raise BlackboxUnsupportedError(field, f"{what}; not {self.reads} Blackbox can read", provider=self.provider)
