"""Two recorders on one cassette: the second is told the first is live, and neither touches the other's files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cassette_builders import weather_trace

from blackbox_mitm.cassette import Journal, Trace, journal_path, load_trace, recover_journal, save_trace
from blackbox_mitm.codecs.verified import verify_trace
from blackbox_mitm.errors import CassetteError, CassetteExistsError


def _start(cassette: Path, run_id: str, *, overwrite: bool = False, steps: int = 2) -> Journal:
    """A recording under way: its journal holds the weather run's first ``steps`` steps."""
    source = weather_trace(run_id)
    trace = Trace.new(run_id, created_at=source.createdAt)
    journal = Journal(cassette, trace, overwrite=overwrite, fsync=False)
    for s in source.steps[:steps]:
        journal.append([trace.append(s.type, s.payload, timestamp=s.timestamp)])
    return journal


def _end(journal: Journal) -> Path:
    journal.trace.append("metadata", {"event": "run_completed", "status": "success", "result": ""})
    return journal.finish()


def test_a_second_recorder_is_told_the_recording_is_live(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    first = _start(cassette, "first-run")
    before = journal_path(cassette).read_bytes()
    with pytest.raises(CassetteError) as caught:
        Journal(cassette, Trace.new("second-run"), fsync=False)
    message = str(caught.value)
    assert "live" in message and "first-run" in message and f"process {os.getpid()}" in message
    assert "recover" not in message and "delete" not in message.replace("do not delete", "")
    assert journal_path(cassette).read_bytes() == before  # untouched
    _end(first)
    assert [s.type for s in load_trace(cassette, recover=False).steps][-1] == "metadata"


def test_an_interrupted_journal_still_gets_the_recover_advice(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    _start(cassette, "dead-run").close()  # the recorder died: its lock is gone
    with pytest.raises(CassetteError, match=r"interrupted recording's journal is here .*blackbox recover"):
        Journal(cassette, Trace.new("second-run"), fsync=False)


def test_the_first_recorder_finishing_never_deletes_the_second_ones_journal(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    first = _start(cassette, "first-run")
    journal_path(cassette).unlink()  # someone deleted the live journal anyway
    second = _start(cassette, "second-run", steps=4)
    second_journal = journal_path(cassette).read_bytes()

    assert _end(first) == cassette  # nothing was there: the first run takes the name
    assert journal_path(cassette).read_bytes() == second_journal  # the second recorder's journal is intact

    # The second run finds a cassette it may not replace: saved beside it, nothing lost.
    out = _end(second)
    assert out == tmp_path / "run.second-run.json"
    assert not journal_path(cassette).exists()
    first_trace, second_trace = load_trace(cassette, recover=False), load_trace(out, recover=False)
    assert (first_trace.id, len(first_trace.steps)) == ("first-run", 3)
    assert (second_trace.id, len(second_trace.steps)) == ("second-run", 5)
    assert verify_trace(first_trace) == [] and verify_trace(second_trace) == []


def test_overwrite_replaces_only_the_cassette_that_was_there_when_the_run_started(tmp_path: Path) -> None:
    cassette = save_trace(weather_trace("old-run"), tmp_path / "run.json")
    recorder = _start(cassette, "new-run", overwrite=True)
    # While it records, another tool writes a different cassette to the same name.
    save_trace(weather_trace("someone-else"), cassette, overwrite=True)
    out = _end(recorder)
    assert out != cassette and load_trace(out, recover=False).id == "new-run"
    assert load_trace(cassette, recover=False).id == "someone-else"


def test_overwrite_replaces_the_cassette_it_was_allowed_to(tmp_path: Path) -> None:
    cassette = save_trace(weather_trace("old-run"), tmp_path / "run.json")
    assert _end(_start(cassette, "new-run", overwrite=True)) == cassette
    assert load_trace(cassette, recover=False).id == "new-run"


def test_discard_removes_only_its_own_journal(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    first = _start(cassette, "first-run")
    journal_path(cassette).unlink()
    second = _start(cassette, "second-run")
    first.discard()
    assert journal_path(cassette).exists()
    second.discard()
    assert not journal_path(cassette).exists() and not cassette.exists()


def test_recover_refuses_a_live_journal_and_names_its_owner(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    live = _start(cassette, "live-run")
    with pytest.raises(CassetteError, match=r"a recording \(run live-run, process \d+\) is live"):
        recover_journal(cassette, quiet=True)
    assert journal_path(cassette).exists() and not cassette.exists()
    live.close()


def test_recover_never_replaces_a_cassette_written_after_the_recording_started(tmp_path: Path) -> None:
    cassette = save_trace(weather_trace("old-run"), tmp_path / "run.json")
    _start(cassette, "interrupted", overwrite=True).close()
    save_trace(weather_trace("newer-run"), cassette, overwrite=True)
    with pytest.raises(CassetteError, match="written after the interrupted recording started"):
        recover_journal(cassette, quiet=True)
    assert journal_path(cassette).exists()
    assert load_trace(cassette, recover=False).id == "newer-run"


def test_recover_replaces_the_cassette_the_recording_was_allowed_to(tmp_path: Path) -> None:
    cassette = save_trace(weather_trace("old-run"), tmp_path / "run.json")
    _start(cassette, "interrupted", overwrite=True).close()
    recover_journal(cassette, quiet=True)
    trace = load_trace(cassette, recover=False)
    assert trace.id == "interrupted" and trace.steps[-1].payload["reason"] == "recording_interrupted"


def test_a_cassette_created_before_the_end_without_overwrite_is_kept(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    recorder = _start(cassette, "mine")
    save_trace(weather_trace("theirs"), cassette)
    out = _end(recorder)
    assert load_trace(cassette, recover=False).id == "theirs"
    assert load_trace(out, recover=False).id == "mine" and out.name == "run.mine.json"
    with pytest.raises(CassetteExistsError):
        Journal(cassette, Trace.new("third"), fsync=False)
