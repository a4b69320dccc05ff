"""Where the addon records a forwarded call's answer: on the loop when it is the run's only call in flight (the hop to
a worker thread costs more than the fsync), on a worker thread when calls overlap, so one fsync never holds up the
others. Either way the step is in the journal, fsynced, before the response hook returns."""

from __future__ import annotations

import asyncio
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


async def _record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, overlapping: int) -> tuple[int, int]:
    """Forward ``overlapping`` calls, then answer them one by one; (answers recorded on a thread, steps journaled)."""
    hops: list[Any] = []
    real = asyncio.to_thread

    async def counting(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        hops.append(fn)
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", counting)  # the addon calls asyncio.to_thread
    cassette = tmp_path / "run.json"
    addon = BlackboxAddon()
    with taddons.context(addon, Proxyserver()) as tctx:
        tctx.configure(addon, blackbox_mode="record", blackbox_cassette=str(cassette))
        for round_no in range(2):
            flows = [_flow(round_no * 10 + i) for i in range(overlapping)]
            for f in flows:
                addon.requestheaders(f)
                addon.request(f)
                assert f.response is None  # forwarded upstream
            for f in flows:
                f.response = http.Response.make(200, orjson.dumps(RESPONSE), {"content-type": "application/json"})
                await addon.response(f)
                assert f.response.status_code == 200
        journaled = len(journal_path(cassette).read_bytes().splitlines()) - 1  # the header line, then a line per call
        addon.done()
    assert len([s for s in load_trace(cassette).steps if s.type == "model_output"]) == 2 * overlapping
    return len(hops), journaled


def test_a_call_alone_in_flight_is_recorded_on_the_loop_and_journaled_before_the_hook_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hops, journaled = asyncio.run(_record(tmp_path, monkeypatch, overlapping=1))
    assert hops == 0
    assert journaled == 2


def test_overlapping_calls_are_recorded_on_a_worker_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hops, journaled = asyncio.run(_record(tmp_path, monkeypatch, overlapping=3))
    # Of each round's three, the first two answers come while others are in flight; the last is alone by then.
    assert hops == 4
    assert journaled == 6
