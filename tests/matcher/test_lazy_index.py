"""The recorded calls are digested as matching reaches them: the same answers as digesting every call up front."""

from __future__ import annotations

import copy
import random

import pytest
from matcher_runs import calls_trace, plain_request

from blackbox_mitm.cassette.payloads import ModelInput
from blackbox_mitm.matcher import Divergence, Exhausted, RecordedCalls, Served, request_digest
from blackbox_mitm.matcher.masks import CompareRules


def _digested(recorded: RecordedCalls) -> int:
    return sum(1 for call in recorded.calls if call.digest)


def test_a_new_replay_has_digested_nothing_and_an_in_order_replay_of_the_recorded_requests_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inputs = [plain_request(f"question {i}") for i in range(50)]
    recorded = RecordedCalls(calls_trace(inputs))
    made: list[object] = []

    def digest(model_input: object) -> str:
        made.append(model_input)
        return ""

    monkeypatch.setattr(recorded._digester, "digest_ordered", digest)
    monkeypatch.setattr(recorded._digester, "digest", digest)
    assert _digested(recorded) == 0
    for i, model_input in enumerate(inputs[:10]):
        outcome = recorded.match(copy.deepcopy(model_input))  # the very request, as the agent sends it again
        assert isinstance(outcome, Served) and outcome.call.number == i and outcome.matched and not outcome.out_of_order
    assert made == [] and _digested(recorded) == 0  # neither the requests nor the recorded calls were digested
    assert recorded.status()["model_calls_served"] == 10


def test_an_in_order_replay_differing_only_under_a_mask_digests_nothing_and_an_out_of_order_call_the_calls_up_to_it() -> None:
    rules = CompareRules.build([r"id-[0-9]+"])
    inputs = [plain_request(f"question {i} from id-{i}") for i in range(50)]
    recorded = RecordedCalls(calls_trace(inputs), rules=rules)
    for i in range(10):
        outcome = recorded.match(plain_request(f"question {i} from id-{1000 + i}"))  # differs where the mask hides it
        assert isinstance(outcome, Served) and outcome.call.number == i and outcome.matched
    assert _digested(recorded) == 0
    outcome = recorded.match(plain_request("question 14 from id-7"))  # a later call, asked for first
    assert isinstance(outcome, Served) and outcome.call.number == 14 and outcome.out_of_order
    assert _digested(recorded) == 5  # calls 10 to 14, in recorded order; the ten served before are passed over
    outcome = recorded.match(plain_request("question 10 from id-0"))
    assert isinstance(outcome, Served) and outcome.call.number == 10 and not outcome.out_of_order


def test_a_call_served_before_matching_reached_it_gets_its_digest_when_asked() -> None:
    inputs = [plain_request(f"question {i}") for i in range(5)]
    recorded = RecordedCalls(calls_trace(inputs))
    for i in range(3):
        assert isinstance(recorded.match(inputs[i]), Served)
    assert recorded.calls[1].digest == ""  # served with no digest made
    assert recorded.digest_of(1) == request_digest(inputs[1])
    assert recorded.calls[1].digest == request_digest(inputs[1])
    divergence = recorded.match(plain_request("never recorded"))  # the unserved calls are indexed; the served ones are not
    assert isinstance(divergence, Divergence) and divergence.expected_digest == request_digest(inputs[3])
    assert isinstance(recorded.match(inputs[4]), Served) and isinstance(recorded.match(inputs[3]), Served)
    assert isinstance(recorded.match(inputs[0]), Exhausted)


def test_a_request_matching_a_later_call_digests_up_to_it_and_a_divergence_all() -> None:
    inputs = [plain_request(f"question {i}") for i in range(20)]
    recorded = RecordedCalls(calls_trace(inputs))
    outcome = recorded.match(inputs[7])
    assert isinstance(outcome, Served) and outcome.call.number == 7 and outcome.out_of_order
    assert _digested(recorded) == 8
    divergence = recorded.match(plain_request("never recorded"))
    assert isinstance(divergence, Divergence)
    assert divergence.expected_digest == request_digest(inputs[0])
    assert _digested(recorded) == 20
    assert all(call.digest == request_digest(inputs[call.number]) for call in recorded.calls)


@pytest.mark.parametrize("mode", ["strict", "sequence"])
def test_any_order_of_requests_gets_what_an_index_of_every_call_gives(mode: str) -> None:
    rng = random.Random(28)
    for _ in range(30):
        texts = [f"q{rng.randrange(6)}" for _ in range(12)]  # repeats: identical calls are handed out in recorded order
        inputs = [plain_request(t) for t in texts]
        lazy = RecordedCalls(calls_trace(inputs))
        eager = RecordedCalls(calls_trace(inputs))
        for n in range(len(inputs)):
            eager.digest_of(n)  # every call digested up front: the index as it was built before
        requests = [plain_request(f"q{rng.randrange(7)}") for _ in range(14)]
        for request in requests:
            a, b = lazy.match(request, mode=mode), eager.match(request, mode=mode)
            assert type(a) is type(b)
            if isinstance(a, Served) and isinstance(b, Served):
                assert (a.call.number, a.out_of_order, a.matched) == (b.call.number, b.out_of_order, b.matched)
            elif isinstance(a, Divergence) and isinstance(b, Divergence):
                assert (a.step, a.expected_digest, a.got_digest) == (b.step, b.expected_digest, b.got_digest)
            else:
                assert isinstance(a, Exhausted)
        assert lazy.status() == eager.status()


@pytest.mark.parametrize(("recorded_value", "live_value"), [(True, 1), (1, True), (False, 0), (1.5, 1.5), (2**70, 2**70)])
def test_a_recorded_call_equal_in_python_but_not_in_json_gets_its_own_digest(recorded_value: object, live_value: object) -> None:
    # Python's == holds True == 1: the live request's digest must not be lent to a recorded input that only == equals it.
    recorded_input: ModelInput = {**plain_request("same words"), "params": {"temperature": recorded_value}}
    live_input: ModelInput = {**plain_request("same words"), "params": {"temperature": live_value}}
    recorded = RecordedCalls(calls_trace([recorded_input]))
    outcome = recorded.match(live_input)
    assert recorded.digest_of(0) == request_digest(recorded_input)
    same_json = request_digest(recorded_input) == request_digest(live_input)
    assert same_json is (type(recorded_value) is type(live_value))
    assert isinstance(outcome, Served) is same_json
    if not same_json:
        assert isinstance(outcome, Divergence) and outcome.got_digest == request_digest(live_input)
