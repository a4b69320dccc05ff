"""Building a replay from settings (session/build.py ``replay_session_from``): the one way the CLI and mitmdump do it."""

from __future__ import annotations

from pathlib import Path

from blackbox_mitm.config import ProjectConfig, effective_settings
from blackbox_mitm.session.build import record_session, replay_session_from


def _empty_run(path: Path) -> Path:
    session = record_session(path, fsync=False)
    assert session.recorder is not None
    session.recorder.finish(path, exit_code=0)
    return path


def test_a_replay_takes_its_match_pace_gap_masks_and_redaction_from_the_settings(tmp_path: Path) -> None:
    found = effective_settings(
        ProjectConfig(), match="sequence", pace="recorded", order_gap="off", masks=["req-[0-9]+"], redact=["tok-[a-z]+"]
    )
    session = replay_session_from(_empty_run(tmp_path / "run.json"), found, None)
    assert session.mode == "replay" and session.match_mode == "sequence"
    assert session.plan.pace == 1.0 and session.plan.order_gap_ms is None
    assert [r.pattern for r in session.privacy.redactor.rules] == ["tok-[a-z]+"]
    assert session.replay is not None and "req-[0-9]+" in [m.pattern for m in session.replay.rules.masks]
    assert session.privacy.env is None  # no live environment given: no substitution


def test_the_defaults_are_replay_sessions_own(tmp_path: Path) -> None:
    found = effective_settings(ProjectConfig())
    session = replay_session_from(_empty_run(tmp_path / "run.json"), found, None)
    assert session.match_mode == "strict" and session.plan.pace is None and session.plan.order_gap_ms == 25
