"""The memoized digest (matcher.digests.PieceDigester) is request_digest, byte for byte, over random histories."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blackbox_mitm.cassette.canonical import canonical_bytes
from blackbox_mitm.cassette.payloads import order_tool_results
from blackbox_mitm.matcher.digests import PieceDigester
from blackbox_mitm.matcher.masks import NO_RULES, CompareRules, Mask
from blackbox_mitm.matcher.normalize import compared_view, request_digest

# The last: adjacent assistant messages compared as one turn (matcher.turns), as a Gemini replay compares them.
RULES = (NO_RULES, CompareRules.build(), CompareRules.build([r"id-[0-9]+"]), replace(CompareRules.build(), one_turn=("assistant",)))

# Texts that hit the built-in masks, the canonical-JSON corner cases (astral / private-use characters, lone
# surrogates), and plain words.
TEXTS = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        [
            "Today's date is 2026-12-01.",
            "cch=3f9a; cc_prompt_id=9b2e-77f0",
            "<usage>tokens: 12</usage> id-42",
            "\ue000\U0001f600",
            "\ud800 lone",
            "plain words",
            "",
        ]
    ),
)
SCALARS = st.one_of(
    TEXTS, st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.none()
)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXTS, inner, max_size=3), max_leaves=8)
TEXT_PART = st.builds(lambda t: {"type": "text", "text": t}, TEXTS)
TOOL_USE = st.builds(
    lambda n, i: {"type": "tool_use", "toolCallId": f"call-{n}", "toolName": "Read", "toolInput": i}, st.integers(0, 3), JSON
)
TOOL_RESULT = st.builds(
    lambda n, r: {"type": "tool_result", "toolCallId": f"call-{n}", "toolName": "Read", "result": r}, st.integers(0, 3), JSON
)
CONTENT = st.one_of(TEXTS, st.lists(st.one_of(TEXT_PART, TOOL_USE, TOOL_RESULT), max_size=4), st.none(), JSON)
MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system"]), "content": CONTENT}, optional={"extra": JSON}),
    JSON,
)
TOOL = st.fixed_dictionaries({"name": TEXTS}, optional={"description": st.one_of(TEXTS, st.none()), "inputSchema": JSON, "other": JSON})
MODEL_INPUT = st.fixed_dictionaries(
    {"messages": st.one_of(st.lists(MESSAGE, max_size=5), st.none(), MESSAGE)},
    optional={
        "model": st.one_of(TEXTS, st.none()),
        "systemPrompt": st.one_of(TEXTS, st.none(), JSON),
        "tools": st.one_of(st.lists(TOOL, max_size=3), st.none()),
        "params": st.one_of(st.dictionaries(st.sampled_from(["temperature", "max_tokens", "topP", "top_p"]), SCALARS), st.none()),
        "other": JSON,
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MODEL_INPUT, st.sampled_from(range(len(RULES))))
def test_the_memoized_digest_is_the_full_digest(model_input: dict[str, Any], which: int) -> None:
    rules = RULES[which]
    digester = PieceDigester(rules)
    assert digester.canonical(model_input) == canonical_bytes(compared_view(model_input, rules))
    assert digester.digest(model_input) == request_digest(model_input, rules)
    assert digester.digest(model_input) == request_digest(model_input, rules)  # again: from the memo


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(MESSAGE, min_size=1, max_size=8), st.lists(TOOL, max_size=3), TEXTS, st.sampled_from(range(len(RULES))))
def test_a_growing_history_hits_the_memo_and_keeps_the_digest(history: list[Any], tools: list[Any], system: str, which: int) -> None:
    """An agent's calls: each re-sends the previous call's history and adds a message."""
    rules = RULES[which]
    digester = PieceDigester(rules)
    for n in range(1, len(history) + 1):
        model_input = {"model": "m", "systemPrompt": system, "messages": history[:n], "tools": tools}
        assert digester.digest(model_input) == request_digest(model_input, rules)
    # A message re-sent by the next call is a hit, unless orjson cannot dump it (a lone surrogate, a huge integer):
    # such a piece is digested the slow, exact way every time and never memoized.
    assert digester.hits > 0 or not any(_memoizable(m) for m in history[:-1])


def _memoizable(piece: Any) -> bool:
    try:
        orjson.dumps(piece)
    except (TypeError, orjson.JSONEncodeError):
        return False
    return True


def test_a_bounded_memo_drops_the_oldest_and_stays_exact() -> None:
    digester = PieceDigester(CompareRules.build(), max_pieces=4)
    for n in range(20):
        model_input = {"messages": [{"role": "user", "content": f"turn {k}"} for k in range(n)]}
        assert digester.digest(model_input) == request_digest(model_input, digester.rules)
    assert len(digester._memo) <= 4


def test_a_mask_change_is_a_different_memo() -> None:
    """The memo belongs to one set of rules: a masked text and the same text unmasked digest apart."""
    model_input = {"messages": [{"role": "user", "content": "run id-7"}]}
    masked = PieceDigester(CompareRules((Mask("ids", r"id-[0-9]+"),)))
    plain = PieceDigester(NO_RULES)
    assert masked.digest(model_input) == request_digest(model_input, masked.rules)
    assert plain.digest(model_input) == request_digest(model_input)
    assert masked.digest(model_input) != plain.digest(model_input)


def test_the_memo_stays_within_its_byte_budget() -> None:
    digester = PieceDigester(CompareRules.build(), max_bytes=4096)
    for n in range(40):
        model_input = {"messages": [{"role": "user", "content": f"turn {k} " + "x" * 100} for k in range(n)]}
        assert digester.digest(model_input) == request_digest(model_input, digester.rules)
        assert digester._bytes == sum(len(k[1]) + len(v) for k, v in digester._memo.items()) <= 4096
    big = {"messages": [{"role": "user", "content": "y" * 1000}]}  # over a sixteenth of the budget: not kept
    assert digester.digest(big) == request_digest(big, digester.rules)
    assert all(b"y" * 1000 not in k[1] for k in digester._memo)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(MESSAGE, max_size=6), min_size=2, max_size=5), st.sampled_from(range(len(RULES))))
def test_a_resumed_history_hash_is_the_full_digest_whatever_came_before(histories: list[list[Any]], which: int) -> None:
    """The history's hash resumes after the previous request's longest same prefix: requests that share none,
    share some, fork from one another or shrink still get request_digest, byte for byte."""
    rules = RULES[which]
    digester = PieceDigester(rules)
    inputs = [{"messages": h} for h in histories]
    inputs += [{"messages": histories[0] + histories[1]}, {"messages": histories[0]}, {"messages": histories[0][:1] + histories[1]}]
    for model_input in inputs + inputs[::-1]:
        assert digester.digest(model_input) == request_digest(model_input, rules)


def test_the_next_call_hashes_only_its_new_messages() -> None:
    digester = PieceDigester(NO_RULES)
    history = [{"role": "user", "content": f"turn {n} " + "x" * 1000} for n in range(6)]
    digester.digest({"messages": history[:5]})
    first_pieces, states = digester._prefix
    digester.digest({"messages": history})
    pieces, after = digester._prefix
    assert all(a is b for a, b in zip(after[:6], states[:6], strict=True))  # the five messages' states reused, not remade
    assert len(after) == 7 and pieces[:5] == first_pieces


def _mapped(value: Any, scalar: Any) -> Any:
    """``value`` with ``scalar`` applied to every scalar (keys kept)."""
    if isinstance(value, dict):
        return {k: _mapped(v, scalar) for k, v in value.items()}
    if isinstance(value, list):
        return [_mapped(v, scalar) for v in value]
    return scalar(value)


def _keys_reversed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _keys_reversed(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_keys_reversed(v) for v in value]
    return value


# What a replay may send for a recorded request: the same, its keys in another order, another day where the built-in
# masks hide it, Python-equal but not JSON-equal (true for 1), or another request altogether.
VARIANTS: tuple[Any, ...] = (
    lambda mi: orjson.loads(orjson.dumps(mi)) if _memoizable(mi) else mi,
    _keys_reversed,
    lambda mi: _mapped(mi, lambda s: s.replace("2026-12-01", "2027-03-09").replace("3f9a", "0b1c") if isinstance(s, str) else s),
    lambda mi: _mapped(mi, lambda s: 1 if s is True else 0 if s is False else s),
    lambda mi: _mapped(mi, lambda s: s + "!" if isinstance(s, str) and s else s),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MODEL_INPUT, st.sampled_from(range(len(RULES))), st.sampled_from(range(len(VARIANTS))), st.one_of(st.none(), MODEL_INPUT))
def test_same_holds_exactly_when_the_digests_are_equal(recorded: dict[str, Any], which: int, variant: int, other: Any) -> None:
    """``PieceDigester.same``, the replay's short cut past both digests, says what comparing the digests says."""
    rules = RULES[which]
    live = VARIANTS[variant](recorded) if other is None else other
    recorded, live = dict(order_tool_results(recorded)), dict(order_tool_results(live))  # as the replay hands them over
    digester = PieceDigester(rules)
    equal = request_digest(recorded, rules) == request_digest(live, rules)
    assert digester.same(recorded, live) is equal
    assert digester.same(recorded, live) is equal  # again: the pieces from the memo
    assert digester.same(live, recorded) is equal


def test_same_tells_true_from_1_and_ignores_what_a_mask_hides() -> None:
    digester = PieceDigester(CompareRules.build())
    recorded = {"systemPrompt": "Today's date is 2026-12-01.", "messages": [{"role": "user", "content": "hi"}], "params": {"x": True}}
    assert digester.same(recorded, {**recorded, "systemPrompt": "Today's date is 2027-01-02."})
    assert not digester.same(recorded, {**recorded, "params": {"x": 1}})
    assert not digester.same(recorded, {**recorded, "messages": [{"role": "user", "content": "hi!"}]})
