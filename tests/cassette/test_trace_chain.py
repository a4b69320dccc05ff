"""The hash chain: each step's index, id, prevHash and hash come from the last step alone."""

from __future__ import annotations

from typing import Any

import pytest
from cassette_builders import weather_trace

from blackbox_mitm.cassette import Trace, step_hash
from blackbox_mitm.cassette import canonical as canonical_module


def test_append_chains_each_step_to_the_last() -> None:
    trace = weather_trace("run-7")
    prev = None
    for i, step in enumerate(trace.steps):
        assert step.index == i
        assert step.id == f"run-7:{i}"
        assert step.prevHash == prev
        assert step.hash == step_hash(i, step.type, step.timestamp, step.payload, prev)
        assert len(step.hash) == 64 and int(step.hash, 16) >= 0
        prev = step.hash


def test_the_hash_ignores_the_run_id() -> None:
    a, b = weather_trace("one"), weather_trace("two")
    assert [s.hash for s in a.steps] == [s.hash for s in b.steps]
    assert [s.id for s in a.steps] != [s.id for s in b.steps]


def test_every_hashed_field_changes_the_hash() -> None:
    base = step_hash(1, "tool_result", 5, {"result": 1}, "ab" * 32)
    assert step_hash(2, "tool_result", 5, {"result": 1}, "ab" * 32) != base
    assert step_hash(1, "tool_call", 5, {"result": 1}, "ab" * 32) != base
    assert step_hash(1, "tool_result", 6, {"result": 1}, "ab" * 32) != base
    assert step_hash(1, "tool_result", 5, {"result": 2}, "ab" * 32) != base
    assert step_hash(1, "tool_result", 5, {"result": 1}, "cd" * 32) != base
    assert step_hash(1, "tool_result", 5, {"result": 1}, None) != base


class _Unserializable:
    """A payload whose serialization fails: any attempt to re-serialize it raises."""


def test_append_never_serializes_earlier_steps() -> None:
    trace = weather_trace()
    trace.steps[0].payload = _Unserializable()
    trace.steps[3].payload = {"result": _Unserializable()}
    step = trace.append("metadata", {"event": "marker"})  # would raise if it touched step 0 or 3
    assert step.prevHash == trace.steps[-2].hash


def test_append_serializes_only_the_new_payload(monkeypatch: pytest.MonkeyPatch) -> None:
    serialized: list[Any] = []
    real = canonical_module.canonical_bytes

    def counting(value: Any) -> bytes:
        serialized.append(value)
        return real(value)

    monkeypatch.setattr(canonical_module, "canonical_bytes", counting)
    trace = Trace.new("long", created_at=0)
    for n in range(200):
        trace.append("tool_result", {"toolCallId": f"call-{n}", "toolName": "t", "result": n}, timestamp=n)
    assert len(serialized) == 200
    assert [p["result"] for p in serialized] == list(range(200))


def test_append_refuses_an_unknown_step_type() -> None:
    with pytest.raises(ValueError, match="unknown step type 'thought'"):
        Trace.new("x").append("thought", {})


def test_adopt_copies_a_parent_prefix_verbatim() -> None:
    parent = weather_trace("parent")
    child = Trace.new("child", parent_id="parent", forked_from_step_id="parent:3")
    for step in parent.steps[:3]:
        copied = child.adopt(step)
        assert (copied.hash, copied.prevHash, copied.timestamp, copied.payload) == (step.hash, step.prevHash, step.timestamp, step.payload)
        assert copied.id == f"child:{step.index}"
    nxt = child.append(
        "tool_result", {"toolCallId": "call-0", "toolName": "get_weather", "result": "sun"}, timestamp=parent.steps[3].timestamp
    )
    assert nxt.prevHash == parent.steps[2].hash
    with pytest.raises(ValueError, match="cannot be copied to position"):
        child.adopt(parent.steps[6])
