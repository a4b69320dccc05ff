"""A plain, fsynced journal writes its lines over zeros written ahead of them; a reader cuts at the first zero."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
from cassette_builders import weather_trace

from blackbox_mitm.cassette import Journal, Trace, journal_path, load_trace, recover_journal
from blackbox_mitm.cassette.compression import journal_plain
from blackbox_mitm.cassette.journal import ZEROS_FIRST, ZEROS_MOST
from blackbox_mitm.cassette.recovery import read_journal


def _line(journal: Journal, n: int, size: int = 3000) -> list[Any]:
    payload = {"messages": [{"role": "user", "content": f"call {n} " + "x" * size}], "tools": []}
    return [journal.trace.append("model_input", payload)]


def _split(path: Path, journal: Journal) -> tuple[bytes, bytes]:
    raw = path.read_bytes()
    return raw[: journal.end], raw[journal.end :]


def test_lines_go_over_zeros_written_ahead_and_no_fsync_is_added_for_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fsyncs: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        fsyncs.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    journal = Journal(tmp_path / "run.json", Trace.new("zeros"))
    lines, zeros = _split(journal.path, journal)
    assert lines.endswith(b"\n") and b"\0" not in lines  # the header line
    assert len(lines) + len(zeros) == ZEROS_FIRST and zeros == bytes(len(zeros))
    for n in range(60):  # about 180 KB of lines: past the first zeros, and past the second ones
        journal.append(_line(journal, n))
    lines, zeros = _split(journal.path, journal)
    assert b"\0" not in lines and lines.count(b"\n") == 61 and zeros == bytes(len(zeros)) and zeros
    assert os.path.getsize(journal.path) in (ZEROS_FIRST * 4, ZEROS_FIRST * 8)  # 64 KiB, then 64 and 128 KiB more, ...
    assert len(fsyncs) == 61  # the header and each line, one fsync each: the zeros are made durable by the lines' own
    journal.close()


def test_a_line_bigger_than_the_zeros_ahead_gets_zeros_enough(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "run.json", Trace.new("big"))
    journal.append(_line(journal, 0, size=3 * ZEROS_MOST))
    lines, zeros = _split(journal.path, journal)
    assert lines.count(b"\n") == 2 and b"\0" not in lines and zeros == bytes(len(zeros))
    journal.close()


@pytest.mark.parametrize(("name", "fsync"), [("run.json", False), ("run.json.gz", True), ("run.json.zst", True)])
def test_a_journal_not_fsynced_or_compressed_is_appended_to(tmp_path: Path, name: str, fsync: bool) -> None:
    journal = Journal(tmp_path / name, Trace.new("plain"), fsync=fsync)
    for n in range(3):
        journal.append(_line(journal, n))
    assert os.path.getsize(journal.path) == journal.end  # no zeros
    journal.close()


def test_a_file_that_takes_no_more_zeros_is_appended_to_and_keeps_every_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.pwrite
    full = {"on": False}

    def pwrite(fd: int, data: Any, at: int) -> int:
        if full["on"] and not any(bytes(data)):  # the zeros: the disk is full for them
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data, at)

    monkeypatch.setattr(os, "pwrite", pwrite)
    journal = Journal(tmp_path / "run.json", Trace.new("full"))
    full["on"] = True
    for n in range(40):  # past the first zeros: the next ones cannot be written
        journal.append(_line(journal, n))
    assert os.path.getsize(journal.path) == journal.end  # cut back to the lines, then appended to
    raw = journal.path.read_bytes()
    assert b"\0" not in raw and raw.count(b"\n") == 41
    journal.close()
    recovered = read_journal(raw)
    assert recovered.dropped == 0 and len(recovered.trace.steps) == 40


def _interrupted(tmp_path: Path, calls: int) -> tuple[Path, Journal]:
    """A recording of ``calls`` calls that stops without finishing (its process killed): the journal as it left it."""
    cassette = tmp_path / "run.json"
    source = weather_trace("crash")
    journal = Journal(cassette, Trace.new("crash", created_at=source.createdAt))
    for step in source.steps[:calls]:
        journal.append([journal.trace.append(step.type, step.payload, timestamp=step.timestamp)])
    journal.close()
    return cassette, journal


def test_a_killed_recording_recovers_every_line_before_the_zeros(tmp_path: Path) -> None:
    cassette, _ = _interrupted(tmp_path, 4)
    assert journal_path(cassette).read_bytes().endswith(b"\0")
    out, count = recover_journal(cassette, quiet=True)
    trace = load_trace(out, recover=False)
    assert count == 5 and [s.type for s in trace.steps][-1] == "metadata"
    assert "incomplete write" not in trace.steps[-1].payload["message"]  # nothing was dropped


def test_a_line_cut_off_in_the_zeros_is_dropped(tmp_path: Path) -> None:
    cassette, journal = _interrupted(tmp_path, 4)
    jpath = journal_path(cassette)
    raw = bytearray(jpath.read_bytes())
    last = raw.rindex(b"\n", 0, journal.end - 1) + 1  # the fourth line
    raw[last + 40 : journal.end] = bytes(journal.end - last - 40)  # only its first 40 bytes reached the disk
    jpath.write_bytes(bytes(raw))
    out, count = recover_journal(cassette, quiet=True)
    trace = load_trace(out, recover=False)
    assert count == 4  # three steps, then the marker
    assert "1 incomplete write dropped" in trace.steps[-1].payload["message"]


def test_a_later_write_past_a_hole_of_zeros_is_dropped_not_taken_for_tampering(tmp_path: Path) -> None:
    # Lines written over zeros reach the disk in any order until an fsync: a crash can leave the end of a line that
    # no fsync covered after zeros where its beginning was. Everything from the first zero on was never durable.
    cassette, journal = _interrupted(tmp_path, 4)
    jpath = journal_path(cassette)
    raw = bytearray(jpath.read_bytes())
    third = raw.rindex(b"\n", 0, raw.rindex(b"\n", 0, journal.end - 1)) + 1  # the third line's start
    raw[third : third + 30] = bytes(30)  # its first block lost; the rest of it and the fourth line on disk
    jpath.write_bytes(bytes(raw))
    assert journal_plain(cassette, bytes(raw), path=str(jpath)) == (bytes(raw[:third]), True)
    out, count = recover_journal(cassette, quiet=True)
    trace = load_trace(out, recover=False)
    assert count == 3  # the two durable steps, then the marker
    assert "incomplete write dropped" in trace.steps[-1].payload["message"]
