"""The run plan (session/plan.py): one value says what a run replays, what comes after, what is edited; the mode is read from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.matcher import RecordedCalls
from blackbox_mitm.session.engine import Session
from blackbox_mitm.session.plan import REFUSE, UPSTREAM, Edit, RunPlan, Script


def _calls() -> RecordedCalls:
    return RecordedCalls(Trace.new("plan"))


def test_the_mode_comes_from_the_plan() -> None:
    assert RunPlan(tail=UPSTREAM).mode == "record"
    assert RunPlan(prefix=_calls(), tail=REFUSE).mode == "replay"
    assert RunPlan(prefix=_calls(), tail=UPSTREAM, edit=Edit(3)).mode == "fork"
    assert RunPlan(prefix=_calls(), tail=Script(lambda: {"type": "final_answer", "text": "x"}), edit=Edit(3)).mode == "fork"
    assert Session(RunPlan(prefix=_calls(), tail=REFUSE), run_id="r").mode == "replay"


def test_who_answers_after_the_prefix() -> None:
    assert not RunPlan(tail=UPSTREAM).answers_locally
    assert RunPlan(prefix=_calls(), tail=REFUSE).answers_locally
    assert RunPlan(prefix=_calls(), tail=Script(lambda: {"type": "final_answer", "text": "x"}), edit=Edit(1)).answers_locally
    assert RunPlan(prefix=_calls(), tail=UPSTREAM, edit=Edit(4)).cut == 4


def test_a_plan_that_cannot_be_run_is_refused() -> None:
    with pytest.raises(ValueError, match="edit needs the parent"):
        RunPlan(tail=UPSTREAM, edit=Edit(2))
    with pytest.raises(ValueError, match="unknown match mode"):
        RunPlan(prefix=_calls(), tail=REFUSE, match="fuzzy")


def test_a_session_and_its_recorder_share_one_privacy(tmp_path: Path) -> None:
    from blackbox_mitm.session.build import record_session

    session = record_session(tmp_path / "run.json", fsync=False)
    assert session.recorder is not None and session.privacy is session.recorder.privacy
    session.privacy.learn({"sk-a-credential-0001"})
    assert "sk-a-credential-0001" in session.secrets
    session.recorder.discard()
