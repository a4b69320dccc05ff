"""Lists an agent writes in no fixed order, compared sorted: ``Unordered``, named by an agent profile.

An agent that gathers a list asynchronously (Gemini CLI finds its skills with an
asynchronous glob) may write the same items in another order on every run. An
``Unordered`` rule finds each such list and sorts its items in the compared text
(``CompareRules.mask_text``) and, for the tools it names, the ``enum`` lists of
their input schemas. Nothing is hidden and nothing served changes: the same items
in another order compare equal; an added, missing or changed item still differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from blackbox_mitm.matcher.masks import compile_rule, rule_spans

__all__ = ["Unordered"]


@dataclass(frozen=True, slots=True)
class Unordered:
    """A list an agent writes in no fixed order: in each span ``block`` matches, the ``item`` matches compare sorted.

    Nothing is hidden: the same items in another order compare equal, a changed,
    added or missing item still differs. ``tools``: tools whose input schema's
    ``enum`` lists are the same list (compared sorted too).
    """

    name: str
    block: str  # RE2; its first ``mask…`` group that took part (else the whole match) is the span
    item: str  # RE2: one item of the list
    needs: tuple[str, ...] = ()  # texts holding none of these have no such list (a fast path)
    tools: tuple[str, ...] = ()
    about: str = ""
    block_regex: Any = field(init=False, repr=False, compare=False)
    item_regex: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "block_regex", compile_rule(self.block, kind="mask", name=self.name, source="built-in profile"))
        object.__setattr__(self, "item_regex", compile_rule(self.item, kind="mask", name=self.name, source="built-in profile"))

    def sort_text(self, text: str) -> str:
        """``text`` with the items of each of its lists in sorted order (the text between them kept)."""
        if self.needs and not any(literal in text for literal in self.needs):
            return text
        out, pos = [], 0
        for start, end in rule_spans(self.block_regex, text):
            out.append(text[pos:start])
            out.append(self._sorted(text[start:end]))
            pos = end
        if not out:
            return text
        out.append(text[pos:])
        return "".join(out)

    def _sorted(self, span: str) -> str:
        found = [(start, end) for start, end in rule_spans(self.item_regex, span)]
        items = sorted(span[start:end] for start, end in found)
        out, pos = [], 0
        for (start, end), item in zip(found, items, strict=True):
            out.append(span[pos:start])
            out.append(item)
            pos = end
        out.append(span[pos:])
        return "".join(out)

    def sort_schema(self, value: Any) -> Any:
        """An input schema with each ``enum`` list sorted (by its JSON text, so mixed types sort too)."""
        if isinstance(value, list):
            return [self.sort_schema(v) for v in value]
        if isinstance(value, Mapping):
            return {
                k: sorted(v, key=lambda e: orjson.dumps(e)) if k == "enum" and isinstance(v, list) else self.sort_schema(v)
                for k, v in value.items()
            }
        return value
