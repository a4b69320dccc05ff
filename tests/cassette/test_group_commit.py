"""Group commit: calls that overlap share one fsync (threads and coroutines alike), none is answered before an fsync
covers its line, a lone call pays one fsync of its own, and a failed fsync fails the journal for the rest of the run
(cut back to its durable lines)."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from blackbox_mitm.cassette.group_commit import GroupCommit
from blackbox_mitm.cassette.journal import Journal
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.session.build import record_session
from blackbox_mitm.session.engine import Forward, ModelRequest

CALLS = 8


class _HeldFsync:
    """``os.fsync`` that notes where the lines ended each completed fsync covered; the first one after ``arm`` waits for a signal."""

    def __init__(self) -> None:
        self.real = os.fsync
        self.covered: list[int] = []  # where the journal's lines ended when each completed fsync began
        self.started = threading.Event()
        self.release = threading.Event()
        self.armed = False
        self.lock = threading.Lock()

    def __call__(self, fd: int) -> None:
        size = _lines_end(fd)
        if self.armed:
            self.armed = False
            self.started.set()
            assert self.release.wait(30), "the test never released the held fsync"
        self.real(fd)
        with self.lock:
            self.covered.append(size)


def _lines_end(fd: int) -> int:
    """Where the journal's lines end in the file: its size, less the zeros written ahead of them (cassette/journal.py)."""
    data = Path(f"/proc/self/fd/{fd}").read_bytes()  # the journal's descriptor is write-only
    end = data.find(b"\0")
    return len(data) if end < 0 else end


def _journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "run.json", Trace.new("group-commit"))


def _step_line(journal: Journal, n: int) -> list[Any]:
    return [journal.trace.append("model_input", {"messages": [{"role": "user", "content": f"call {n}"}], "tools": []})]


def test_overlapping_calls_share_one_fsync_and_none_returns_before_one_covers_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _HeldFsync()
    monkeypatch.setattr(os, "fsync", fake)
    journal = _journal(tmp_path)
    order = threading.Lock()  # the recorder's lock: lines in hash-chain order
    ends: dict[int, int] = {}
    errors: list[BaseException] = []

    def call(n: int) -> None:
        try:
            with order:
                seq = journal.write(_step_line(journal, n))
                ends[n] = journal.end
            journal.wait_durable(seq)
            with fake.lock:
                assert any(size >= ends[n] for size in fake.covered), f"call {n} returned before an fsync covered its line"
        except BaseException as exc:
            errors.append(exc)

    fake.armed = True
    first = threading.Thread(target=call, args=(0,))
    first.start()
    assert fake.started.wait(30)  # call 0 leads an fsync, held: the others write and queue behind it
    others = [threading.Thread(target=call, args=(n,)) for n in range(1, CALLS)]
    for t in others:
        t.start()
    while journal._group._written < CALLS + 1:  # the header and every call's line written
        threading.Event().wait(0.005)
    fake.release.set()
    for t in [first, *others]:
        t.join(30)
    assert errors == []
    lines, fsyncs = journal.fsyncs
    assert lines == CALLS + 1  # the header and every call
    assert fsyncs == 3  # the header's, call 0's, then one for the seven that queued behind it
    journal.close()


def test_a_lone_call_pays_one_fsync_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _HeldFsync()
    monkeypatch.setattr(os, "fsync", fake)
    journal = _journal(tmp_path)
    for n in range(5):
        journal.append(_step_line(journal, n))
        assert fake.covered[-1] == journal.end  # fsynced before append returned
    assert journal.fsyncs == (6, 6)
    journal.close()


def test_a_waiter_covered_before_a_failed_fsync_still_returns() -> None:
    calls = iter([None, OSError(errno.EIO, "I/O error")])

    def sync() -> None:
        outcome = next(calls)
        if outcome is not None:
            raise outcome

    group = GroupCommit(sync)
    first = group.wrote(10)
    group.wait(first)
    second = group.wrote(20)
    with pytest.raises(OSError, match="I/O error"):
        group.wait(second)
    group.wait(first)  # already durable: no error
    assert group.durable_offset == 10
    with pytest.raises(OSError, match="I/O error"):  # and nothing later ever is
        group.wait(group.wrote(30))


def _req(prompt: str) -> ModelRequest:
    body = json.dumps({"model": "gpt-4.1", "messages": [{"role": "user", "content": prompt}]}).encode()
    return ModelRequest(path="/v1/chat/completions", headers={"authorization": "Bearer sk-test-0123456789abcdef"}, body=body)


_ANSWER = orjson.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    }
)


