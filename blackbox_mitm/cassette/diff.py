"""Where two runs part: the first divergence between two cassettes, found through the hash chain.

Every step's hash covers the previous step's hash, so the first index whose
stored hashes differ is where the runs part (step ids and the traces' own fields
are not hashed: a fork's copied prefix compares equal to its parent's steps).
Only that step's payloads are then compared, to name the first differing JSON
path. The kinds, in the fork listing's vocabulary:

* ``input``: the step's input differs — the steps have different types, or a
  ``model_input`` or ``tool_result`` payload differs (what the model saw), or
  the same step was recorded at a different time;
* ``decision``: same input, different output — a ``model_output``,
  ``tool_call`` or terminal ``metadata`` payload differs;
* ``length``: one run ended while the other went on.

A forked child against its parent therefore reports the fork step: the prefix
is copied verbatim, and the step at the cut holds the replacement.

The stored hashes are only worth comparing when they are right: ``diff_verified``
verifies both cassettes first (hash chain, ids, neutrality) and refuses one that
does not verify (``UnverifiedCassetteError``), so a tampered cassette whose
stored hashes were left stale never compares "identical".
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass
from typing import Any, TypedDict

from blackbox_mitm.cassette.canonical import canonical_bytes, js_number
from blackbox_mitm.cassette.facts import ProviderFacts
from blackbox_mitm.cassette.payloads import json_kind
from blackbox_mitm.cassette.timeline import one_line, summarize_step
from blackbox_mitm.cassette.trace import Trace, TraceStep
from blackbox_mitm.cassette.verify import load_verified

__all__ = [
    "DECISION",
    "INPUT",
    "LENGTH",
    "Divergence",
    "TailStep",
    "VerifiedDiff",
    "diff_verified",
    "first_difference",
    "first_divergence",
]

INPUT = "input"
DECISION = "decision"
LENGTH = "length"

# Step types whose payload is something the run was given, rather than something it decided.
_INPUT_TYPES = frozenset({"model_input", "tool_result"})
_QUOTE = 40


class TailStepJSON(TypedDict):
    index: int
    type: str
    summary: str


class _Sides(TypedDict):
    a: int
    b: int


class _Tails(TypedDict):
    a: list[TailStepJSON]
    b: list[TailStepJSON]


class DivergenceJSON(TypedDict):
    """``blackbox diff --json``'s first divergence: where, why, and each side's remaining steps."""

    index: int
    a: int | None
    b: int | None
    kind: str
    field: str | None
    explanation: str
    steps: _Sides
    tails: _Tails


@dataclass(frozen=True, slots=True)
class TailStep:
    """One remaining step after the divergence: its index, type and one-line summary."""

    index: int
    type: str
    summary: str

    def to_json(self) -> TailStepJSON:
        return {"index": self.index, "type": self.type, "summary": self.summary}


@dataclass(slots=True)
class Divergence:
    """The first step at which ``a`` and ``b`` differ.

    ``field`` is the first differing JSON path (``payload.result.celsius``,
    ``type``, ``timestamp``), None for ``length``. ``tail_a`` / ``tail_b`` are the
    steps of each side from ``index`` on.
    """

    index: int
    kind: str
    explanation: str
    field: str | None
    a_steps: int
    b_steps: int
    tail_a: list[TailStep] = dataclasses.field(default_factory=list)
    tail_b: list[TailStep] = dataclasses.field(default_factory=list)

    def to_json(self) -> DivergenceJSON:
        return {
            "index": self.index,
            "a": self.index if self.index < self.a_steps else None,
            "b": self.index if self.index < self.b_steps else None,
            "kind": self.kind,
            "field": self.field,
            "explanation": self.explanation,
            "steps": {"a": self.a_steps, "b": self.b_steps},
            "tails": {"a": [t.to_json() for t in self.tail_a], "b": [t.to_json() for t in self.tail_b]},
        }


@dataclass(slots=True)
class VerifiedDiff:
    """Two cassettes that both verify, and where they part (None: every step's hash is the same)."""

    a: Trace
    b: Trace
    divergence: Divergence | None


def diff_verified(a_path: str | os.PathLike[str], b_path: str | os.PathLike[str], *, facts: ProviderFacts) -> VerifiedDiff:
    """Load and verify both cassettes, then find their first divergence.

    Raises ``UnverifiedCassetteError`` (a ``CassetteError``) naming the file and its
    first problem when either does not verify, and ``CassetteError`` when one
    cannot be read. Never touches a journal beside either file. ``facts``: what
    ``verify_trace`` checks against (``codecs.verified.diff_verified`` passes the registry's).
    """
    a = load_verified(a_path, facts=facts, recover=False)
    b = load_verified(b_path, facts=facts, recover=False)
    return VerifiedDiff(a, b, first_divergence(a, b))


def first_divergence(a: Trace, b: Trace) -> Divergence | None:
    """The first step where ``a`` and ``b`` differ, or None when every step's hash is the same."""
    common = min(len(a.steps), len(b.steps))
    index = next((i for i in range(common) if a.steps[i].hash != b.steps[i].hash), None)
    if index is None:
        if len(a.steps) == len(b.steps):
            return None
        return _length(a, b, common)
    sa, sb = a.steps[index], b.steps[index]
    kind, where, explanation = _explain(sa, sb)
    if where == "timestamp":
        explanation += _content_note(a, b, index)
    return Divergence(index, kind, explanation, where, len(a.steps), len(b.steps), _tail(a, index), _tail(b, index))


def _length(a: Trace, b: Trace, index: int) -> Divergence:
    shorter, longer = ("a", "b") if len(a.steps) < len(b.steps) else ("b", "a")
    rest = (b if shorter == "a" else a).steps[index:]
    more = f"{len(rest)} more step{'s' if len(rest) != 1 else ''}"
    explanation = (
        f"{shorter} ended after {index} step{'s' if index != 1 else ''} and {longer} goes on with {more}, "
        f"from step {index} ({rest[0].type}): {summarize_step(rest[0], limit=80)}"
    )
    return Divergence(index, LENGTH, explanation, None, len(a.steps), len(b.steps), _tail(a, index), _tail(b, index))


def _explain(sa: TraceStep, sb: TraceStep) -> tuple[str, str, str]:
    """(kind, field, explanation) for two steps at the same index whose hashes differ."""
    i = sa.index
    if sa.type != sb.type:
        return INPUT, "type", f"step {i} is a {_label(sa)} in a and a {_label(sb)} in b: the runs took different paths"
    label = f"step {i} ({_label(sa)})"
    diff = first_difference(sa.payload, sb.payload, "payload")
    if diff is not None:
        where, what = diff
        if sa.type in _INPUT_TYPES:
            return INPUT, where, f"{label}: different input: {what}"
        return DECISION, where, f"{label}: same input, different output: {what}"
    if not _same(sa.timestamp, sb.timestamp):
        return (
            INPUT,
            "timestamp",
            f"{label}: the same payload recorded at a different time ({_num(sa.timestamp)} in a, {_num(sb.timestamp)} in b); "
            "timestamps are hashed, so every later step differs through the chain too",
        )
    if sa.prevHash != sb.prevHash:
        return (
            INPUT,
            "prevHash",
            f"{label}: same content, but prevHash differs after identical steps: a chain is broken (run `blackbox verify`)",
        )
    return INPUT, "hash", f"{label}: same content, but the stored hashes differ: a cassette was altered (run `blackbox verify`)"


def _content_note(a: Trace, b: Trace, start: int) -> str:
    """For runs that differ only in time at first: where their contents part, if they do."""
    for i in range(start, min(len(a.steps), len(b.steps))):
        sa, sb = a.steps[i], b.steps[i]
        if sa.type != sb.type or first_difference(sa.payload, sb.payload, "payload") is not None:
            _, _, explanation = _explain(sa, sb)
            return f". Ignoring time, the runs first differ at {explanation}"
    if len(a.steps) != len(b.steps):
        return f". Ignoring time, the runs are the same until one ends after {min(len(a.steps), len(b.steps))} steps"
    return ". Ignoring time, every step is the same"


def _tail(trace: Trace, index: int) -> list[TailStep]:
    return [TailStep(s.index, s.type, summarize_step(s)) for s in trace.steps[index:]]


def _label(step: TraceStep) -> str:
    name = step.payload.get("toolName") if isinstance(step.payload, dict) and step.type in ("tool_call", "tool_result") else None
    return f"{step.type} {one_line(name, 40)}" if isinstance(name, str) else step.type


# -- the first differing JSON path ----------------------------------------------------


def first_difference(x: Any, y: Any, path: str = "$") -> tuple[str, str] | None:
    """The first place two JSON values differ, as (JSON path, what differs), or None if equal.

    Equality is the canonical form's: ``1`` equals ``1.0``, ``true`` does not equal ``1``,
    object key order does not matter. Objects with different keys are reported at the
    object, naming the keys; otherwise keys are visited in sorted order.
    """
    while True:
        kx, ky = json_kind(x), json_kind(y)
        if kx != ky:
            return path, f"{path} is {kx} in a and {ky} in b ({_show(x)} / {_show(y)})"
        if kx == "an object":
            only_a = [k for k in x if k not in y]
            only_b = [k for k in y if k not in x]
            if only_a or only_b:
                sides = []
                if only_a:
                    sides.append(f"only in a: {_keys(only_a)}")
                if only_b:
                    sides.append(f"only in b: {_keys(only_b)}")
                return path, f"{path} differs ({'; '.join(sides)})"
            key = next((k for k in sorted(x) if not _same(x[k], y[k])), None)
            if key is None:
                return None
            x, y, path = x[key], y[key], path + _key_path(key)
            continue
        if kx == "an array":
            n = next((i for i in range(min(len(x), len(y))) if not _same(x[i], y[i])), None)
            if n is not None:
                x, y, path = x[n], y[n], f"{path}[{n}]"
                continue
            if len(x) != len(y):
                return path, f"{path} has {len(x)} item{'s' if len(x) != 1 else ''} in a and {len(y)} in b"
            return None
        if _same(x, y):
            return None
        if kx == "a string":
            at = next((i for i, (cx, cy) in enumerate(zip(x, y, strict=False)) if cx != cy), min(len(x), len(y)))
            start = max(0, at - 10)
            return path, f"{path} differs at character {at}: {_excerpt(x, start)} in a, {_excerpt(y, start)} in b"
        return path, f"{path} differs: {_show(x)} in a, {_show(y)} in b"


def _same(x: Any, y: Any) -> bool:
    """Equal as the canonical form sees it (numbers as JavaScript writes them, key order ignored); no recursion."""
    if x is y:
        return True
    try:
        return canonical_bytes(x) == canonical_bytes(y)
    except (TypeError, ValueError):
        return bool(x == y)


_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def _key_path(key: str) -> str:
    return f".{key}" if _IDENT.fullmatch(key) else f"[{_show(key)}]"


def _keys(keys: list[str]) -> str:
    shown = ", ".join(one_line(k, 30) for k in keys[:6])
    return shown + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")


def _excerpt(text: str, start: int) -> str:
    piece = ("…" if start else "") + text[start : start + _QUOTE] + ("…" if len(text) > start + _QUOTE else "")
    return _show(piece)


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        text = f"({json_kind(value)} nested too deep to show)"
    return one_line(text, 60)


def _num(n: int | float) -> str:
    return js_number(n)
