"""The addon's WebSocket hooks, driven with mitmproxy's taddons/tflow: which way an upgrade goes in each mode."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from fake_responses_ws import answer_events
from mitmproxy import http
from mitmproxy.addons.proxyserver import Proxyserver
from mitmproxy.test import taddons, tflow
from mitmproxy.websocket import WebSocketMessage
from wsproto.frame_protocol import Opcode

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.proxy.addon import BlackboxAddon

USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello?"}]}


def _upgrade() -> http.HTTPFlow:
    flow = tflow.twebsocketflow(messages=False)
    flow.request.host, flow.request.port, flow.request.scheme = "api.openai.com", 443, "https"
    flow.request.path = "/v1/responses"
    flow.request.headers["authorization"] = "Bearer sk-test-not-a-real-key-000"
    flow.response = None  # the upgrade as the request hook sees it
    assert flow.websocket is not None
    flow.websocket.messages = []
    return flow


async def _record(cassette: Path) -> None:
    addon = BlackboxAddon()
    with taddons.context(addon, Proxyserver()) as tctx:
        tctx.configure(addon, blackbox_mode="record", blackbox_cassette=str(cassette))
        flow = _upgrade()
        addon.requestheaders(flow)
        addon.request(flow)
        assert flow.response is None and flow.request.host == "api.openai.com"  # the socket goes upstream
        flow.response = http.Response.make(101, b"", {"upgrade": "websocket", "connection": "upgrade"})
        assert flow.websocket is not None
        turn = {"type": "response.create", "model": "gpt-test", "input": [USER], "store": False}
        flow.websocket.messages.append(WebSocketMessage(Opcode.TEXT, True, json.dumps(turn).encode()))
        await addon.websocket_message(flow)
        for event in answer_events({"text": "Hi there."}, turn, "resp_up1", 1):
            flow.websocket.messages.append(WebSocketMessage(Opcode.TEXT, False, json.dumps(event).encode()))
            await addon.websocket_message(flow)
        flow.websocket.close_code, flow.websocket.closed_by_client = 1000, True
        addon.websocket_end(flow)
        addon.done()


def test_recording_sends_the_socket_upstream_and_records_its_turn(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    asyncio.run(_record(cassette))
    steps = load_trace(cassette).steps
    assert [s.type for s in steps] == ["model_input", "model_output", "metadata"]
    assert steps[1].payload == {"type": "final_answer", "text": "Hi there.", "tokens": {"input": 12, "output": 5}}  # the fake's usage


async def _replay(cassette: Path) -> None:
    addon = BlackboxAddon()
    with taddons.context(addon, Proxyserver()) as tctx:
        tctx.configure(addon, blackbox_mode="replay", blackbox_cassette=str(cassette))
        flow = _upgrade()
        addon.requestheaders(flow)
        addon.request(flow)
        assert flow.response is None  # not refused: sent to our own socket server
        assert flow.request.host == "127.0.0.1" and flow.request.path.startswith("/blackbox-ws/")
        assert ("127.0.0.1", flow.request.port) in addon.local_upstreams  # the offline guard lets it through
        addon.done()


def test_a_replay_sends_the_upgrade_to_its_loopback_socket_server(tmp_path: Path) -> None:
    async def both() -> None:  # in one loop, as mitmproxy runs: its log handler is bound to it
        await _record(tmp_path / "run.json")
        await _replay(tmp_path / "run.json")

    asyncio.run(both())


def test_a_non_model_upgrade_is_left_to_the_http_path(tmp_path: Path) -> None:
    async def run() -> None:
        addon = BlackboxAddon()
        with taddons.context(addon, Proxyserver()) as tctx:
            tctx.configure(addon, blackbox_mode="record", blackbox_cassette=str(tmp_path / "run.json"))
            flow = _upgrade()
            flow.request.path = "/v1/realtime"
            addon.requestheaders(flow)
            addon.request(flow)
            assert flow.response is None and flow.request.host == "api.openai.com"
            addon.done()

    asyncio.run(run())
