"""The recording path's split by step (benchmarks/record_costs.py): every step measured, on a real record session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.record_costs import overlapping_on_a_loop, record_step_costs  # noqa: E402

pytestmark = [pytest.mark.bench]


def test_every_step_of_a_recorded_call_is_measured_and_the_fsync_is_its_own_row() -> None:
    steps = dict(record_step_costs(n=5, passes=1))
    names = " ".join(steps)
    for step in ("request decode", "answer decode", "placeholders", "redaction", "leak check", "canonical JSON", "hash chain"):
        assert step in names, step
    assert "a line appended (`os.write`)" in steps and any(name.startswith("a line appended + `os.fsync`") for name in steps)
    assert "the whole path, with the fsync" in steps and "the whole path, no fsync (`on_request` + `on_response`)" in steps
    assert all(seconds > 0 for seconds in steps.values())


def test_overlapping_calls_on_a_loop_are_recorded_both_ways_and_each_way_is_measured() -> None:
    figures = overlapping_on_a_loop(clients=4, per_client=2, passes=1)  # raises if a call was not recorded
    for way in ("thread", "awaited"):
        assert figures[f"{way}_cpu_s"] > 0 and figures[f"{way}_wall_s"] > 0
        assert figures[f"{way}_calls_per_fsync"] >= 1
