"""RecordedCalls: serving a run's model calls in strict and sequence mode, and counting what happened."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest
from matcher_runs import calls_trace, first_request, plain_request, second_request, weather_trace

from blackbox_mitm.cassette import Trace
from blackbox_mitm.matcher import Divergence, Exhausted, RecordedCalls, Served, request_digest
from blackbox_mitm.matcher import recorded as recorded_module
from blackbox_mitm.matcher.difference import first_difference


def served(outcome: Any) -> Served:
    assert isinstance(outcome, Served), outcome
    return outcome


def diverged(outcome: Any) -> Divergence:
    assert isinstance(outcome, Divergence), outcome
    return outcome


def test_pairs_inputs_with_outputs() -> None:
    recorded = RecordedCalls(weather_trace())
    calls = recorded.calls
    assert [(c.number, c.input_step, c.output_step, c.tool_steps_before) for c in calls] == [(0, 0, 1, 0), (1, 4, 5, 2)]
    assert calls[1].output == {"type": "final_answer", "text": "It is raining in Paris, 12°C."}
    assert calls[1].timestamp == 1_006
    assert recorded.digest_of(0) == request_digest(first_request())
    assert recorded.calls[0].digest == request_digest(first_request())  # digested now; call 1 not yet
    assert recorded.calls[1].digest == ""


def test_identical_requests_are_served_in_order() -> None:
    rc = RecordedCalls(weather_trace())
    first = served(rc.match(first_request()))
    assert (first.call.input_step, first.call.output_step, first.out_of_order, first.matched) == (0, 1, False, True)
    assert first.output["type"] == "tool_calls"
    second = served(rc.match(second_request()))
    assert second.call.input_step == 4
    status = rc.status()
    assert status == {
        "run": "weather-7",
        "upto": None,
        "model_calls": 2,
        "model_calls_served": 2,
        "steps": 6,
        "steps_served": 6,
        "exhausted_calls": 0,
        "past_cut_calls": 0,
        "incomplete": [],
        "out_of_order": 0,
        "divergences": 0,
        "first_divergence": None,
        "verdict": "ok",
    }


def test_changed_user_message_diverges_with_the_spec_report() -> None:
    rc = RecordedCalls(weather_trace())
    d = diverged(rc.match(first_request("Lyon")))
    assert d.step == 0
    assert d.difference is not None
    assert d.difference.to_json() == {
        "message": 1,
        "role": "user",
        "field": "content",
        "at_char": 22,
        "recorded": "What's the weather in Paris?",
        "got": "What's the weather in Lyon?",
        "recorded_messages": 2,
        "got_messages": 2,
    }
    assert d.expected_digest == request_digest(first_request())
    assert d.got_digest == request_digest(first_request("Lyon"))
    status = rc.status()
    assert status["divergences"] == 1
    assert status["first_divergence"] == d.to_json()
    assert status["verdict"] == "diverged"
    assert status["incomplete"] == [0, 4]  # a refused request serves nothing


def test_divergence_is_against_the_earliest_unserved_call() -> None:
    rc = RecordedCalls(weather_trace())
    served(rc.match(first_request()))
    d = diverged(rc.match(second_request({"forecast": "sun", "celsius": 24})))
    assert d.step == 4
    assert d.difference is not None
    assert (d.difference.field, d.difference.message, d.difference.at_char) == ("content", 3, 11)


def test_streamed_call_against_a_non_streamed_recording_diverges() -> None:
    rc = RecordedCalls(weather_trace())
    req = first_request()
    req["params"]["stream"] = True
    d = diverged(rc.match(req))
    assert d.difference is not None
    assert (d.difference.field, d.difference.recorded, d.difference.got) == ("params.stream", None, "true")


def test_exhausted_after_every_call_is_served() -> None:
    rc = RecordedCalls(weather_trace())
    served(rc.match(first_request()))
    served(rc.match(second_request()))
    for _ in range(2):
        e = rc.match(second_request())
        assert isinstance(e, Exhausted)
        assert not e.past_cut
        assert (e.served, e.recorded) == (2, 2)
    status = rc.status()
    assert status["exhausted_calls"] == 2
    assert status["verdict"] == "overran"


def test_incomplete_lists_the_calls_never_asked_for() -> None:
    rc = RecordedCalls(calls_trace([plain_request(f"q{i}") for i in range(4)]))
    served(rc.match(plain_request("q0")))
    served(rc.match(plain_request("q2")))
    status = rc.status()
    assert status["incomplete"] == [2, 6]  # model_input steps of calls 1 and 3
    assert status["verdict"] == "incomplete"
    assert status["out_of_order"] == 1


def test_identical_parallel_calls_are_handed_out_in_arrival_order() -> None:
    same = plain_request("look up Paris")
    rc = RecordedCalls(calls_trace([plain_request("start"), same, same, plain_request("end")]))
    served(rc.match(plain_request("start")))
    a = served(rc.match(same))
    b = served(rc.match(same))
    assert (a.call.number, a.output["text"]) == (1, "answer 1")
    assert (b.call.number, b.output["text"]) == (2, "answer 2")
    assert not a.out_of_order and not b.out_of_order
    # A third identical call has no unserved twin left: it diverges against the next call.
    d = diverged(rc.match(same))
    assert d.step == 6
    served(rc.match(plain_request("end")))
    assert rc.status()["verdict"] == "diverged"


def test_an_overlapping_call_arriving_early_is_matched_by_content() -> None:
    # Recorded: the main call (0), then a side call (1). Replayed: the side call arrives first.
    main, side = plain_request("main task"), plain_request("summarize the title")
    rc = RecordedCalls(calls_trace([main, side, plain_request("next")]))
    s = served(rc.match(side))
    assert (s.call.number, s.out_of_order, s.output["text"]) == (1, True, "answer 1")
    m = served(rc.match(main))
    assert (m.call.number, m.out_of_order) == (0, False)
    served(rc.match(plain_request("next")))
    status = rc.status()
    assert (status["out_of_order"], status["divergences"], status["incomplete"], status["verdict"]) == (1, 0, [], "ok")


def test_sequence_mode_serves_in_order_whatever_the_content() -> None:
    rc = RecordedCalls(weather_trace())
    a = served(rc.match({"messages": [{"role": "user", "content": "something else"}], "tools": []}, mode="sequence"))
    b = served(rc.match(second_request(), mode="sequence"))
    assert (a.call.number, a.matched) == (0, False)
    assert (b.call.number, b.matched) == (1, True)
    assert isinstance(rc.match(first_request(), mode="sequence"), Exhausted)
    assert rc.status()["divergences"] == 0


def test_strict_then_sequence_keeps_one_cursor() -> None:
    # A fork: strict up to the edited step, then the recording plays on in order.
    rc = RecordedCalls(calls_trace([plain_request(f"q{i}") for i in range(4)]))
    served(rc.match(plain_request("q1")))  # out of order: call 1 first
    assert served(rc.match(plain_request("zzz"), mode="sequence")).call.number == 0
    assert served(rc.match(plain_request("zzz"), mode="sequence")).call.number == 2
    assert served(rc.match(plain_request("q3"))).call.number == 3
    assert rc.status()["incomplete"] == []


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown match mode 'loose'"):
        RecordedCalls(weather_trace()).match(first_request(), mode="loose")


def test_a_repeated_divergence_is_answered_from_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    compared = []
    original = first_difference  # the function recorded.py imported

    def counting(recorded: Any, got: Any) -> Any:
        compared.append(1)
        return original(recorded, got)

    monkeypatch.setattr(recorded_module, "first_difference", counting)
    rc = RecordedCalls(weather_trace())
    first = diverged(rc.match(first_request("Lyon")))
    again = diverged(rc.match(first_request("Lyon")))
    assert again is first
    assert len(compared) == 1
    other = diverged(rc.match(first_request("Rome")))
    assert len(compared) == 2
    status = rc.status()
    assert status["divergences"] == 3
    assert status["first_divergence"] == first.to_json()
    assert other.difference is not None and other.difference.got == "What's the weather in Rome?"


def test_the_cache_is_per_expected_call() -> None:
    same = plain_request("wrong")
    rc = RecordedCalls(calls_trace([plain_request("a"), plain_request("b")]))
    assert diverged(rc.match(same)).step == 0
    served(rc.match(plain_request("a")))
    assert diverged(rc.match(same)).step == 2


def test_upto_serves_a_prefix_then_says_past_the_cut() -> None:
    trace = weather_trace()
    rc = RecordedCalls(trace, upto=3)  # calls whose model_output is before step 3: only call 0
    assert len(rc) == 1
    served(rc.match(first_request()))
    e = rc.match(second_request())
    assert isinstance(e, Exhausted) and e.past_cut and e.upto == 3
    status = rc.status()
    assert (status["exhausted_calls"], status["past_cut_calls"], status["verdict"]) == (0, 1, "ok")
    # The cut inside a call (its output at or after upto) leaves the call out.
    assert len(RecordedCalls(trace, upto=5)) == 1
    assert len(RecordedCalls(trace, upto=6)) == 2


def test_a_model_input_without_output_is_not_a_call() -> None:
    t = calls_trace([plain_request("a")])
    t.append("model_input", plain_request("b"), timestamp=9)
    t.append("metadata", {"event": "run_failed", "status": "error", "reason": "process_exit", "exitCode": 1}, timestamp=10)
    rc = RecordedCalls(t)
    assert [c.input_step for c in rc.calls] == [0]


def test_steps_served_counts_the_tool_round_a_served_request_carried() -> None:
    rc = RecordedCalls(weather_trace())
    served(rc.match(first_request()))
    assert rc.status()["steps_served"] == 2
    served(rc.match(second_request()))
    assert rc.status()["steps_served"] == 6  # 0, 1, the tool round 2-3, then 4, 5


def test_matching_never_walks_the_recorded_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    class Watched(list[Any]):
        reads = 0

        def __getitem__(self, i: Any) -> Any:
            Watched.reads += 1
            return super().__getitem__(i)

        def __iter__(self) -> Any:
            raise AssertionError("match iterated over every recorded call")

    n = 2_000
    rc = RecordedCalls(calls_trace([plain_request(f"q{i}") for i in range(n)]))
    rc.digest_of(n - 1)  # every recorded call digested (each once, as matching reaches it: tests/matcher/test_lazy_index.py)
    rc._calls = Watched(rc._calls)
    digests = []
    original = rc._digester.digest  # the memoized request digest (matcher.digests)

    def counting(model_input: Any) -> str:
        digests.append(1)
        return original(model_input)

    monkeypatch.setattr(rc._digester, "digest", counting)
    monkeypatch.setattr(rc._digester, "digest_ordered", counting)
    for i in (n - 1, 0, 1, 500):  # out of order, in order, a far one
        served(rc.match(plain_request(f"q{i}")))
    diverged(rc.match(plain_request("nowhere")))
    served(rc.match(plain_request("anything"), mode="sequence"))
    # At most one digest per request: q0 and q1 are the earliest unserved call's very request, served with none.
    assert len(digests) == 4
    assert Watched.reads <= 6 * 3  # a constant number of reads per request, whatever n (one is the look at the earliest unserved call)


def test_thread_safety_smoke() -> None:
    n = 400
    requests = [plain_request(f"q{i}") for i in range(n)]
    rc = RecordedCalls(calls_trace(requests))
    order = list(range(n))
    random.Random(7).shuffle(order)
    results: list[Served] = []
    lock = threading.Lock()
    barrier = threading.Barrier(16)

    def worker(mine: list[int]) -> None:
        barrier.wait()
        for i in mine:
            outcome = served(rc.match(requests[i]))
            assert outcome.call.number == i
            with lock:
                results.append(outcome)

    threads = [threading.Thread(target=worker, args=(order[k::16],)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.call.number for r in results) == list(range(n))
    status = rc.status()
    assert (status["model_calls_served"], status["incomplete"], status["divergences"]) == (n, [], 0)


def test_identical_calls_from_many_threads_are_each_served_once() -> None:
    same = plain_request("same")
    rc = RecordedCalls(calls_trace([same] * 50))
    got: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(10):
            outcome = served(rc.match(same))
            with lock:
                got.append(outcome.call.number)

    threads = [threading.Thread(target=worker) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(50))
    assert isinstance(rc.match(same), Exhausted)


def test_an_empty_recording_is_exhausted_at_once() -> None:
    rc = RecordedCalls(Trace.new("empty", created_at=0))
    assert isinstance(rc.match(first_request()), Exhausted)
    assert rc.status()["verdict"] == "overran"