def test_a_failed_fsync_refuses_the_call_cuts_the_journal_back_and_refuses_later_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = record_session(tmp_path / "run.json")
    assert session.recorder is not None and session.recorder.journal is not None
    journal_file = session.recorder.journal.path

    def record(prompt: str) -> Any:
        action = session.on_request(_req(prompt))
        assert isinstance(action, Forward)
        return session.on_response(action.ticket, 200, _ANSWER)

    assert record("first") is None
    durable = journal_file.read_bytes()
    real = os.fsync

    def failing(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing)
    refused = record("second")
    assert refused is not None and refused.status == 500 and b"could not be fsynced" in refused.body
    monkeypatch.setattr(os, "fsync", real)
    later = record("third")  # the disk may say yes now, but the run can no longer promise it
    assert later is not None and later.status == 500 and b"earlier fsync of the journal failed" in later.body
    assert journal_file.read_bytes() == durable.split(b"\0")[0]  # only what a completed fsync covered (the zeros ahead go too)
    prompts = [s.payload["messages"][0]["content"] for s in session.recorder.trace.steps if s.type == "model_input"]
    assert prompts == ["first"]  # the trace holds what the journal holds
    session.recorder.journal.close()


# -- waiting on an event loop (wait_async: the proxy's overlapping calls) -----------------------------------------


def test_coroutines_that_overlap_share_one_fsync_run_off_the_loop_and_none_returns_before_it_covers_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _HeldFsync()
    threads: list[int] = []
    real_call = fake.__call__

    def noting(fd: int) -> None:
        threads.append(threading.get_ident())
        real_call(fd)

    monkeypatch.setattr(os, "fsync", noting)
    journal = _journal(tmp_path)
    ends: dict[int, int] = {}

    async def call(n: int) -> None:
        seq = journal.write(_step_line(journal, n))  # on the loop, in order: the loop is the recorder's lock here
        ends[n] = journal.end
        await journal.wait_durable_async(seq)
        with fake.lock:
            assert any(size >= ends[n] for size in fake.covered), f"call {n} returned before an fsync covered its line"

    async def main() -> None:
        fake.armed = True
        first = asyncio.ensure_future(call(0))
        while not fake.started.is_set():  # call 0 leads an fsync, held on a worker thread: the loop runs on
            await asyncio.sleep(0.005)
        others = [asyncio.ensure_future(call(n)) for n in range(1, CALLS)]
        while journal._group._written < CALLS + 1:  # the header and every call's line written
            await asyncio.sleep(0.005)
        fake.release.set()
        await asyncio.wait_for(asyncio.gather(first, *others), 30)

    loop_thread = threading.get_ident()
    threads.clear()  # the header's fsync, made by the journal's constructor on this thread
    asyncio.run(main())
    assert journal.fsyncs == (CALLS + 1, 3)  # the header's, call 0's, then one for the seven that queued behind it
    assert len(threads) == 2 and loop_thread not in threads
    journal.close()


def test_a_thread_and_a_coroutine_wait_for_the_same_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _HeldFsync()
    monkeypatch.setattr(os, "fsync", fake)
    journal = _journal(tmp_path)
    fake.armed = True
    leader = threading.Thread(target=journal.append, args=(_step_line(journal, 0),))
    leader.start()
    assert fake.started.wait(30)  # the thread leads an fsync, held

    async def follower() -> None:
        seq = journal.write(_step_line(journal, 1))
        waiting = asyncio.ensure_future(journal.wait_durable_async(seq))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # its line came after the held fsync began: not covered by it
        fake.release.set()
        await asyncio.wait_for(waiting, 30)

    asyncio.run(follower())
    leader.join(30)
    assert journal.fsyncs == (3, 3)  # the header, the thread's line, then the coroutine's own
    assert fake.covered[-1] == journal.end
    journal.close()


def test_a_failed_fsync_reaches_every_waiting_coroutine_and_every_later_one() -> None:
    started, release = threading.Event(), threading.Event()

    def sync() -> None:
        started.set()
        assert release.wait(30)
        raise OSError(errno.EIO, "I/O error")

    group = GroupCommit(sync)

    async def main() -> list[BaseException | None]:
        leader = asyncio.ensure_future(group.wait_async(group.wrote(10)))
        while not started.is_set():
            await asyncio.sleep(0.005)
        follower = asyncio.ensure_future(group.wait_async(group.wrote(20)))
        await asyncio.sleep(0.01)
        release.set()
        outcomes = await asyncio.gather(leader, follower, return_exceptions=True)
        with pytest.raises(OSError, match="I/O error"):  # and nothing later ever is durable
            await group.wait_async(group.wrote(30))
        return list(outcomes)

    outcomes = asyncio.run(main())
    assert [type(o) for o in outcomes] == [OSError, OSError]
    assert all("I/O error" in str(o) for o in outcomes)
    assert group.durable_offset == 0
