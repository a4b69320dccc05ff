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
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from blackbox_mitm.matcher.outcomes import RecordedCall

__all__ = ["SHORTEST", "WINDOW_MS", "perceived_order"]

# Answers further apart than this: the clock's order is the agent's. Measured: Claude Code on a 2-core machine at
# load 10 quoted three subagents' ends in one turn as beta, gamma, alpha where the proxy had completed them gamma,
# beta (132 ms later), alpha (262 ms after gamma); a window of 250 ms kept the clock's order and every replay differed.
WINDOW_MS = 1000.0
SHORTEST = 12  # an answer text shorter than this ("Done.") could be quoted by chance
_LOOK_AHEAD = 8  # later requests searched for an answer's text


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
