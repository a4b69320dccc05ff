"""The addon keeps the recorded completion order of overlapping calls (taddons/tflow; the e2e tests drive Claude Code)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
from mitmproxy import http
from mitmproxy.addons.proxyserver import Proxyserver
from mitmproxy.test import taddons, tflow, tutils

from blackbox_mitm.proxy.addon import _HOLD_KEY, BlackboxAddon


def _flow(question: str) -> http.HTTPFlow:
    body = {"model": "gpt-4.1", "messages": [{"role": "user", "content": question}]}
    req = tutils.treq(
        host="api.openai.com", port=443, scheme=b"https", method=b"POST", path=b"/v1/chat/completions", content=orjson.dumps(body)
    )
    req.headers["content-type"] = "application/json"
    return tflow.tflow(req=req)


def _answer(text: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": text, "refusal": None}
    return {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4.1",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }


async def _record(cassette: Path) -> None:
    """Two calls in flight at once; the one asked second is answered first; then a turn that takes both answers in."""
    addon = BlackboxAddon()
    with taddons.context(addon, Proxyserver()) as tctx:
        tctx.configure(addon, blackbox_mode="record", blackbox_cassette=str(cassette))
        first, second = _flow("first"), _flow("second")
        for f in (first, second):
            addon.requestheaders(f)
            addon.request(f)
        for f, text in ((second, "second done"), (first, "first done")):
            f.response = http.Response.make(200, orjson.dumps(_answer(text)), {"content-type": "application/json"})
            await addon.response(f)
        await asyncio.sleep(0.005)  # a later millisecond than those answers: it did not overlap them
        turn = _flow("second done; first done")  # what makes their order matter: the agent acted on both
        addon.requestheaders(turn)
        addon.request(turn)
        turn.response = http.Response.make(200, orjson.dumps(_answer("noted")), {"content-type": "application/json"})
        await addon.response(turn)
        addon.done()


async def _replay(cassette: Path) -> tuple[list[int], list[str], Any]:
    addon = BlackboxAddon()
    with taddons.context(addon, Proxyserver()) as tctx:
        tctx.configure(addon, blackbox_mode="replay", blackbox_cassette=str(cassette), blackbox_order_gap="30")
        first, second = _flow("first"), _flow("second")
        for f in (first, second):  # asked for in start order: "first" was recorded completing second
            addon.requestheaders(f)
            addon.request(f)
        # Both held: "first" for "second" (completion order), "second" until it settles (it was asked a moment ago).
        assert _HOLD_KEY in first.metadata and _HOLD_KEY in second.metadata
        sent: list[str] = []

        async def respond(f: http.HTTPFlow) -> None:
            await addon.response(f)  # mitmproxy sends an answer made here after this hook
            assert f.response is not None and f.response.content is not None
            sent.append(orjson.loads(f.response.content)["choices"][0]["message"]["content"])

        await asyncio.wait_for(asyncio.gather(respond(first), respond(second)), 30)
        session = addon.session
        assert session is not None and session.order is not None
        releases = session.order.releases
        addon.done()
    return [r.call for r in releases], sent, releases


def test_an_answer_made_here_waits_for_the_overlapping_one_recorded_before_it(tmp_path: Path) -> None:
    cassette = tmp_path / "overlap.json"

    async def both() -> tuple[list[int], list[str], Any]:  # one loop, as mitmproxy's log handler keeps the first
        await _record(cassette)
        return await _replay(cassette)

    calls, sent, releases = asyncio.run(both())
    assert calls == [0, 1]  # call 0 is "second" (completed first when recorded)
    assert sent == ["second done", "first done"]
    assert releases[1].after == 0 and releases[1].not_before_ms == releases[0].at_ms + 30
    assert releases[1].at_ms >= releases[1].not_before_ms
