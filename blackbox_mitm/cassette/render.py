"""The text ``blackbox verify`` and ``blackbox diff`` print, as functions: the CLI and ``blackbox mcp`` say the same.

``render_verify`` is one cassette's verdict (``OK FILE (N steps)`` or ``FAIL FILE:
step I: reason`` and, with ``show_all``, every further problem); ``render_diff``
is where two runs part, why, and how each goes on. Files are shown as the caller
names them (``name_a`` / ``name_b``).
"""

from __future__ import annotations

from blackbox_mitm.cassette.diff import Divergence, TailStep
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.cassette.verify import VerifyResult

__all__ = ["render_diff", "render_verify", "steps_text"]


def steps_text(n: int) -> str:
    return f"{n} step{'s' if n != 1 else ''}"


def render_verify(result: VerifyResult, name: str, *, show_all: bool = False, all_hint: str = "--all lists them") -> list[str]:
    """``OK``/``FAIL`` for one verified file, then (with ``show_all``) every other problem, else how many more there are.

    ``all_hint`` says how the caller's user asks for every problem (a library message names no flag of its own)."""
    if result.ok:
        return [f"OK {name} ({steps_text(result.steps)})"]
    lines = [f"FAIL {name}: {result.problems[0]}"]
    if show_all:
        lines.extend(f"  {problem}" for problem in result.problems[1:])
    elif len(result.problems) > 1:
        more = len(result.problems) - 1
        lines.append(f"  (and {more} more problem{'s' if more != 1 else ''}; {all_hint})")
    return lines


def render_diff(
    name_a: str, ta: Trace, name_b: str, tb: Trace, d: Divergence | None, tail: int, *, all_hint: str = "--tail 0 lists them all"
) -> str:
    """Both runs, the first divergence and its explanation, then each side's next ``tail`` steps (0: all; ``all_hint`` says how)."""
    lines = [f"a: {name_a} (run {ta.id}, {steps_text(len(ta.steps))})", f"b: {name_b} (run {tb.id}, {steps_text(len(tb.steps))})"]
    if d is None:
        lines.append(f"identical: the same {steps_text(len(ta.steps))} in both (every hash matches)")
        return "\n".join(lines) + "\n"
    lines.append(f"first divergence at step {d.index} ({d.kind}): {d.explanation}")
    if d.index:
        lines.append(f"steps 0–{d.index - 1} are the same in both runs" if d.index > 1 else "step 0 is the same in both runs")
    for side, rest in (("a", d.tail_a), ("b", d.tail_b)):
        lines.append("")
        if not rest:
            lines.append(f"{side} ends here, after {steps_text(d.index)}")
            continue
        lines.append(f"{side} from step {d.index}:")
        lines.extend(_tail_lines(rest, tail, all_hint))
    return "\n".join(lines) + "\n"


def _tail_lines(rest: list[TailStep], limit: int, all_hint: str) -> list[str]:
    shown = rest if limit <= 0 else rest[:limit]
    width = max(len(t.type) for t in shown)
    number = len(str(shown[-1].index))
    out = [f"  {t.index:>{number}}  {t.type:<{width}}  {t.summary}" for t in shown]
    if len(shown) < len(rest):
        more = len(rest) - len(shown)
        out.append(f"  … and {more} more step{'s' if more != 1 else ''} ({all_hint})")
    return out
