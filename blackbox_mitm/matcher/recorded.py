"""The recorded model calls of a run, served to a replaying agent in strict or sequence mode.

Built once from a ``Trace``: every model_input step paired with the model_output
that answered it (``matcher.pairing``: outputs pair with pending inputs first-in
first-out; a model_input that no model_output answered is not a call).

Matching one request costs the same whatever the cassette's length: one digest
of the request, one dictionary lookup ``digest -> deque of unserved calls``, and
a cursor on the earliest unserved call that only moves forward. A request that has
the earliest unserved call's digest (the same request, or one differing only where
a mask hides it, as an agent replayed in order sends it) is served by that call
with no digest made at all: compared piece by piece (``PieceDigester.same``), as
every mode would serve it; the digests are most of an agent-sized call's cost. The recorded
calls are digested as matching reaches them, in recorded order, each once, and a
call served that way is passed over undigested: a replay in recorded order digests
none, nor does a replay's start-up (a request that matches no call digests the rest
of the run).

* ``strict``: the request is served by the earliest unserved call with the same
  digest. Identical parallel calls are therefore handed out in the order they
  arrive; a call that overlaps another (a side call sent before the main call it
  was recorded after) is matched by its content and counted in ``out_of_order``.
  A request matching no unserved call is a ``Divergence`` against the earliest
  unserved call, and is not served.
* ``sequence``: the earliest unserved call with this very request is served,
  as in strict mode; when there is none, the earliest unserved call whatever
  the request says. Concurrent requests arrive in any order, so each
  concurrent agent gets its own answer (counted in ``out_of_order``).

With ``rules`` (``masks.CompareRules``) digests and differences are taken on the
masked views: what a mask matches is not compared.

When every call has been served, a request is ``Exhausted``. ``upto=N`` keeps only
the calls whose model_output step is before N (a fork's prefix); a request past
them is ``Exhausted`` with ``past_cut`` and is counted apart from an overrun.

``status()`` counts, for the report:

* ``steps_served``: each served call's model_input and model_output steps, plus
  the tool_call / tool_result steps recorded just before its model_input (the
  tool round whose results that request carried);
* ``exhausted_calls``: requests refused because every recorded call had been
  served (``past_cut_calls`` for the same past an ``upto`` cut);
* ``incomplete``: the model_input step of every call never served;
* ``divergences``: every refused request; the first one's report is kept. The
  same request refused again (same digest, same expected call) is answered
  from a cache without comparing again.

Every method is safe to call from several threads.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Literal

import orjson

from blackbox_mitm.cassette.payloads import ModelInput, order_tool_results, tokens_of
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.matcher.difference import Difference, first_difference
from blackbox_mitm.matcher.digests import PieceDigester
from blackbox_mitm.matcher.masks import NO_RULES, CompareRules
from blackbox_mitm.matcher.outcomes import Divergence, Exhausted, RecordedCall, Served
from blackbox_mitm.matcher.pairing import recorded_calls_of
from blackbox_mitm.matcher.report import ReplayCounts, ReplayStatus, render_report, verdict

__all__ = ["DIVERGENCE_CACHE_SIZE", "HIGH_USAGE_TOKENS", "MATCH_MODES", "MatchMode", "RecordedCalls", "recorded_calls_of"]

MatchMode = Literal["strict", "sequence"]
MATCH_MODES: tuple[str, ...] = ("strict", "sequence")

# Divergences kept for requests refused again. A harness whose every retry differs
# (a timestamp in the prompt) would otherwise grow it without bound.
DIVERGENCE_CACHE_SIZE = 256
# A recorded answer reporting this many tokens (input and output) is "high usage": a divergence right
# after it says so, since agents compact their context (Claude Code, Codex) or stop on budgets near there.
HIGH_USAGE_TOKENS = 100_000


def _identical(recorded: Mapping[str, Any], live: Mapping[str, Any]) -> bool:
    """The same JSON value, types included: Python's ``==`` holds ``True == 1`` and ``1 == 1.0``, JSON does not.

    A shortcut only (a ``False`` costs a digest): the serialized bytes, keys sorted, decide once ``==`` holds;
    a value orjson cannot write (an integer past 64 bits) is not vouched for.
    """
    if recorded != live:
        return False
    try:
        return orjson.dumps(recorded, option=orjson.OPT_SORT_KEYS) == orjson.dumps(live, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return False


class RecordedCalls:
    """The recorded model calls of one run and which of them have been served."""

    def __init__(
        self,
        trace: Trace,
        *,
        upto: int | None = None,
        rules: CompareRules = NO_RULES,
        explain: Callable[[Difference], Difference] | None = None,  # adds a note to a difference (session.env_report)
    ) -> None:
        self.run_id = trace.id
        self.upto = upto
        self.rules = rules
        self.explain = explain
        self._trace = trace
        # One memo of digest pieces for the recorded calls and the live requests (matcher.digests): the same
        # history is not masked and encoded again for every call that repeats it.
        self._digester = PieceDigester(rules)
        # The calls' digests are made as matching needs them, in recorded order (``_index_until``): a replay's start-up
        # does not digest a long run's every call before its first answer, and each call is digested once, as before.
        self._calls: list[RecordedCall] = recorded_calls_of(trace, upto=upto, rules=rules, digests=False)
        self._calls_view: tuple[RecordedCall, ...] | None = None
        self._index: dict[str, deque[int]] = {}
        self._indexed = 0  # calls[:_indexed] have their digest and are in the index
        self._served = [False] * len(self._calls)
        self._next = 0  # every call before it has been served
        self._lock = threading.Lock()
        self._steps_total = sum(2 + c.tool_steps_before for c in self._calls)
        self._calls_served = 0
        self._steps_served = 0
        self._exhausted = 0
        self._past_cut = 0
        self._out_of_order = 0
        self._divergences = 0
        self._first_divergence: Divergence | None = None
        self._divergence_cache: dict[tuple[int, str], Divergence] = {}

    @property
    def calls(self) -> tuple[RecordedCall, ...]:
        """Every recorded call, in recorded order. A call's ``digest`` is ``""`` until matching has needed it
        (``digest_of`` gives it at once)."""
        view = self._calls_view
        if view is None:
            view = self._calls_view = tuple(self._calls)
        return view

    def digest_of(self, number: int) -> str:
        """Call ``number``'s digest (under the current rules), digesting the calls before it first if need be."""
        with self._lock:
            self._index_until(lambda: self._indexed > number)
            call = self._calls[number]
            if not call.digest:  # served before matching reached it (``_serve_if_expected``): made now
                call = self._calls[number] = replace(call, digest=self._digester.digest(call.input))
                self._calls_view = None
            return call.digest

    def __len__(self) -> int:
        return len(self._calls)

    def match(self, model_input: ModelInput, *, mode: MatchMode | str = "strict", ordered: bool = False) -> Served | Divergence | Exhausted:
        """Answer one (normalized) request, a codec's ``model_input``: a served call, a divergence, or exhausted.

        ``mode`` is ``"strict"`` or ``"sequence"`` (anything else is a ValueError). ``ordered``: its tool results
        are in call order already (``cassette.payloads.order_tool_results``, as the session does once per request).
        """
        if mode not in MATCH_MODES:
            raise ValueError(f"unknown match mode {mode!r}; expected one of {', '.join(MATCH_MODES)}")
        live = model_input if ordered else order_tool_results(model_input)
        in_order = self._serve_if_expected(live)
        if in_order is not None:
            return in_order
        # Outside the lock: it is the costly part.
        digest = self._digester.digest_ordered(live)
        with self._lock:
            expected = self._earliest_unserved()
            if expected is None:
                return self._exhausted_now()
            if mode == "sequence":
                self._index_until(lambda: self._indexed > expected)  # the expected call has its digest
                self._index_until(lambda: digest in self._index, (live, digest))  # the earliest such call, if any
                call = self._calls[expected]
                same = self._same_request(digest, call)
                if same is not None:
                    return self._serve(same, expected, matched=True)
                queue = self._index[call.digest]
                # Every earlier call is served, so this one leads its digest's queue.
                queue.popleft()
                if not queue:
                    del self._index[call.digest]
                return self._serve(expected, expected, matched=digest == call.digest)
            self._index_until(lambda: digest in self._index, (live, digest))
            waiting = self._index.get(digest)
            if waiting:
                number = waiting.popleft()
                if not waiting:
                    del self._index[digest]
                return self._serve(number, expected, matched=True)
            return self._diverge(expected, digest, model_input)

    def use_rules(self, rules: CompareRules) -> bool:
        """Compare under ``rules`` from now on (an agent profile's masks); only before any call was matched."""
        with self._lock:
            if self._calls_served or self._divergences or self._exhausted or rules == self.rules:
                return False
            self.rules = rules
            self._digester = PieceDigester(rules)  # a memo is for one set of rules
            self._calls = recorded_calls_of(self._trace, upto=self.upto, rules=rules, digests=False)
            self._calls_view = None
            self._index = {}
            self._indexed = 0
            self._divergence_cache = {}
            return True

    def next_expected(self) -> RecordedCall | None:
        """The earliest recorded call not yet served (None when all have been)."""
        with self._lock:
            n = self._earliest_unserved()
            return None if n is None else self._calls[n]

    def status(self) -> ReplayStatus:
        """The replay's counts so far (see the module docstring); ``verdict`` as ``report.verdict`` gives it."""
        with self._lock:
            counts: ReplayCounts = {
                "run": self.run_id,
                "upto": self.upto,
                "model_calls": len(self._calls),
                "model_calls_served": self._calls_served,
                "steps": self._steps_total,
                "steps_served": self._steps_served,
                "exhausted_calls": self._exhausted,
                "past_cut_calls": self._past_cut,
                "incomplete": [c.input_step for c, served in zip(self._calls, self._served, strict=True) if not served],
                "out_of_order": self._out_of_order,
                "divergences": self._divergences,
                "first_divergence": None if self._first_divergence is None else self._first_divergence.to_json(),
            }
        return {**counts, "verdict": verdict(counts)}

    def report(self) -> str:
        """The end-of-replay report for people (``report.render_report`` of ``status()``)."""
        return render_report(self.status())

    # --- under the lock --------------------------------------------------------------------

    def _index_until(self, done: Callable[[], bool], live: tuple[Mapping[str, Any], str] | None = None) -> None:
        """Digest and index the next calls, in recorded order, until ``done()`` or every call is indexed.

        Every unserved call before ``_indexed`` is in the index and none after it: the earliest unserved
        call with a digest, when the index has one, is the earliest of the whole run. A call served before
        it was reached (``_serve_if_expected``) is passed over, undigested. ``live``: the request being
        matched and its digest — a recorded input equal to it has that digest.
        """
        while self._indexed < len(self._calls) and not done():
            call = self._calls[self._indexed]
            self._indexed += 1
            if self._served[call.number]:
                continue
            digest = live[1] if live is not None and _identical(call.input, live[0]) else self._digester.digest(call.input)
            call = self._calls[call.number] = replace(call, digest=digest)
            self._index.setdefault(call.digest, deque()).append(call.number)
            self._calls_view = None

    def _serve_if_expected(self, live: Mapping[str, Any]) -> Served | None:
        """The earliest unserved call, served, when ``live`` has its digest (``PieceDigester.same``); else None.

        Strict and sequence mode alike would serve it: its digest is the request's, and no unserved call comes
        before it. So neither digest is made: an agent replayed in order sends that call's request, call after
        call, the same or differing only where a mask hides it, and on an agent-sized request the two digests
        are most of a call's cost (issue #28).
        """
        with self._lock:
            expected = self._earliest_unserved()
            if expected is None:
                return None
            recorded = self._calls[expected].input
        if not self._digester.same(order_tool_results(recorded), live):  # outside the lock: the costly part
            return None
        with self._lock:
            if self._earliest_unserved() != expected:
                return None  # another request took it meanwhile: matched the usual way
            if expected < self._indexed:  # in the index: it leads its digest's queue (every earlier call is served)
                digest = self._calls[expected].digest
                queue = self._index[digest]
                queue.remove(expected)
                if not queue:
                    del self._index[digest]
            return self._serve(expected, expected, matched=True)

    def _same_request(self, digest: str, expected: RecordedCall) -> int | None:
        """Sequence mode: the earliest unserved call with this very request, when it is not ``expected`` (taken), else None."""
        waiting = self._index.get(digest)
        if not waiting or waiting[0] == expected.number:
            return None
        number = waiting.popleft()
        if not waiting:
            del self._index[digest]
        return number

    def _earliest_unserved(self) -> int | None:
        while self._next < len(self._served) and self._served[self._next]:
            self._next += 1
        return self._next if self._next < len(self._served) else None

    def _serve(self, number: int, expected: int, *, matched: bool) -> Served:
        self._served[number] = True
        call = self._calls[number]
        self._calls_served += 1
        self._steps_served += 2 + call.tool_steps_before
        out_of_order = number != expected
        if out_of_order:
            self._out_of_order += 1
        return Served(call, out_of_order=out_of_order, matched=matched)

    def _exhausted_now(self) -> Exhausted:
        if self.upto is None:
            self._exhausted += 1
        else:
            self._past_cut += 1
        return Exhausted(self.run_id, self._calls_served, len(self._calls), self.upto)

    def _after_high_usage(self, expected: int, difference: Difference | None) -> Difference | None:
        """The difference, noting when the answer just before it reported high usage (the agent may have compacted)."""
        if difference is None or expected == 0:
            return difference
        before = self._calls[expected - 1]
        given_in, given_out, _, _ = tokens_of(before.output)
        if given_in + given_out < HIGH_USAGE_TOKENS:
            return difference
        note = (
            f"the recorded answer just before (step {before.output_step}) reported high usage ({given_in:,} input and "
            f"{given_out:,} output tokens): an agent that compacts its context or stops on a budget may have decided differently"
        )
        return replace(difference, note=f"{difference.note}; {note}" if difference.note else note)

    def _diverge(self, expected: int, digest: str, model_input: ModelInput) -> Divergence:
        self._divergences += 1
        key = (expected, digest)
        cached = self._divergence_cache.get(key)
        if cached is not None:
            return cached
        call = self._calls[expected]
        difference = (
            first_difference(call.input, model_input, self.rules) if self.rules != NO_RULES else first_difference(call.input, model_input)
        )
        if difference is not None and self.explain is not None:
            difference = self.explain(difference)
        divergence = Divergence(
            run_id=self.run_id,
            step=call.input_step,
            difference=self._after_high_usage(expected, difference),
            expected_digest=call.digest,
            got_digest=digest,
        )
        if len(self._divergence_cache) < DIVERGENCE_CACHE_SIZE:
            self._divergence_cache[key] = divergence
        if self._first_divergence is None:
            self._first_divergence = divergence
        return divergence
