"""The addon's blackbox_mask / blackbox_no_mask / blackbox_redact / blackbox_pace options, without sockets (taddons/tflow)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest
from mitmproxy import exceptions, http
from mitmproxy.addons.proxyserver import Proxyserver
from mitmproxy.test import taddons, tflow, tutils

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.proxy.addon import BlackboxAddon

EMAIL = r"[a-z.]+@example\.com"


def _request(text: str) -> dict[str, object]:
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 64,
        "system": f"Now: {text}.",
        "messages": [{"role": "user", "content": "Mail ada@example.com"}],
    }


def _flow(body: object) -> http.HTTPFlow:
    req = tutils.treq(host="api.anthropic.com", port=443, scheme=b"https", method=b"POST", path=b"/v1/messages", content=orjson.dumps(body))
    req.headers["content-type"] = "application/json"
    req.headers["x-api-key"] = "sk-ant-test-not-a-real-key-000"
    return tflow.tflow(req=req)


ANSWER = {
    "id": "msg_01abc",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [{"type": "text", "text": "Mailed ada@example.com."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 5, "output_tokens": 2},
}


async def _record(cassette: Path) -> None:
    addon = BlackboxAddon()
    with taddons.context(addon, Proxyserver()) as tctx:
        tctx.configure(addon, blackbox_mode="record", blackbox_cassette=str(cassette), blackbox_redact=[EMAIL])
        f = _flow(_request("10:00"))
        addon.requestheaders(f)
        addon.request(f)
        await asyncio.sleep(0.05)  # the call takes a while: --pace recorded replays it as taking as long
        f.response = http.Response.make(200, orjson.dumps(ANSWER), {"content-type": "application/json"})
        await addon.response(f)
        assert b"ada@example.com" in (f.response.content or b"")  # the agent gets the real answer
        addon.done()


def test_redaction_at_record_and_masks_and_pace_at_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BLACKBOX_CONFIG", "")
    asyncio.run(_record_then_replay(tmp_path / "run.json"))


async def _replay(cassette: Path, **options: object) -> http.HTTPFlow:
    addon = BlackboxAddon()
    with taddons.context(addon, Proxyserver()) as tctx:
        tctx.configure(addon, blackbox_mode="replay", blackbox_cassette=str(cassette), blackbox_redact=[EMAIL], **options)
        f = _flow(_request("11:30"))  # another time in the system prompt
        addon.requestheaders(f)
        addon.request(f)
        addon.done()
        return f


async def _record_then_replay(cassette: Path) -> None:
    # One event loop for all of it, as mitmproxy runs its hooks (its log handler needs the loop).
    await _record(cassette)
    trace = load_trace(cassette)
    assert b"ada@example.com" not in cassette.read_bytes()
    assert "<redacted:" in trace.steps[0].payload["messages"][0]["content"]

    unmasked = await _replay(cassette)
    assert unmasked.response is not None and unmasked.response.status_code == 400
    assert b"system prompt differs" in (unmasked.response.content or b"")
    masked = await _replay(cassette, blackbox_mask=[r"Now: (?P<mask>\d\d:\d\d)"])
    assert masked.response is not None and masked.response.status_code == 200
    assert b"<redacted:" in (masked.response.content or b"")
    left_out = await _replay(cassette, blackbox_mask=[r"Now: (?P<mask>\d\d:\d\d)"], blackbox_no_mask=["mask-1"])
    assert left_out.response is not None and left_out.response.status_code == 400  # the mask named by blackbox_no_mask is off
    assert b"system prompt differs" in (left_out.response.content or b"")
    paced = await _replay(cassette, blackbox_mask=[r"Now: (?P<mask>\d\d:\d\d)"], blackbox_pace="recorded")
    assert paced.response is None  # sent to the loopback pacer, which delivers it after the recorded call's time
    assert paced.request.host == "127.0.0.1" and paced.request.path.startswith("/blackbox-stream/")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"blackbox_mask": ["(unclosed"]}, "is not a regular expression"),
        ({"blackbox_redact": ["a*"]}, "matches the empty string"),
        ({"blackbox_pace": "slowly"}, "pace must be"),
        ({"blackbox_no_mask": ["pgid"]}, "no mask is named 'pgid'"),
    ],
)
def test_bad_values_stop_mitmdump_with_a_named_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, object], message: str
) -> None:
    monkeypatch.setenv("BLACKBOX_CONFIG", "")
    asyncio.run(_refused(tmp_path / "run.json", options, message))


async def _refused(cassette: Path, options: dict[str, object], message: str) -> None:
    await _record(cassette)
    addon = BlackboxAddon()
    with taddons.context(addon) as tctx, pytest.raises(exceptions.OptionsError, match=message):
        tctx.configure(addon, blackbox_mode="replay", blackbox_cassette=str(cassette), **options)
