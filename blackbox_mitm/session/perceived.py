"""The order an agent took overlapping answers in, as its next request recorded it.

The proxy's clock says when each answer *completed*; what an agent acts on is
the order it *handled* them in, and on a loaded machine two answers that
completed a few milliseconds apart can be handled the other way round — the
recording then holds an agent that saw B end before A. Its next request says
so: Claude Code's turn quotes each subagent's report in the order it took them
in. Replaying in the proxy's completion order would show the agent an order it
never saw in the recording, every time.

``perceived_order`` is the completion order with that corrected: for answers
that completed close together (within ``WINDOW_MS``) and that a later request
quotes (the answer's text, whole, at least ``SHORTEST`` characters), their
places in the completion order are given to them in the order that request
quotes them. Answers no request quotes, far apart in time, or with a request
arriving between their ends (it may depend on the first: the gates of
``release.py`` keep the clock's order there) keep the clock's order. The result
is a total order, so the release rule built on it cannot wait in a circle.

``taken_in`` says which answers a later request carries at all (its text, a
tool call's id or input, in the history or quoted): only those can have shaped
what the agent asked next. Answers no later request carries (independent
conversations run side by side, a side call whose answer the agent shows but
never sends back) leave no trace of the order they were handled in, so the
release rule does not hold them, nor anything for them. An answer with nothing
to look for (no text, no tool call) counts as taken in: unknown is held.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Mapping, Sequence

from blackbox_mitm.matcher.outcomes import RecordedCall

__all__ = ["SHORTEST", "WINDOW_MS", "perceived_order", "taken_in"]

# Answers further apart than this: the clock's order is the agent's. Measured: Claude Code on a 2-core machine at
# load 10 quoted three subagents' ends in one turn as beta, gamma, alpha where the proxy had completed them gamma,
# beta (132 ms later), alpha (262 ms after gamma); a window of 250 ms kept the clock's order and every replay differed.
WINDOW_MS = 1000.0
SHORTEST = 12  # an answer text shorter than this ("Done.") could be quoted by chance
_LOOK_AHEAD = 8  # later requests searched for an answer's text
_PREFIX = 80  # taken_in looks for this much of an answer's text (an agent may quote a long answer cut short)


def _text(call: RecordedCall) -> str | None:
    text = call.output.get("text")
    return text if isinstance(text, str) and len(text) >= SHORTEST else None


def perceived_order(calls: Sequence[RecordedCall], concerned: set[int]) -> list[int]:
    """The call numbers in the order the agent took their answers in (see the module docstring)."""
    order = [c.number for c in calls]
    timed = sorted((float(c.input_timestamp), i) for i, c in enumerate(calls) if c.input_timestamp is not None)
    serialized: dict[int, str] = {}
    quoted: dict[int, list[tuple[int, int]]] = {}  # quoting request's index -> (position of the quote, call index)
    for i, call in enumerate(calls):
        text = _text(call) if call.number in concerned else None
        if text is None:
            continue
        later = [k for t, k in timed if t >= float(call.timestamp) and k != i][:_LOOK_AHEAD]
        for k in later:
            body = serialized.get(k)
            if body is None:
                body = serialized[k] = json.dumps(calls[k].input, ensure_ascii=False)
            at = body.find(json.dumps(text, ensure_ascii=False)[1:-1])
            if at >= 0:
                quoted.setdefault(k, []).append((at, i))
                break
    for group in quoted.values():
        if len(group) < 2:
            continue
        members = sorted(i for _, i in group)
        first, last = float(calls[members[0]].timestamp), float(calls[members[-1]].timestamp)
        if last - first > WINDOW_MS or any(first < t < last for t, _ in timed):
            continue  # far apart, or a request came between them: it may depend on the first (happens-before)
        for slot, (_, i) in zip(members, sorted(group), strict=True):
            order[slot] = calls[i].number
    return order


def _needles(call: RecordedCall) -> list[str]:
    """What a later request carrying ``call``'s answer contains: its text's start, each tool call's id and input."""
    out: list[str] = []
    text = call.output.get("text")
    if isinstance(text, str) and text.strip():
        out.append(json.dumps(text[:_PREFIX], ensure_ascii=False)[1:-1])
    tool_calls = call.output.get("calls")
    for tool_call in tool_calls if isinstance(tool_calls, list) else ():
        if not isinstance(tool_call, Mapping):
            continue
        if tool_call.get("toolCallId") is not None:
            out.append(json.dumps(str(tool_call["toolCallId"]), ensure_ascii=False))
        if tool_call.get("toolInput"):
            out.append(json.dumps(tool_call["toolInput"], ensure_ascii=False))
    return out


def taken_in(calls: Sequence[RecordedCall], candidates: set[int]) -> set[int]:
    """The candidate call numbers whose answer some request arriving after it completed carries (see the docstring).

    Stops at the first request that carries it (an agent's next turn, as a rule): an answer no request carries is
    searched for in every later request, each serialized once.
    """
    timed = sorted((float(c.input_timestamp), k) for k, c in enumerate(calls) if c.input_timestamp is not None)
    starts = [t for t, _ in timed]
    serialized: dict[int, str] = {}
    out: set[int] = set()
    for i, call in enumerate(calls):
        if call.number not in candidates:
            continue
        needles = _needles(call)
        if not needles:
            out.add(call.number)
            continue
        for _, k in timed[bisect.bisect_left(starts, float(call.timestamp)) :]:
            if k == i:
                continue
            body = serialized.get(k)
            if body is None:
                body = serialized[k] = json.dumps(calls[k].input, ensure_ascii=False)
            if any(needle in body for needle in needles):
                out.add(call.number)
                break
    return out
