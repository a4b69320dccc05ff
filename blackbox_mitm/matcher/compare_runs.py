"""Two runs compared the way strict replay compares a request: through the masks, not the hashes (``blackbox diff --mask``).

Two recordings of the same agent never have the same hashes (timestamps are
hashed, and masked text differs), so ``cassette.diff`` reports the first step.
``masked_divergence`` instead walks the two runs step by step and asks, for
each pair:

* the step types, in order (a run that ends first diverges there, ``length``);
* a ``model_input``: ``first_difference`` of the two under the rules — the
  compared view, tool results in call order, masked spans ignored; the
  difference (with the mask it involved, if any) is the explanation;
* any other step: its payload with every string masked, compared as
  canonical JSON (``cassette.diff.first_difference`` names the JSON path);
  a ``model_output``'s ``tokens`` and ``reasoning`` are left out (counts and
  signatures change from run to run, and replay never compares them), and so
  are the terminal event's ``exchanges`` and ``media`` seals (each names the run's own file).

Timestamps, step ids and run ids are not compared. ``None`` means the runs are
the same under the rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from blackbox_mitm.cassette.diff import first_difference as first_json_difference
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.matcher.difference import Difference, DifferenceJSON, first_difference
from blackbox_mitm.matcher.masks import CompareRules, map_strings

__all__ = ["MaskedDivergence", "masked_divergence"]


class MaskedDivergenceJSON(TypedDict):
    index: int
    kind: str
    explanation: str
    difference: DifferenceJSON | None


@dataclass(frozen=True, slots=True)
class MaskedDivergence:
    """The first step two runs differ at under the masks: its index, why, and the request difference for a model_input."""

    index: int
    kind: str  # "type", "length", "model_input", "payload"
    explanation: str
    difference: Difference | None = None

    def to_json(self) -> MaskedDivergenceJSON:
        return {
            "index": self.index,
            "kind": self.kind,
            "explanation": self.explanation,
            "difference": None if self.difference is None else self.difference.to_json(),
        }

    def human_lines(self) -> list[str]:
        lines = [f"first difference under the masks at step {self.index}: {self.explanation}"]
        if self.difference is not None:
            for line in self.difference.human_lines()[1:]:
                line = line.replace("  recorded: ", "  a: ", 1).replace("  got:      ", "  b: ", 1)
                lines.append("  " + line.replace("the recording's request has", "a's request has").replace(", the agent's", ", b's"))
        return lines


# An answer's token counts and kept reasoning (its signatures are new every run) are not compared.
_NOT_COMPARED_OUTPUT = ("tokens", "reasoning")


# The terminal event's seal of the run's other HTTP exchanges (cassette/exchanges.py) names the run's own side file
# and its digest: bookkeeping of that recording, not what the agent did (the model steps say that).
_NOT_COMPARED_METADATA = ("exchanges", "media")


def _compared(step_type: str, payload: Any) -> Any:
    left_out = {"model_output": _NOT_COMPARED_OUTPUT, "metadata": _NOT_COMPARED_METADATA}.get(step_type, ())
    if left_out and isinstance(payload, dict) and any(k in payload for k in left_out):
        return {k: v for k, v in payload.items() if k not in left_out}
    return payload


def masked_divergence(a: Trace, b: Trace, rules: CompareRules) -> MaskedDivergence | None:
    """The first step at which ``a`` and ``b`` differ under ``rules`` (see the module docstring), or None."""
    for sa, sb in zip(a.steps, b.steps, strict=False):
        if sa.type != sb.type:
            return MaskedDivergence(sa.index, "type", f"a {sa.type} step in a, a {sb.type} step in b")
        if sa.type == "model_input" and isinstance(sa.payload, dict) and isinstance(sb.payload, dict):
            d = first_difference(sa.payload, sb.payload, rules)
            if d is not None:
                return MaskedDivergence(sa.index, "model_input", d.headline(), d)
            continue
        pa, pb = _compared(sa.type, sa.payload), _compared(sb.type, sb.payload)
        found = first_json_difference(map_strings(pa, rules.mask_text), map_strings(pb, rules.mask_text), "payload")
        if found is not None:
            return MaskedDivergence(sa.index, "payload", f"{sa.type}: {found[1]}")
    if len(a.steps) != len(b.steps):
        n = min(len(a.steps), len(b.steps))
        shorter = "a" if len(a.steps) < len(b.steps) else "b"
        return MaskedDivergence(n, "length", f"{shorter} ends after {n} steps, the other has {max(len(a.steps), len(b.steps))}")
    return None
