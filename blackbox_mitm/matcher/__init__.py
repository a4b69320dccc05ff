"""The matcher: which recorded model call answers a replayed request, and where a request left the path.

Plain Python, no mitmproxy import. One job per module:

* ``normalize`` — the compared view of a model_input and ``request_digest``;
* ``turns`` — adjacent messages compared as one turn, when the agent's codec declares it;
* ``difference`` — ``first_difference`` and the ``Difference`` record;
* ``outcomes`` — what a match answers: ``Served``, ``Divergence``, ``Exhausted``;
* ``pairing`` — ``recorded_calls_of``: a run's model_input steps paired with the model_outputs that answered them;
* ``recorded`` — ``RecordedCalls``: a run's calls, served in strict or sequence mode;
* ``report`` — the end-of-replay ``verdict`` and ``render_report``.
"""

from __future__ import annotations

from blackbox_mitm.matcher.difference import Difference, first_difference
from blackbox_mitm.matcher.normalize import compared_view, request_digest
from blackbox_mitm.matcher.outcomes import Divergence, Exhausted, RecordedCall, Served
from blackbox_mitm.matcher.recorded import MATCH_MODES, MatchMode, RecordedCalls, recorded_calls_of
from blackbox_mitm.matcher.report import VERDICTS, render_report, verdict

__all__ = [
    "MATCH_MODES",
    "VERDICTS",
    "Difference",
    "Divergence",
    "Exhausted",
    "MatchMode",
    "RecordedCall",
    "RecordedCalls",
    "Served",
    "compared_view",
    "first_difference",
    "recorded_calls_of",
    "render_report",
    "request_digest",
    "verdict",
]
