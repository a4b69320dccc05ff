"""A divergence that only reorders what the recording had: "the same N items in another order", not a character offset."""

from __future__ import annotations

from blackbox_mitm.cassette import Trace
from blackbox_mitm.cassette.payloads import Message, MessagePart, ModelInput
from blackbox_mitm.matcher import Divergence, RecordedCalls, Served
from blackbox_mitm.matcher.difference import Difference, first_difference
from blackbox_mitm.matcher.reorder import reordering


def note(name: str) -> str:
    return f'<system-reminder>\n<task-notification>\n<summary>Agent "{name}" finished</summary>\n</task-notification>\n</system-reminder>'


def request(*messages: Message) -> ModelInput:
    return {"model": "m", "messages": [{"role": "user", "content": "start"}, *messages], "tools": []}


def test_notifications_in_another_order_are_named_as_such() -> None:
    recorded = request({"role": "user", "content": "\n".join([note("one"), note("two"), note("three")])})
    got = request({"role": "user", "content": "\n".join([note("one"), note("three"), note("two")])})
    d = first_difference(recorded, got)
    assert d is not None and (d.message, d.reordered, d.reordered_items) == (1, 2, "blocks of text")
    assert d.headline() == "message 1 (user): the same 2 items in another order (blocks of text)"
    text = Divergence("run-1", 4, d, "a", "b").human()
    assert "the same 2 items in another order" in text and "at character" not in text
    assert Difference.from_json(d.to_json()) == d


def test_tool_results_and_messages_in_another_order() -> None:
    parts: list[MessagePart] = [{"type": "tool_result", "toolCallId": f"call-{i}", "toolName": "t", "result": str(i)} for i in range(3)]
    d = first_difference(request({"role": "user", "content": parts}), request({"role": "user", "content": parts[::-1]}))
    assert d is not None and (d.reordered, d.reordered_items) == (3, "content parts")
    a: Message = {"role": "user", "content": "A"}
    b: Message = {"role": "user", "content": "B"}
    d = first_difference(request(a, b), request(b, a))
    assert d is not None and (d.message, d.reordered, d.reordered_items) == (1, 2, "messages")


def test_a_real_change_keeps_the_character_offset() -> None:
    recorded = request({"role": "user", "content": "\n".join([note("one"), note("two")])})
    got = request({"role": "user", "content": "\n".join([note("two"), note("uno")])})
    d = first_difference(recorded, got)
    assert d is not None and d.reordered is None
    assert "differs at character" in d.headline()
    assert reordering([{"content": "x"}], [{"content": "x"}], 0) is None  # nothing moved


def test_sequence_mode_serves_concurrent_requests_their_own_answers() -> None:
    # Three overlapping subagent calls recorded in completion order (gamma, beta, alpha), asked for alpha first.
    trace = Trace.new("together-1", created_at=0)
    for name, end in (("gamma", 800), ("beta", 803), ("alpha", 806)):
        trace.append("model_input", request({"role": "user", "content": name}), timestamp=10)
        trace.append("model_output", {"type": "final_answer", "text": f"{name} done"}, timestamp=end)
    trace.append("model_input", request({"role": "user", "content": "after"}), timestamp=900)  # not concurrent: asked later
    trace.append("model_output", {"type": "final_answer", "text": "later"}, timestamp=905)
    rc = RecordedCalls(trace)
    answers = []
    for name in ("alpha", "beta", "gamma", "something else"):
        result = rc.match(request({"role": "user", "content": name}), mode="sequence")
        assert isinstance(result, Served)
        answers.append(result.output["text"])
    assert answers == ["alpha done", "beta done", "gamma done", "later"]
    assert rc.status()["divergences"] == 0


def test_sequence_mode_serves_a_request_the_answer_recorded_for_it_else_the_next() -> None:
    trace = Trace.new("seq-1", created_at=0)
    for i, (content, start) in enumerate((("first", 0), ("again", 20), ("third", 40))):
        trace.append("model_input", request({"role": "user", "content": content}), timestamp=start)
        trace.append("model_output", {"type": "final_answer", "text": f"answer {i}"}, timestamp=start + 5)
    rc = RecordedCalls(trace)
    texts = []
    for content in ("third", "changed", "changed"):
        result = rc.match(request({"role": "user", "content": content}), mode="sequence")
        assert isinstance(result, Served)
        texts.append((result.output["text"], result.matched))
    assert texts == [("answer 2", True), ("answer 0", False), ("answer 1", False)]
