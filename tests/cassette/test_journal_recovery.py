"""An interrupted recording's journal becomes a valid cassette ending in run_failed."""

from __future__ import annotations

from pathlib import Path

import pytest
from cassette_builders import weather_trace

from blackbox_mitm.cassette import Journal, Trace, journal_path, load_trace, recover_journal
from blackbox_mitm.codecs.verified import verify_trace
from blackbox_mitm.errors import CassetteError


def _record(cassette: Path, batches: list[int], *, trace_id: str = "rec-1") -> Trace:
    """Journal the weather run's steps in batches of the given sizes, then stop without finishing."""
    source = weather_trace(trace_id)
    trace = Trace.new(trace_id, created_at=source.createdAt)
    journal = Journal(cassette, trace, fsync=False)
    steps = iter(source.steps)
    for size in batches:
        batch = [next(steps) for _ in range(size)]
        journal.append([trace.append(s.type, s.payload, timestamp=s.timestamp) for s in batch])
    journal.close()  # the process dies here: no finish()
    return trace


def test_a_torn_last_write_is_dropped_and_the_run_marked_interrupted(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    _record(cassette, [1, 3, 2])
    jpath = journal_path(cassette)
    raw = jpath.read_bytes()
    jpath.write_bytes(raw[: len(raw) - 40])  # kill -9 in the middle of the last write

    out, count = recover_journal(cassette, quiet=True)
    trace = load_trace(out, recover=False)
    assert count == len(trace.steps) == 5  # batches of 1 and 3, then the marker
    assert [s.type for s in trace.steps] == ["model_input", "model_output", "tool_call", "tool_result", "metadata"]
    end = trace.steps[-1].payload
    assert (end["event"], end["status"], end["reason"]) == ("run_failed", "error", "recording_interrupted")
    assert "1 incomplete write dropped" in end["message"]
    assert verify_trace(trace) == []
    assert not jpath.exists()


def test_complete_batches_are_all_kept(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    recorded = _record(cassette, [1, 3])
    recover_journal(cassette, quiet=True)
    trace = load_trace(cassette, recover=False)
    assert [s.hash for s in trace.steps[:-1]] == [s.hash for s in recorded.steps]
    assert "dropped" not in trace.steps[-1].payload["message"]


def test_a_journal_that_already_ends_the_run_gets_no_second_marker(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    _record(cassette, [1, 3, 3])
    recover_journal(cassette, quiet=True)
    trace = load_trace(cassette, recover=False)
    assert len(trace.steps) == 7 and trace.steps[-1].payload["event"] == "run_completed"


def test_lone_surrogates_survive_the_journal(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    trace = Trace.new("rec-2", created_at=0)
    journal = Journal(cassette, trace, fsync=False)
    journal.append([trace.append("tool_result", {"toolCallId": "call-0", "toolName": "t", "result": "cut \ud83d"}, timestamp=1)])
    journal.close()
    recover_journal(cassette, quiet=True)
    loaded = load_trace(cassette, recover=False)
    assert loaded.steps[0].payload["result"] == "cut \ud83d"
    assert verify_trace(loaded) == []


def test_nothing_to_recover_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="no journal to recover"):
        recover_journal(tmp_path / "run.json", quiet=True)


def test_a_journal_with_an_unreadable_header_is_refused(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    journal_path(cassette).write_bytes(b'{"journal": 1, "trace": {"ver')
    with pytest.raises(CassetteError, match="first line is unreadable"):
        recover_journal(cassette, quiet=True)


def test_a_journal_still_being_written_is_not_recovered(tmp_path: Path) -> None:
    cassette = tmp_path / "live.json"
    trace = Trace.new("live")
    journal = Journal(cassette, trace)
    journal.append([trace.append("model_input", {"messages": [], "tools": []})])
    with pytest.raises(CassetteError, match="still writing"):
        recover_journal(cassette, quiet=True)
    assert journal_path(cassette).exists() and not cassette.exists()
    journal.close()  # the recorder died: its lock is gone
    recover_journal(cassette, quiet=True)
    assert cassette.exists()
