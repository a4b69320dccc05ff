"""``session.fork``: every ``plan_fork`` refusal, the child session it builds, and the keep-or-discard decision.

Plain Python, no proxy: the parent is the weather run (0 model_input, 1 model_output
get_weather, 2 tool_call, 3 tool_result, 4 model_input, 5 model_output final answer,
6 metadata).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fork_parent import SUN, weather_parent

from blackbox_mitm.cassette.journal import journal_path
from blackbox_mitm.errors import BlackboxError, CassetteExistsError, ForkRefused
from blackbox_mitm.session.fork import NO_EDIT, discard_reason, fork_session, plan_fork
from blackbox_mitm.session.plan import Script

REFUSALS: list[tuple[dict[str, Any], str, tuple[str, ...]]] = [
    ({"at": [99], "tool_result": SUN}, "step 99 is past the run's last step: weather-1 has steps 0..6", ("at",)),
    ({"at": [6], "tool_result": SUN}, "a terminal marker has no continuation", ()),
    ({"at": [1], "tool_result": SUN}, 'so a "tool_result" edit cannot replace it', ("response",)),
    ({"at": [3], "response": {"content": "x"}}, 'so a "response" edit cannot replace it', ("tool_result",)),
    ({"at": [0], "response": "x"}, "step 0 is a model call (its request)", ("at",)),
    ({"at": [3], "tool_result": SUN, "live_after": 1}, "the edit at step 3 is after the live point 1", ("live_after",)),
    ({"at": [3, 3], "tool_result": SUN}, "two edits of step 3", ("at",)),
    ({"at": [3, 5], "tool_result": SUN}, "one edit per fork", ("at",)),
    ({"tool_result": SUN}, "an edit needs the step it replaces", ("at",)),
    ({"at": [3]}, "step 3 is named but no edit is given", ("tool_result", "response", "live_after")),
    ({"live_after": 42}, "the live point 42 is past the run's last step", ("live_after",)),
    ({}, "nothing to fork", ("at", "tool_result", "response", "live_after")),
    ({"live_after": -2}, "the live point -2 is before the run's first step; the lowest is -1", ("live_after",)),
    ({"at": [3], "tool_result": SUN, "live_after": -1}, "the lowest is 0 with an edit", ("live_after",)),
    ({"at": [3], "tool_result": SUN, "response": "x"}, "a tool result or a response, not both", ("tool_result", "response")),
]


@pytest.mark.parametrize(("request_", "says", "options"), REFUSALS)
def test_each_refusal_names_the_problem_and_the_parameters_to_change(request_: dict[str, Any], says: str, options: tuple[str, ...]) -> None:
    with pytest.raises(ForkRefused) as caught:
        plan_fork(weather_parent(), **request_)
    assert says in str(caught.value)
    assert caught.value.options == options
    assert isinstance(caught.value, BlackboxError)


@pytest.mark.parametrize(("request_", "says", "options"), REFUSALS)
def test_no_refusal_quotes_a_command_line_flag(request_: dict[str, Any], says: str, options: tuple[str, ...]) -> None:
    with pytest.raises(ForkRefused) as caught:
        plan_fork(weather_parent(), **request_)
    assert "--" not in str(caught.value) and "--" not in (caught.value.hint or "")


def test_a_wrong_kind_of_edit_says_which_edit_fits_the_step() -> None:
    with pytest.raises(ForkRefused) as at_answer:
        plan_fork(weather_parent(), at=[1], tool_result=SUN)
    assert at_answer.value.hint == "a model answer is edited with a response edit"
    with pytest.raises(ForkRefused) as at_result:
        plan_fork(weather_parent(), at=[3], response="x")
    assert at_result.value.hint == "a tool result is edited with a tool_result edit"


def test_plans_put_the_cut_at_the_edit_or_after_the_live_point() -> None:
    parent = weather_parent()
    tool = plan_fork(parent, at=[3], tool_result=SUN)
    assert (tool.cut, tool.edit_kind, tool.edit_at, tool.edit_value, tool.live_after) == (3, "tool_result", 3, SUN, None)
    answer = plan_fork(parent, at=[5], response="edited", live_after=None)
    assert (answer.cut, answer.edit_kind, answer.edit_at) == (5, "response", 5)
    rewind = plan_fork(parent, live_after=2)
    assert (rewind.cut, rewind.edit_kind, rewind.edit_at) == (3, None, None)
    from_the_start = plan_fork(parent, live_after=-1)  # nothing replayed: a re-recording that names its parent
    assert (from_the_start.cut, from_the_start.edit_kind, from_the_start.live_after) == (0, None, -1)
    assert plan_fork(parent, at=[3], tool_result=None).edit_value is None  # JSON null is an edit; NO_EDIT is none
    assert plan_fork(parent, at=[3], tool_result=SUN, response=NO_EDIT).edit_kind == "tool_result"


def test_an_existing_child_is_refused_without_quoting_a_flag(tmp_path: Path) -> None:
    out = tmp_path / "child.json"
    out.write_text("{}")
    with pytest.raises(CassetteExistsError) as caught:
        fork_session(plan_fork(weather_parent(), at=[3], tool_result=SUN), out, fsync=False)
    assert "already exists" in str(caught.value) and "--" not in str(caught.value)
    assert caught.value.options == ("overwrite",)
    assert out.read_text() == "{}" and not journal_path(out).exists()


def test_the_child_holds_the_prefix_verbatim_then_the_edit(tmp_path: Path) -> None:
    parent = weather_parent()
    session = fork_session(plan_fork(parent, at=[3], tool_result=SUN), tmp_path / "child.json", fsync=False)
    assert session.recorder is not None
    child = session.recorder.trace
    assert [s.hash for s in child.steps[:3]] == [s.hash for s in parent.steps[:3]]
    assert child.steps[3].payload == {"toolCallId": "call-0", "toolName": "get_weather", "result": '{"forecast":"sun","celsius":24}'}
    assert child.steps[3].timestamp == parent.steps[3].timestamp
    assert session.plan.edit is not None and session.plan.edit.tool_result == ("call-0", '{"forecast":"sun","celsius":24}')
    assert session.cut == 3 and child.parentId == parent.id and child.forkedFromStepId == parent.steps[3].id
    session.recorder.discard()


def test_a_scripted_tail_serves_the_answers_then_says_it_ran_out(tmp_path: Path) -> None:
    plan = plan_fork(weather_parent(), at=[3], tool_result=SUN)
    session = fork_session(plan, tmp_path / "child.json", tail="script", script=["Sunny."], fsync=False)
    tail = session.plan.tail
    assert isinstance(tail, Script)
    assert tail.source() == {"type": "final_answer", "text": "Sunny."}
    with pytest.raises(IndexError, match="script of answers ran out"):
        tail.source()
    assert session.recorder is not None
    session.recorder.discard()


def test_discard_reason_keeps_a_child_whose_prefix_re_ran(tmp_path: Path) -> None:
    parent = weather_parent()
    session = fork_session(plan_fork(parent, at=[3], tool_result=SUN), tmp_path / "child.json", fsync=False)
    assert session.replay is not None and session.recorder is not None
    assert session.replay.match(parent.steps[0].payload, mode="strict").__class__.__name__ == "Served"
    assert discard_reason(session) is None
    session.recorder.discard()


def test_discard_reason_names_the_calls_never_re_run(tmp_path: Path) -> None:
    session = fork_session(plan_fork(weather_parent(), at=[5], response="edited"), tmp_path / "child.json", fsync=False)
    reason = discard_reason(session)
    assert reason == ("the agent stopped before re-running (model calls at steps 0, 4 of) the recorded steps before the cut (step 5)")
    assert session.recorder is not None
    session.recorder.discard()


def test_discard_reason_refuses_a_strict_prefix_that_diverged_but_not_a_sequence_one(tmp_path: Path) -> None:
    parent = weather_parent()
    for match, expected in (("strict", "the agent diverged from the recorded steps before the cut (step 3)"), ("sequence", None)):
        session = fork_session(plan_fork(parent, at=[3], tool_result=SUN), tmp_path / f"{match}.json", match=match, fsync=False)
        assert session.replay is not None and session.recorder is not None
        session.replay.match(parent.steps[0].payload, mode="strict")
        session.diverged_in_prefix = True
        assert discard_reason(session) == expected
        session.recorder.discard()
