"""Where the addon records a forwarded call's answer: always on the loop (decode, steps, journal line), then the wait
for its fsync. The run's only call in flight fsyncs right there on the loop (a hop to a worker thread costs more than
the fsync); calls that overlap await theirs, which runs on a worker thread, so no fsync holds up the others. Either way
the step is in the journal, fsynced, before the response hook returns."""

from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from mitmproxy import http
from mitmproxy.addons.proxyserver import Proxyserver
from mitmproxy.test import taddons, tflow, tutils

from blackbox_mitm.cassette import journal_path, load_trace
from blackbox_mitm.proxy.addon import BlackboxAddon

RESPONSE = {
    "id": "chatcmpl-abc123",
    "object": "chat.completion",
    "created": 1730000000,
    "model": "gpt-4.1",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Sunny."}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
}


def _flow(n: int) -> http.HTTPFlow:
    body = {"model": "gpt-4.1", "messages": [{"role": "user", "content": f"question {n}"}]}
    req = tutils.treq(
        host="api.openai.com", port=443, scheme=b"https", method=b"POST", path=b"/v1/chat/completions", content=orjson.dumps(body)
    )
    req.headers["content-type"] = "application/json"
    return tflow.tflow(req=req)


@dataclass
class _Seen:
    hops: int = 0  # asyncio.to_thread calls
    fsync_threads: list[int] = field(default_factory=list)  # the thread of each fsync of the calls' journal lines
    durable_at_return: list[bool] = field(default_factory=list)  # each call's line within what was fsynced when its hook returned
    synced_size: int = 0


def _lines_end(fd: int) -> int:
    """Where the journal's lines end in the file: its size, less the zeros written ahead of them (cassette/journal.py)."""
    data = Path(f"/proc/self/fd/{fd}").read_bytes()  # the journal's descriptor is write-only
    end = data.find(b"\0")
    return len(data) if end < 0 else end


async def _record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, overlapping: int) -> tuple[_Seen, int]:
    """Two rounds: forward ``overlapping`` calls, then answer them all at once; what was seen, and the lines journaled."""
    seen = _Seen()
    real_hop, real_fsync = asyncio.to_thread, os.fsync

    async def counting(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        seen.hops += 1
        return await real_hop(fn, *args, **kwargs)

    def noting(fd: int) -> None:
        size = _lines_end(fd)
        real_fsync(fd)
        seen.fsync_threads.append(threading.get_ident())
        seen.synced_size = max(seen.synced_size, size)

    monkeypatch.setattr(asyncio, "to_thread", counting)  # the addon would call asyncio.to_thread
    cassette = tmp_path / "run.json"
    addon = BlackboxAddon()
    with taddons.context(addon, Proxyserver()) as tctx:
        tctx.configure(addon, blackbox_mode="record", blackbox_cassette=str(cassette))
        monkeypatch.setattr(os, "fsync", noting)
        journal = journal_path(cassette)

        async def answer(f: http.HTTPFlow, n: int) -> None:
            f.response = http.Response.make(200, orjson.dumps(RESPONSE), {"content-type": "application/json"})
            await addon.response(f)
            assert f.response.status_code == 200
            seen.durable_at_return.append(f'question {n}"'.encode() in journal.read_bytes()[: seen.synced_size])

        for round_no in range(2):
            numbers = [round_no * 10 + i for i in range(overlapping)]
            flows = [_flow(n) for n in numbers]
            for f in flows:
                addon.requestheaders(f)
                addon.request(f)
                assert f.response is None  # forwarded upstream
            await asyncio.gather(*(answer(f, n) for f, n in zip(flows, numbers, strict=True)))
        journaled = len(journal.read_bytes().split(b"\0")[0].splitlines()) - 1  # the header line, then a line per call (then zeros)
        monkeypatch.setattr(os, "fsync", real_fsync)  # the cassette's own write at the end is not a call's
        addon.done()
    assert len([s for s in load_trace(cassette).steps if s.type == "model_output"]) == 2 * overlapping
    return seen, journaled


def test_a_call_alone_in_flight_is_recorded_and_fsynced_on_the_loop_before_the_hook_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen, journaled = asyncio.run(_record(tmp_path, monkeypatch, overlapping=1))
    assert seen.hops == 0
    assert journaled == 2
    assert seen.fsync_threads[:2] == [threading.get_ident()] * 2  # one fsync per call, each on the loop's own thread
    assert seen.durable_at_return == [True, True]


def test_overlapping_calls_are_recorded_on_the_loop_and_await_an_fsync_run_on_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen, journaled = asyncio.run(_record(tmp_path, monkeypatch, overlapping=3))
    assert seen.hops == 0  # no call's recording hops to a thread: only the fsyncs do
    assert journaled == 6
    assert seen.durable_at_return == [True] * 6  # no hook returned before an fsync covered its call's line
    # How many fsyncs the six share depends on when each ends (tests/cassette/test_group_commit.py holds one to see);
    # wherever they ran, it was not on the loop's thread.
    assert seen.fsync_threads
    assert threading.get_ident() not in seen.fsync_threads
