"""Property-based: journal recovery refuses or recovers, never crashes, and never invents a step.

A real journal (the weather run, one batch per step, written by ``Journal``) is
cut at any byte (the recorder killed mid-write), mutated, or fed as random
bytes. ``read_journal`` either raises a ``CassetteError`` or returns a trace
whose steps are exactly a prefix of what was recorded; ``recover_journal`` on
the file does the same, and what it writes verifies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fuzz_strategies import mutated, weather_trace
from hypothesis import given
from hypothesis import strategies as st

from blackbox_mitm.cassette import Journal, Trace, journal_path, load_trace, recover_journal
from blackbox_mitm.cassette.recovery import read_journal
from blackbox_mitm.codecs.verified import verify_trace
from blackbox_mitm.errors import CassetteError


def _recorded(tmp: Path) -> tuple[bytes, Trace]:
    source = weather_trace("fuzz-rec")
    trace = Trace.new("fuzz-rec", created_at=source.createdAt)
    journal = Journal(tmp / "run.json", trace, fsync=False)
    for step in source.steps:
        journal.append([trace.append(step.type, step.payload, timestamp=step.timestamp)])
    journal.close()
    raw = journal_path(tmp / "run.json").read_bytes()
    journal_path(tmp / "run.json").unlink()
    return raw, trace


def _is_prefix(got: Trace, recorded: Trace) -> bool:
    return [s.hash for s in got.steps] == [s.hash for s in recorded.steps[: len(got.steps)]]


def test_the_recorded_journal_recovers_whole(tmp_path: Path) -> None:
    raw, recorded = _recorded(tmp_path)
    got = read_journal(raw)
    assert got.dropped == 0 and [s.hash for s in got.trace.steps] == [s.hash for s in recorded.steps]


@given(st.data())
def test_a_journal_cut_anywhere_recovers_a_prefix(tmp_path_factory: Any, data: st.DataObject) -> None:
    raw, recorded = _recorded(tmp_path_factory.mktemp("cut"))
    cut = data.draw(st.integers(min_value=0, max_value=len(raw)))
    try:
        got = read_journal(raw[:cut])
    except CassetteError:
        assert b"\n" not in raw[:cut]  # only a torn first line (no header) cannot be read
        return
    assert _is_prefix(got.trace, recorded)
    complete_batches = max(0, raw[:cut].count(b"\n") - 1)  # a header cut before its newline still reads
    assert len(got.trace.steps) == complete_batches


@given(st.data())
def test_a_mutated_journal_is_refused_or_recovers_a_prefix(tmp_path_factory: Any, data: st.DataObject) -> None:
    raw, recorded = _recorded(tmp_path_factory.mktemp("mutated"))
    try:
        got = read_journal(data.draw(mutated(raw)))
    except CassetteError:
        return
    assert _is_prefix(got.trace, recorded) or got.trace.id != recorded.id


@given(st.binary(max_size=300))
def test_random_bytes_are_refused_or_read(raw: bytes) -> None:
    try:
        read_journal(raw)
    except CassetteError:
        pass


@given(st.data())
def test_recover_journal_writes_a_cassette_that_verifies(tmp_path_factory: Any, data: st.DataObject) -> None:
    tmp = tmp_path_factory.mktemp("recover")
    raw, _ = _recorded(tmp)
    cassette = tmp / "run.json"
    journal_path(cassette).write_bytes(data.draw(mutated(raw, most=2)))
    try:
        recover_journal(cassette, quiet=True)
    except CassetteError:
        assert journal_path(cassette).exists() and not cassette.exists()  # refused: nothing lost, nothing written
        return
    trace = load_trace(cassette, recover=False)
    chain = {"prev_hash", "hash", "index", "id"}
    assert [p for p in verify_trace(trace) if p.code in chain] == []
    assert not journal_path(cassette).exists()
