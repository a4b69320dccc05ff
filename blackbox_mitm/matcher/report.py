"""The end-of-replay verdict and its one-screen report, from a ``RecordedCalls.status()`` dict.

Both work from the status alone, so a report written as JSON by one process
(``--set blackbox_report=FILE``) can be judged and printed by another.

Verdicts, first that applies: ``diverged`` (a request was refused), ``overran``
(a request came after every recorded call had been served), ``incomplete``
(a recorded call was never asked for), ``refused`` (a request or answer was
refused, or an answer could not be recorded: the status's ``refused`` /
``unrecorded`` lists name them), ``unmatched`` (in strict mode: an HTTP
request that is not a model call matched no recorded exchange and was refused;
``unmatched_exchanges`` names each), ``ok``. Requests past an ``upto`` cut
(``past_cut_calls``) are the caller's to answer and do not change the verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from blackbox_mitm.matcher.outcomes import Divergence, DivergenceJSON

__all__ = ["INCOMPLETE_LISTED", "VERDICTS", "ReplayCounts", "ReplayStatus", "render_report", "verdict"]


class ReplayCounts(TypedDict):
    """A replay's counts so far (``RecordedCalls.status`` without its verdict)."""

    run: str
    upto: int | None  # the fork's cut: calls past it are the caller's to answer
    model_calls: int
    model_calls_served: int
    steps: int
    steps_served: int
    exhausted_calls: int
    past_cut_calls: int
    incomplete: list[int]  # the model_input steps of the calls never asked for
    out_of_order: int
    divergences: int
    first_divergence: DivergenceJSON | None


class ReplayStatus(ReplayCounts):
    verdict: str  # one of VERDICTS


VERDICTS = ("ok", "diverged", "overran", "incomplete", "refused", "unmatched")
INCOMPLETE_LISTED = 10  # steps named in the report; the rest are counted


def verdict(status: Mapping[str, Any]) -> str:
    """``diverged``, ``overran``, ``incomplete`` or ``ok`` (see the module docstring)."""
    if status.get("divergences"):
        return "diverged"
    if status.get("exhausted_calls"):
        return "overran"
    if status.get("incomplete"):
        return "incomplete"
    if status.get("refused") or status.get("unrecorded"):
        return "refused"
    if status.get("unmatched_exchanges") and status.get("exchanges_strict", True):
        return "unmatched"
    return "ok"


def render_report(status: Mapping[str, Any]) -> str:
    """The replay report for people: counts, the verdict, and the first divergence in full."""
    run = status.get("run", "?")
    outcome = verdict(status)
    lines = [f"replay of recorded run {run}: {outcome} — {_SAYS[outcome]}", *_call_lines(status), *_exchange_lines(status)]
    first = status.get("first_divergence")
    if isinstance(first, Mapping):
        lines.append("")
        lines.append(Divergence.from_json(first, run_id=str(first.get("run", run))).human())
    return "\n".join(lines)


def _call_lines(status: Mapping[str, Any]) -> list[str]:
    """The model calls: served, exhausted, incomplete, out of order, divergences, refused and unrecorded answers."""
    calls = int(status.get("model_calls") or 0)
    served = int(status.get("model_calls_served") or 0)
    exhausted = int(status.get("exhausted_calls") or 0)
    past_cut = int(status.get("past_cut_calls") or 0)
    incomplete = list(status.get("incomplete") or [])
    divergences = int(status.get("divergences") or 0)

    lines = [f"  model calls served: {served} of {calls} ({status.get('steps_served', 0)} of {status.get('steps', 0)} steps)"]
    if status.get("upto") is not None:
        lines.append(f"  served up to step {status['upto']}; calls past the cut: {past_cut}")
    lines.append(f"  exhausted calls: {exhausted}" + (" (asked for after every recorded call had been served)" if exhausted else ""))
    if incomplete:
        shown = ", ".join(str(s) for s in incomplete[:INCOMPLETE_LISTED])
        more = f" and {len(incomplete) - INCOMPLETE_LISTED} more" if len(incomplete) > INCOMPLETE_LISTED else ""
        noun = "call" if len(incomplete) == 1 else "calls"
        lines.append(f"  incomplete: {len(incomplete)} recorded {noun} never asked for (model_input step {shown}{more})")
    else:
        lines.append("  incomplete: none")
    if status.get("out_of_order"):
        lines.append(f"  served out of recorded order (matched by content): {status['out_of_order']}")
    lines.append(f"  divergences: {divergences}")
    for what in ("refused", "unrecorded"):
        items = [str(r) for r in status.get(what) or []]
        if items:
            lines.append(f"  {what}: {len(items)}")
            lines += [f"    {r}" for r in items[:INCOMPLETE_LISTED]]
    return lines


def _exchange_lines(status: Mapping[str, Any]) -> list[str]:
    """The other HTTP exchanges: served, unmatched (refused offline), and the agent's background requests."""
    lines = []
    if status.get("exchanges") is not None:
        lines.append(
            f"  other exchanges served: {status.get('exchanges_served', 0)} (of {status.get('exchanges', 0)} recorded; "
            f"{status.get('exchanges_reused', 0)} repeated, {status.get('exchanges_other_body', 0)} with another body)"
        )
    unmatched = list(status.get("unmatched_exchanges") or [])
    if unmatched:
        lines.append(f"  unmatched exchanges: {len(unmatched)} (refused offline)")
        for u in unmatched[:INCOMPLETE_LISTED]:
            why = f" — {u['why']}" if isinstance(u, Mapping) and u.get("why") else ""
            lines.append(f"    {u.get('method')} {u.get('host')}{u.get('path')}{why}" if isinstance(u, Mapping) else f"    {u}")
    background = [u for u in status.get("background_unmatched") or [] if isinstance(u, Mapping)]
    if background:
        lines.append(
            f"  background requests not in the recording: {len(background)} (refused offline; not a divergence: "
            "the agent makes them on its own timer, and its recorded run ended before it did)"
        )
        lines += [f"    {u.get('method')} {u.get('host')}{u.get('path')} ({u.get('agent')})" for u in background[:INCOMPLETE_LISTED]]
    return lines


_SAYS = {
    "ok": "the agent made exactly the recorded model calls",
    "diverged": "the agent left the recorded path",
    "overran": "the agent made more model calls than the recording holds",
    "incomplete": "the agent stopped before making every recorded model call",
    "refused": "some model calls were refused, or their answers could not be recorded",
    "unmatched": "the agent made HTTP requests the recording does not hold (refused: nothing left the machine)",
}
