"""The release scheduler: which recorded calls overlapped, and the order and separations it keeps.

Every check reads what the scheduler itself scheduled (``ReleaseOrder.releases``:
when each answer was let go, after which predecessor, and the earliest time
the separation allowed), never the wall clock of the test.
"""

from __future__ import annotations

import asyncio
import random
import threading

import pytest

from blackbox_mitm.cassette import Trace
from blackbox_mitm.matcher.recorded import recorded_calls_of
from blackbox_mitm.session.perceived import perceived_order
from blackbox_mitm.session.release import Release, ReleaseOrder, arrival_order, gates, overlaps


def calls(*spans: tuple[int, int], taken_in: bool = True) -> list:  # type: ignore[type-arg]
    """Recorded calls from (request ms, answer ms) spans, in completion order, the way the recorder appends them.

    ``taken_in``: each request carries, as its history, every answer that completed before it arrived (one agent's
    calls, whose answers it acts on); else every call is its own conversation (nothing carries an answer on).
    """
    trace = Trace.new("release-1", created_at=0)
    for i, (start, end) in enumerate(spans):
        history = [{"role": "assistant", "content": f"answer {j}"} for j, (_, done) in enumerate(spans) if taken_in and done <= start]
        messages = [*history, {"role": "user", "content": f"call {i}"}]
        trace.append("model_input", {"messages": messages, "tools": []}, timestamp=start)
        trace.append("model_output", {"type": "final_answer", "text": f"answer {i}"}, timestamp=end)
    return recorded_calls_of(trace)


# Three background subagents asked at once and answered 3 ms apart, between a main call before and one after.
SUBAGENTS = calls((0, 10), (20, 800), (21, 803), (20, 806), (900, 905))


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_overlaps_are_the_earlier_completed_calls_in_flight_when_a_call_was_asked() -> None:
    assert overlaps(SUBAGENTS) == {2: (1,), 3: (1, 2)}
    # One call at a time overlaps nothing; a request in the same millisecond as an answer counts as overlapping.
    assert overlaps(calls((0, 5), (6, 9), (10, 20))) == {}
    assert overlaps(calls((0, 5), (5, 9))) == {1: (0,)}


def test_a_call_that_overlapped_nothing_goes_at_once() -> None:
    order = ReleaseOrder(SUBAGENTS, gap_ms=25, clock=FakeClock())
    assert not order.concerns(0) and not order.concerns(4)
    assert order.concerns(1) and order.concerns(3)
    hold = order.hold(0)
    assert hold.now()
    assert order.releases == [Release(0, 1000.0)]


def test_answers_wait_for_earlier_completed_overlapping_ones_and_keep_the_separation() -> None:
    clock = FakeClock()
    order = ReleaseOrder(SUBAGENTS, gap_ms=25, clock=clock)
    order.arrived(0)  # the main call before them: its request arrived before theirs completed, so it gates them
    alpha, beta, gamma = order.hold(3), order.hold(2), order.hold(1)  # asked for in start order; recorded the other way
    assert not alpha.now() and not beta.now()
    assert gamma.now()
    assert not beta.now()  # 25 ms after gamma at the earliest
    clock.now += 24.9
    assert not beta.now()
    clock.now += 0.1
    assert beta.now()
    clock.now += 30
    assert alpha.now()
    assert order.releases == [
        Release(1, 1000.0, gate=2),
        Release(2, 1025.0, after=1, not_before_ms=1025.0, gate=1),
        Release(3, 1055.0, after=2, not_before_ms=1050.0, gate=1),
    ]


def test_a_predecessor_never_asked_for_is_skipped_after_the_wait() -> None:
    clock = FakeClock()
    order = ReleaseOrder(SUBAGENTS, gap_ms=25, wait_ms=500, gate_wait_ms=500, clock=clock)
    order.arrived(0)
    alpha = order.hold(3)
    beta = order.hold(2)  # gamma (1) is never asked for: the replay took another path
    clock.now += 499
    assert not beta.now()
    clock.now += 1
    assert beta.now()
    assert order.releases[0] == Release(2, 1500.0, skipped=(1,), gate=3, gates_timed_out=(1,))
    assert not alpha.now()  # waits for beta's separation; gamma is not waited for again
    clock.now += 25
    assert alpha.now()
    assert order.releases[1] == Release(3, 1525.0, after=2, not_before_ms=1525.0, skipped=(1,), gate=2)


