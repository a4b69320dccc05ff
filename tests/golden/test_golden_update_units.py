"""golden.update without a proxy: where a rewind starts, the CI guard, and how a new golden takes the old one's place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from blackbox_mitm.cassette import Trace
from blackbox_mitm.cassette.store import save_trace
from blackbox_mitm.golden.runner import GoldenResult
from blackbox_mitm.golden.suite import GoldenCase, collect
from blackbox_mitm.golden.update import HISTORY, install, rewind_point, update_golden, update_line, update_refusal

MESSAGES = [{"role": "user", "content": "weather?"}]
CALL = {"type": "tool_calls", "calls": [{"toolCallId": "call-1", "toolName": "get_weather", "toolInput": {"city": "Paris"}}]}


def weather_run(run_id: str = "paris-1", final: str = "cloudy") -> Trace:
    """model_input 0, model_output 1 (a tool call), tool_call 2, tool_result 3, model_input 4, model_output 5, metadata 6."""
    trace = Trace.new(run_id, created_at=0)
    trace.append("model_input", {"model": "m", "messages": MESSAGES}, timestamp=1)
    trace.append("model_output", CALL, timestamp=2)
    trace.append("tool_call", {"toolCallId": "call-1", "toolName": "get_weather", "toolInput": {"city": "Paris"}}, timestamp=3)
    trace.append("tool_result", {"toolCallId": "call-1", "toolName": "get_weather", "result": final}, timestamp=3)
    trace.append("model_input", {"model": "m", "messages": [*MESSAGES, {"role": "tool", "content": final}]}, timestamp=4)
    trace.append("model_output", {"type": "final_answer", "text": final}, timestamp=5)
    trace.append("metadata", {"event": "run_completed", "exitCode": 0}, timestamp=6)
    return trace


@pytest.mark.parametrize(
    ("status", "point"),
    [
        ({"first_divergence": {"step": 4}, "incomplete": [4]}, 1),  # the second call diverged: the tool round is re-run live
        ({"first_divergence": {"step": 0}, "incomplete": [0, 4]}, -1),  # the first call diverged: all live
        ({"incomplete": [4]}, 1),  # it stopped before the second call
        ({"incomplete": [], "exhausted_calls": 1}, 5),  # an overrun: every recorded call replayed, the extra one live
        (None, 5),
    ],
)
def test_the_rewind_point_is_the_answer_before_the_first_call_not_made_as_recorded(status: dict[str, Any] | None, point: int) -> None:
    assert rewind_point(weather_run(), status) == point


def test_updating_is_refused_with_ci_set_unless_asked_for_as_ci() -> None:
    assert update_refusal(None, {"CI": "1"}) is None  # no update asked for
    assert update_refusal("divergent", {}) is None
    assert update_refusal("ci", {"CI": "true"}) is None
    refusal = update_refusal("divergent", {"CI": "true"})
    assert refusal is not None and "--update=ci" in refusal


def test_install_keeps_the_old_golden_in_the_history_and_the_suite_sees_only_the_new(tmp_path: Path) -> None:
    goldens = tmp_path / "goldens"
    goldens.mkdir()
    old = weather_run()
    golden = save_trace(old, goldens / "paris.json")
    old_bytes = golden.read_bytes()
    child = Trace.new("paris-2", created_at=0, parent_id=old.id, forked_from_step_id=old.steps[2].id)
    new_file = save_trace(child, tmp_path / "child.json")

    kept, dest = install(golden, old, new_file)

    assert kept == goldens / HISTORY / "paris.paris-1.json" and kept.read_bytes() == old_bytes
    assert dest == golden and dest.read_bytes() == new_file.read_bytes()
    assert [c.name for c in collect(goldens)] == ["paris"]  # .history is not part of the suite
    assert sorted(p.name for p in goldens.iterdir()) == [HISTORY, "paris.json"]  # no staged file left


def test_a_passing_golden_is_kept_and_a_failure_other_than_a_new_path_is_not_rerecorded(tmp_path: Path) -> None:
    path = save_trace(weather_run(), tmp_path / "paris.json")
    before = path.read_bytes()
    case = GoldenCase(path=path, name="paris", run="paris-1")
    kept = update_golden(GoldenResult(case, "passed"), ["true"])
    timed_out = update_golden(GoldenResult(case, "failure", "timeout", "the command did not finish"), ["true"])
    assert kept.outcome == "kept"
    assert timed_out.outcome == "failed" and "timeout" in timed_out.message and "took another path" in timed_out.message
    assert path.read_bytes() == before and not (tmp_path / HISTORY).exists()
    assert update_line([kept, timed_out]) == "2 goldens: 1 passed and left as they were, 0 updated, 1 not updated"


@pytest.mark.parametrize(
    ("args", "update", "command"),
    [
        (["--update", "--", "python", "agent.py"], "divergent", ("python", "agent.py")),
        (["--update", "python", "agent.py"], "divergent", ("python", "agent.py")),  # the value is never the next word
        (["--update=ci", "--", "python"], "ci", ("python",)),
        (["--", "python"], None, ("python",)),
    ],
)
def test_update_takes_its_value_only_after_an_equals_sign(args: list[str], update: str | None, command: tuple[str, ...]) -> None:
    from blackbox_mitm.cli.golden_commands import test_command

    ctx = test_command.make_context("test", list(args))
    assert ctx.params["update"] == update and ctx.params["command"] == command
