"""Redaction before hashing: secrets and personal data replaced in every payload before a step is hashed or written.

A redaction rule is a named regular expression. Recording with rules replaces
every match, in every string of every step payload — model_input (system
prompt, messages, tool inputs and results, tool definitions), model_output,
tool_call, tool_result and the terminal metadata — by the placeholder
``<redacted:NAME>``, before the step is appended to the trace and its
journal. The cassette therefore verifies (its hashes are of the redacted
payloads) and never held the secret.

A replay applies the same rules to each live request's model_input before it
is matched, so a redacted run replays strictly: the live text and the recorded
placeholder meet as the same placeholder. (A replay meeting placeholders with
no redaction configured says so in its divergence report:
``matcher.difference``.)

A rule given without a name (``--redact REGEX``, or a bare string in the
config) is named after its pattern, ``redact-<8 hex digits of its SHA-256>``:
the same pattern makes the same placeholder whether it was given as a flag or
in the config, in any order, at record and at replay.

Object keys are kept as they are (redacting two keys into one would change the
payload's shape); only values are redacted. Rules apply left to right on the
original text, the longest match first at one position, as masks do.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from blackbox_mitm.errors import RedactionError
from blackbox_mitm.matcher.masks import MaskError, compile_rule, rule_spans

__all__ = ["REDACTED_PLACEHOLDER", "Redaction", "RedactionError", "Redactor", "rule_name"]

REDACTED_PLACEHOLDER = "<redacted:{name}>"


def rule_name(pattern: str) -> str:
    """The name of a rule given without one: ``redact-`` and 8 hex digits of its pattern's SHA-256."""
    return "redact-" + hashlib.sha256(pattern.encode("utf-8", "surrogatepass")).hexdigest()[:8]


@dataclass(frozen=True, slots=True)
class Redaction:
    """One redaction rule: a name (in the placeholder), a pattern, and where it came from."""

    name: str
    pattern: str
    source: str = "--redact"
    regex: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            regex = compile_rule(self.pattern, kind="redaction rule", name=self.name, source=self.source)
        except MaskError as exc:
            raise RedactionError(str(exc)) from exc
        object.__setattr__(self, "regex", regex)

    @property
    def placeholder(self) -> str:
        return REDACTED_PLACEHOLDER.format(name=self.name)

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "pattern": self.pattern, "source": self.source}


@dataclass(frozen=True, slots=True)
class Redactor:
    """A set of redaction rules, applied to texts and to whole payloads."""

    rules: tuple[Redaction, ...] = ()

    @classmethod
    def build(cls, patterns: Iterable[str | Redaction] = (), *, source: str = "--redact") -> Redactor:
        """Rules from patterns (named after the pattern, ``rule_name``, unless given as ``Redaction``)."""
        rules: dict[str, Redaction] = {}
        for p in patterns:
            rule = p if isinstance(p, Redaction) else Redaction(rule_name(p), p, source=source)
            same = rules.get(rule.name)
            if same is not None and same.pattern != rule.pattern:
                raise RedactionError(f"two redaction rules are named {rule.name!r}; give each rule its own name")
            rules.setdefault(rule.name, rule)  # the same rule given twice (config and flag) is one rule
        return cls(tuple(rules.values()))

    def __bool__(self) -> bool:
        return bool(self.rules)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rules)

    def text(self, text: str) -> str:
        """``text`` with every match of every rule replaced by that rule's placeholder."""
        if not self.rules:
            return text
        found: list[tuple[int, int, int, Redaction]] = []
        for order, rule in enumerate(self.rules):
            for start, end in rule_spans(rule.regex, text):
                found.append((start, start - end, order, rule))
        if not found:
            return text
        found.sort(key=lambda f: f[:3])
        out, pos = [], 0
        for start, neg_len, _, rule in found:
            if start < pos:
                continue
            out.append(text[pos:start])
            out.append(rule.placeholder)
            pos = start - neg_len
        out.append(text[pos:])
        return "".join(out)

    def payload(self, value: Any) -> Any:
        """``value`` with every string in it redacted (object keys kept). Unchanged parts are the same objects."""
        if not self.rules:
            return value
        return self._walk(value)

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            items = [self._walk(v) for v in value]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        if isinstance(value, Mapping):
            mapped = {k: self._walk(v) for k, v in value.items()}
            return value if all(mapped[k] is value[k] for k in value) else mapped
        return value

    def found_in(self, value: Any) -> bool:
        """Whether any rule matches anywhere in ``value`` (a cheap test before copying)."""
        return self.payload(value) is not value