def test_threads_released_in_the_recorded_order_with_the_requested_separation() -> None:
    # Twelve calls: four groups of three overlapping ones, each group answered in reverse start order.
    spans = []
    for g in range(4):
        base = g * 1000
        spans += [(base + 2, base + 500), (base + 1, base + 501), (base, base + 502)]
    recorded = calls(*spans, (4000, 4010))  # the last call takes the last group's answers in
    order = ReleaseOrder(recorded, gap_ms=15)
    numbers = list(range(len(recorded)))
    random.Random(7).shuffle(numbers)  # asked for in any order, from many threads at once

    def deliver(number: int) -> None:
        hold = order.hold(number)
        if not hold.now():
            hold.wait()

    threads = [threading.Thread(target=deliver, args=(n,)) for n in numbers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    releases = order.releases
    by_call = {r.call: r for r in releases}
    assert sorted(by_call) == sorted(numbers) and len(releases) == len(numbers)
    for call, preds in order.predecessors.items():
        r = by_call[call]
        assert all(by_call[p].at_ms <= r.at_ms for p in preds)  # every earlier-completed overlapping answer went first
        assert r.after == max(preds, key=lambda p: by_call[p].at_ms)
        assert r.not_before_ms == by_call[r.after].at_ms + 15
        assert r.at_ms >= r.not_before_ms  # the separation the scheduler was asked for
    for group in range(4):
        assert [r.call for r in releases if r.call // 3 == group and r.call < 12] == [3 * group, 3 * group + 1, 3 * group + 2]


def test_the_event_loop_waiter_keeps_the_same_order() -> None:
    order = ReleaseOrder(SUBAGENTS, gap_ms=5)
    order.arrived(0)

    async def main() -> list[int]:
        holds = [order.hold(n) for n in (3, 2, 1)]
        done: list[int] = []

        async def one(hold: object) -> None:
            await hold.wait_async()  # type: ignore[attr-defined]
            done.append(hold.number)  # type: ignore[attr-defined]

        await asyncio.wait_for(asyncio.gather(*(one(h) for h in holds)), 30)
        return done

    assert asyncio.run(main()) == [1, 2, 3]
    assert [r.call for r in order.releases] == [1, 2, 3]


def test_wait_stops_when_cancelled() -> None:
    order = ReleaseOrder(SUBAGENTS, gap_ms=5)
    cancel = threading.Event()
    cancel.set()
    assert order.hold(3).wait(cancel) is None
    assert order.releases == []


# Claude Code's shape: a main call starts subagents A and B; A ends at 800, the main loop's turn carrying A's end
# arrives at 802, B ends at 805, and the turn carrying B's end arrives at 905.
NOTIFIED = calls((0, 10), (20, 800), (21, 805), (802, 900), (905, 950))
A, B, TURN_A, TURN_B = 1, 2, 3, 4


def test_gates_are_the_requests_that_arrived_before_an_answer_completed() -> None:
    assert arrival_order(NOTIFIED) == (0, A, B, TURN_A, TURN_B)
    assert overlaps(NOTIFIED) == {B: (A,), TURN_A: (B,)}
    # B waits for the four requests before 805 (its own among them), A for the three before 800.
    assert gates(NOTIFIED, {A, B, TURN_A}) == {A: 3, B: 4, TURN_A: 4}
    # A request in the same millisecond as an answer's end may be its consequence: not a gate.
    assert gates(calls((0, 5), (5, 9)), {0, 1}) == {0: 1, 1: 2}


def test_an_answer_waits_for_the_turn_that_took_the_earlier_end_in() -> None:
    clock = FakeClock()
    order = ReleaseOrder(NOTIFIED, gap_ms=25, clock=clock)
    order.arrived(0)
    a, b = order.hold(A), order.hold(B)
    assert a.now()
    clock.now += 5000  # however long the agent takes over A's end (a loaded machine), B waits for its turn
    assert not b.now()
    turn_a = order.hold(TURN_A)
    assert b.now()  # the separation has long passed: the gate was what held it
    assert not turn_a.now()  # the turn's answer keeps the completion order and the separation after B
    clock.now += 25
    assert turn_a.now()
    assert order.releases == [
        Release(A, 1000.0, gate=B),
        Release(B, 6000.0, after=A, not_before_ms=1025.0, gate=TURN_A),
        Release(TURN_A, 6025.0, after=B, not_before_ms=6025.0, gate=B),
    ]


def test_a_gate_never_seen_is_given_up_after_its_wait_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    order = ReleaseOrder(NOTIFIED, gap_ms=25, gate_wait_ms=2000, clock=clock)
    order.arrived(0)
    a, b = order.hold(A), order.hold(B)
    assert a.now()
    clock.now += 1999
    assert not b.now()
    clock.now += 1
    with caplog.at_level("WARNING", logger="blackbox_mitm.session.release"):
        assert b.now()  # the agent took another path: never a hang
    assert order.releases[-1] == Release(B, 3000.0, after=A, not_before_ms=1025.0, gate=A, gates_timed_out=(TURN_A,))
    assert "call 2's answer waited 2000 ms for the requests of calls 3" in caplog.text


def test_the_event_loop_waiter_is_woken_by_a_gate_request() -> None:
    order = ReleaseOrder(NOTIFIED, gap_ms=1)
    order.arrived(0)

    async def main() -> list[int]:
        a, b = order.hold(A), order.hold(B)
        waiting = asyncio.ensure_future(b.wait_async())
        await a.wait_async()
        await asyncio.sleep(0.05)
        assert not waiting.done()
        order.hold(TURN_A)
        await asyncio.wait_for(waiting, 30)
        return [r.call for r in order.releases]

    assert asyncio.run(main()) == [A, B]
    assert order.releases[-1].gate == TURN_A


def test_an_agent_that_acts_on_each_end_never_deadlocks() -> None:
    # Four subagents end 2 ms apart; after each end the main loop sends a turn (within 1 ms), answered 100 ms later.
    spans = [(0, 10)] + [(20 + i, 800 + 2 * i) for i in range(4)] + [(801 + 2 * i, 900 + 2 * i) for i in range(4)]
    recorded = calls(*spans)
    order = ReleaseOrder(recorded, gap_ms=2, gate_wait_ms=20_000)
    order.arrived(0)
    ended: list[int] = []
    lock = threading.Lock()

    def subagent(number: int) -> None:
        order.hold(number).wait()
        with lock:
            ended.append(number)
            turn = 4 + len(ended)  # the main loop takes in the ends in the order they come
        threading.Thread(target=lambda: order.hold(turn).wait()).start()

    threads = [threading.Thread(target=subagent, args=(n,)) for n in (4, 2, 3, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert ended == [1, 2, 3, 4]
    by_call = {r.call: r for r in order.releases}
    assert all(by_call[n].gates_timed_out == () for n in (1, 2, 3, 4))
    assert [by_call[n].gate for n in (2, 3, 4)] == [5, 6, 7]  # each end waited for the turn that took the previous in


def test_negative_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="0 or more"):
        ReleaseOrder(SUBAGENTS, gap_ms=-1)


def _quoted(order: list[str]) -> list:  # type: ignore[type-arg]
    """Three subagents answered 5 ms apart (gamma, alpha, beta at the proxy), then a turn quoting them in ``order``."""
    trace = Trace.new("release-2", created_at=0)
    spans = [("gamma", 20, 800), ("alpha", 21, 805), ("beta", 22, 810)]
    for name, start, end in spans:
        trace.append("model_input", {"messages": [{"role": "user", "content": f"sub {name}"}], "tools": []}, timestamp=start)
        trace.append("model_output", {"type": "final_answer", "text": f"The word {name} has {len(name)} letters."}, timestamp=end)
    said = " ".join(f"<result>The word {n} has {len(n)} letters.</result>" for n in order)
    trace.append("model_input", {"messages": [{"role": "user", "content": said}], "tools": []}, timestamp=1200)
    trace.append("model_output", {"type": "final_answer", "text": "All done."}, timestamp=1210)
    return recorded_calls_of(trace)


def test_answers_go_in_the_order_the_next_request_quotes_them() -> None:
    # The recorded agent, on a loaded machine, took beta's end first: its turn quotes beta, gamma, alpha.
    recorded = _quoted(["beta", "gamma", "alpha"])
    assert perceived_order(recorded, {0, 1, 2}) == [2, 0, 1, 3]
    order = ReleaseOrder(recorded, gap_ms=25, clock=FakeClock())
    assert order.predecessors == {0: (2,), 1: (0, 2)}
    holds = [order.hold(n) for n in (0, 1, 2)]
    assert not holds[0].now() and not holds[1].now()
    assert holds[2].now()
    assert [r.call for r in order.releases] == [2]


def test_the_clock_order_stays_where_no_request_quotes_the_answers_or_they_are_far_apart() -> None:
    assert perceived_order(_quoted(["gamma", "alpha", "beta"]), {0, 1, 2}) == [0, 1, 2, 3]
    assert perceived_order(SUBAGENTS, {1, 2, 3}) == [0, 1, 2, 3, 4]  # "answer 1" is too short to be a quote
    trace = Trace.new("release-3", created_at=0)
    for name, end in (("alpha", 800), ("beta", 1900)):  # 1.1 s apart: the clock is right
        trace.append("model_input", {"messages": [{"role": "user", "content": f"sub {name}"}], "tools": []}, timestamp=20)
        trace.append("model_output", {"type": "final_answer", "text": f"The word {name} is here."}, timestamp=end)
    trace.append(
        "model_input", {"messages": [{"role": "user", "content": "The word beta is here. The word alpha is here."}]}, timestamp=2000
    )
    trace.append("model_output", {"type": "final_answer", "text": "ok"}, timestamp=2001)
    assert perceived_order(recorded_calls_of(trace), {0, 1}) == [0, 1, 2]


def test_a_request_between_the_ends_keeps_the_clock_order() -> None:
    # A request arriving between the answers may depend on the first: reordering them could make each wait for the other.
    recorded = _quoted(["beta", "gamma", "alpha"])
    trace = Trace.new("release-4", created_at=0)
    for c in recorded[:3]:
        trace.append("model_input", c.input, timestamp=c.input_timestamp)
        trace.append("model_output", c.output, timestamp=c.timestamp)
    trace.append("model_input", {"messages": [{"role": "user", "content": "between"}], "tools": []}, timestamp=807)
    trace.append("model_output", {"type": "final_answer", "text": "noted"}, timestamp=1100)
    trace.append("model_input", recorded[3].input, timestamp=1200)
    trace.append("model_output", recorded[3].output, timestamp=1210)
    assert perceived_order(recorded_calls_of(trace), {0, 1, 2}) == [0, 1, 2, 3, 4]


def test_ends_a_quarter_second_apart_quoted_together_go_in_the_quoted_order() -> None:
    # Measured (Claude Code, load 10): the proxy completed gamma, beta 132 ms later, alpha 262 ms after gamma; the
    # turn quoted beta, gamma, alpha. No request came between the ends: the quote is the order the agent took.
    trace = Trace.new("release-5", created_at=0)
    for name, start, end in (("gamma", 20, 800), ("beta", 21, 932), ("alpha", 22, 1062)):
        trace.append("model_input", {"messages": [{"role": "user", "content": f"sub {name}"}], "tools": []}, timestamp=start)
        trace.append("model_output", {"type": "final_answer", "text": f"The word {name} has {len(name)} letters."}, timestamp=end)
    said = " ".join(f"<result>The word {n} has {len(n)} letters.</result>" for n in ("beta", "gamma", "alpha"))
    trace.append("model_input", {"messages": [{"role": "user", "content": said}], "tools": []}, timestamp=3000)
    trace.append("model_output", {"type": "final_answer", "text": "All done."}, timestamp=3010)
    assert perceived_order(recorded_calls_of(trace), {0, 1, 2}) == [1, 0, 2, 3]


def test_an_answer_asked_for_a_moment_ago_settles_before_it_goes() -> None:
    clock = FakeClock()
    order = ReleaseOrder(SUBAGENTS, gap_ms=25, clock=clock, settle_ms=250)
    order.arrived(0)
    alpha, beta = order.hold(3), order.hold(2)
    clock.now += 300  # alpha and beta have been waiting
    gamma = order.hold(1)  # the first to end, asked for last
    assert not gamma.now()
    clock.now += 249.9
    assert not gamma.now()
    clock.now += 0.1
    assert gamma.now()
    clock.now += 25
    assert beta.now()  # waiting long enough already: the gap after gamma is all it needs
    clock.now += 25
    assert alpha.now()
    assert [(r.call, r.at_ms) for r in order.releases] == [(1, 1550.0), (2, 1575.0), (3, 1600.0)]


def test_independent_conversations_side_by_side_are_never_held() -> None:
    # Eight clients, each its own one-call conversation, asked and answered overlapping (a benchmark's concurrent
    # phase, a batch job): no later request carries any answer, so no order of them can be seen in the recording.
    spans = [(i, 100 + 3 * i) for i in range(8)]
    assert overlaps(calls(*spans, taken_in=False))  # they did overlap
    order = ReleaseOrder(calls(*spans, taken_in=False), gap_ms=25, clock=FakeClock(), settle_ms=250)
    assert not any(order.concerns(n) for n in range(8)) and order.predecessors == {} and order.gates == {}
    # The same spans as one agent's calls (each later request carries the answers before it) are held as before.
    held = ReleaseOrder(calls(*spans, (200, 210)), gap_ms=25, clock=FakeClock(), settle_ms=250)
    assert all(held.concerns(n) for n in range(8)) and held.predecessors[7] == tuple(range(7))


def test_an_answer_is_taken_in_by_its_text_its_tool_call_id_or_its_tool_input() -> None:
    from blackbox_mitm.session.perceived import taken_in

    trace = Trace.new("release-6", created_at=0)
    outputs = [
        {"type": "tool_calls", "calls": [{"toolCallId": "call-7", "toolName": "read", "toolInput": {"path": "a.txt"}}]},
        {"type": "tool_calls", "calls": [{"toolCallId": "x-1", "toolName": "read", "toolInput": {"path": "b.txt"}}]},
        {"type": "final_answer", "text": "nobody sends this on"},
        {"type": "final_answer"},  # nothing to look for: counted as taken in (held, as before)
    ]
    for i, output in enumerate(outputs):
        trace.append("model_input", {"messages": [{"role": "user", "content": f"sub {i}"}], "tools": []}, timestamp=i)
        trace.append("model_output", output, timestamp=100 + i)
    later = [
        {"role": "assistant", "content": [{"type": "tool_use", "toolCallId": "call-7", "toolName": "read", "toolInput": {}}]},
        # The same tool call under another id (a codec that numbers ids per request): its input says it is call 1's.
        {"role": "assistant", "content": [{"type": "tool_use", "toolCallId": "t0", "toolName": "read", "toolInput": {"path": "b.txt"}}]},
    ]
    trace.append("model_input", {"messages": later, "tools": []}, timestamp=200)
    trace.append("model_output", {"type": "final_answer", "text": "done"}, timestamp=210)
    assert taken_in(recorded_calls_of(trace), {0, 1, 2, 3}) == {0, 1, 3}
