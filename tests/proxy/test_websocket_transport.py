"""Model calls over a WebSocket, without the proxy: the record hooks on mitmproxy test flows, the replay server for real.

Record: ``WebSocketTransport`` driven with ``tflow`` WebSocket flows and the
frames of the fake Responses server (examples/fake_responses_ws.py). Replay:
the loopback ``SocketServer`` answering a real WebSocket client from a
cassette that the record half wrote.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from fake_responses_ws import answer_events
from mitmproxy import http
from mitmproxy.test import tflow
from mitmproxy.websocket import WebSocketMessage
from websockets.sync.client import connect
from wsproto.frame_protocol import Opcode

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs import codec_for, openai_responses
from blackbox_mitm.codecs.base import Codec
from blackbox_mitm.codecs.openai_responses import websocket as openai_responses_ws
from blackbox_mitm.proxy.websocket import WebSocketTransport, socket_mode
from blackbox_mitm.proxy.ws_replay import SocketServer, SocketTarget
from blackbox_mitm.session.build import record_session, replay_session
from blackbox_mitm.session.engine import Session
from blackbox_mitm.session.plan import UPSTREAM

USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What's in this folder?"}]}
TOOLS = [{"type": "function", "name": "list_files", "description": "List files", "parameters": {"type": "object", "properties": {}}}]


def _ws_flow(path: str = "/v1/responses") -> http.HTTPFlow:
    flow = tflow.twebsocketflow(messages=False)
    flow.request.host = "api.openai.com"
    flow.request.path = path
    flow.request.headers["authorization"] = "Bearer sk-test-not-a-real-key-000"
    assert flow.websocket is not None
    flow.websocket.messages = []
    return flow


def _create(**fields: Any) -> dict[str, Any]:
    return {"type": "response.create", "model": "gpt-test", "store": False, **fields}


def _codec(flow: http.HTTPFlow) -> Codec | None:
    """The codec the addon chooses for an upgrade (its calls are POSTs to the path)."""
    return codec_for("POST", flow.request.path)


class Socket:
    """A recorded socket driven frame by frame, as mitmproxy's websocket layer calls the hooks."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.injected: list[dict[str, Any]] = []
        self.transport = WebSocketTransport(inject=lambda flow, frame: self.injected.append(json.loads(frame)))
        self.flow = _ws_flow()
        assert self.transport.upgrade(self.flow, session, _codec(self.flow))
        assert self.flow.response is not None and self.flow.response.status_code == 101  # untouched: it goes upstream

    def send(self, message: dict[str, Any]) -> WebSocketMessage:
        return self._hook(WebSocketMessage(Opcode.TEXT, True, json.dumps(message).encode()))

    def answer(self, events: list[dict[str, Any]]) -> list[WebSocketMessage]:
        return [self._hook(WebSocketMessage(Opcode.TEXT, False, json.dumps(e).encode())) for e in events]

    def _hook(self, msg: WebSocketMessage) -> WebSocketMessage:
        assert self.flow.websocket is not None
        self.flow.websocket.messages.append(msg)
        asyncio.run(self.transport.message(self.flow, self.session))
        return msg

    def close(self, code: int = 1000, by_client: bool = True) -> None:
        assert self.flow.websocket is not None
        self.flow.websocket.close_code, self.flow.websocket.closed_by_client = code, by_client
        self.transport.end(self.flow, self.session)


def _warm_up(sock: Socket, response_id: str = "resp_up_warm") -> str:
    sock.send(_create(input=[], generate=False))
    created = {"id": response_id, "object": "response", "status": "in_progress", "output": []}
    sock.answer(
        [
            {"type": "response.created", "sequence_number": 0, "response": created},
            {"type": "response.completed", "sequence_number": 1, "response": {**created, "status": "completed"}},
        ]
    )
    return response_id


def _record_two_turns(tmp_path: Path) -> Path:
    cassette = tmp_path / "run.json"
    session = record_session(cassette, fsync=False)
    sock = Socket(session)
    warm = _warm_up(sock)
    first = _create(input=[USER], tools=TOOLS, previous_response_id=warm)
    sock.send(first)
    sock.answer(answer_events({"function": "list_files", "arguments": "{}"}, first, "resp_up1", 1))
    assert session.recorder is not None and session.recorder.model_calls == 1
    second = _create(input=[{"type": "function_call_output", "call_id": "call_1", "output": "a.txt b.txt"}], tools=TOOLS)
    second["previous_response_id"] = "resp_up1"
    sock.send(second)
    final = sock.answer(answer_events({"text": "Two files: a.txt and b.txt."}, second, "resp_up2", 2))
    assert session.recorder.model_calls == 2 and not final[-1].dropped
    assert sock.injected == []  # nothing was put in the client's way
    sock.close()
    session.recorder.finish(cassette, exit_code=0)
    return cassette


def test_each_response_create_on_a_socket_is_one_model_call_and_a_warm_up_is_none(tmp_path: Path) -> None:
    trace = load_trace(_record_two_turns(tmp_path))
    calls = [s for s in trace.steps if s.type in ("model_input", "model_output")]
    assert [s.type for s in calls] == ["model_input", "model_output", "model_input", "model_output"]
    assert calls[1].payload["type"] == "tool_calls" and calls[1].payload["calls"][0]["toolName"] == "list_files"
    assert calls[3].payload == {"type": "final_answer", "text": "Two files: a.txt and b.txt.", "tokens": {"input": 12, "output": 5}}
    # the second turn sent only its new item; the step holds the whole conversation, as over HTTP
    roles = [m["role"] for m in calls[2].payload["messages"]]
    assert roles[0] == "user" and "assistant" in roles and len(roles) >= 3
    raw = (tmp_path / "run.json").read_bytes()
    for native in (b"resp_up", b"sk-test", b"call_1", b"fc_1"):
        assert native not in raw


def test_the_final_frame_waits_until_the_call_is_recorded(tmp_path: Path) -> None:
    session = record_session(tmp_path / "run.json", fsync=False)
    sock = Socket(session)
    turn = _create(input=[USER])
    sock.send(turn)
    events = answer_events({"text": "Hello."}, turn, "resp_up1", 1)
    sock.answer(events[:-1])
    assert session.recorder is not None and session.recorder.model_calls == 0
    sock.answer(events[-1:])  # the hook returns (and mitmproxy forwards the frame) only after this
    assert session.recorder.model_calls == 1


def test_a_socket_cut_mid_answer_records_nothing_for_that_call_and_says_why(tmp_path: Path) -> None:
    session = record_session(tmp_path / "run.json", fsync=False)
    sock = Socket(session)
    turn = _create(input=[USER])
    sock.send(turn)
    sock.answer(answer_events({"text": "Hello there, I was about to"}, turn, "resp_up1", 1)[:4])
    sock.close(code=1006, by_client=False)
    assert session.recorder is not None and session.recorder.model_calls == 0
    assert any("closed the socket (code 1006)" in n and "before the answer's final frame" in n for n in session.notes)
    assert session.in_flight == 0


def test_an_answer_refused_at_its_final_frame_reaches_the_client_as_the_apis_error_event(tmp_path: Path) -> None:
    session = record_session(tmp_path / "run.json", fsync=False)
    sock = Socket(session)
    turn = _create(input=[USER])
    sock.send(turn)
    events = answer_events({"text": "Clicking."}, turn, "resp_up1", 1)
    hosted = {  # a built-in tool's call item Blackbox does not record yet (docs/providers.md, the refused fields)
        "type": "local_shell_call",
        "id": "lsh_1",
        "call_id": "call_1",
        "status": "completed",
        "action": {"type": "exec", "command": ["ls"], "env": {}},
    }
    events[-1]["response"]["output"] = [hosted]
    final = sock.answer(events)[-1]
    assert session.recorder is not None and session.recorder.model_calls == 0
    replaced = json.loads(final.text)
    assert replaced["type"] == "error" and "local_shell_call" in json.dumps(replaced)
    assert session.refused


def test_a_refused_call_never_goes_upstream_and_the_client_gets_the_apis_error_frame(tmp_path: Path) -> None:
    session = record_session(tmp_path / "run.json", fsync=False)
    sock = Socket(session)
    msg = sock.send(_create(input=[USER], tools=[{"type": "local_shell"}]))
    assert msg.dropped
    assert len(sock.injected) == 1
    frame = sock.injected[0]
    assert frame["type"] == "error" and frame["status"] == 400
    assert "local_shell" in frame["error"]["message"] or "tools[0]" in frame["error"]["message"]
    assert session.refused


def test_other_messages_pass_through_unrecorded(tmp_path: Path) -> None:
    session = record_session(tmp_path / "run.json", fsync=False)
    sock = Socket(session)
    msg = sock.send({"type": "session.ping"})
    assert not msg.dropped and sock.injected == []
    assert any("not a model call" in n for n in session.notes)


def test_only_a_model_path_upgrade_is_taken(tmp_path: Path) -> None:
    session = record_session(tmp_path / "run.json", fsync=False)
    transport = WebSocketTransport(inject=lambda flow, frame: None)
    realtime = _ws_flow("/v1/realtime")
    assert not transport.upgrade(realtime, session, _codec(realtime))
    plain = tflow.tflow()
    assert not transport.upgrade(plain, session, _codec(plain))


def test_a_run_that_cannot_serve_a_socket_answers_426_so_the_client_uses_https(tmp_path: Path) -> None:
    cassette = _record_two_turns(tmp_path)
    fork_live = replay_session(cassette)
    fork_live.plan = dataclasses.replace(fork_live.plan, tail=UPSTREAM)  # a fork going live after its prefix: part recording, part upstream
    assert socket_mode(fork_live) == "fall-back"
    flow = _ws_flow()
    assert WebSocketTransport().upgrade(flow, fork_live, _codec(flow))
    assert flow.response is not None and flow.response.status_code == 426


# -- replay: the loopback server ---------------------------------------------------------


def _served_socket(session: Session) -> tuple[SocketServer, str]:
    server = SocketServer()
    headers = {"authorization": "Bearer blackbox-replay-needs-no-key"}
    url = server.register(SocketTarget(session, openai_responses, openai_responses_ws, "/v1/responses", headers))
    return server, url.replace("http://", "ws://")


def _turn(conn: Any, message: dict[str, Any]) -> list[dict[str, Any]]:
    conn.send(json.dumps(message))
    frames = []
    while True:
        frame = json.loads(conn.recv(timeout=10))
        frames.append(frame)
        if frame["type"] in ("response.completed", "response.incomplete", "response.failed", "error"):
            return frames


def test_a_replayed_socket_is_answered_from_the_cassette_turn_by_turn(tmp_path: Path) -> None:
    session = replay_session(_record_two_turns(tmp_path))
    assert socket_mode(session) == "serve"
    server, url = _served_socket(session)
    try:
        with connect(url) as conn:
            warm = _turn(conn, _create(input=[], generate=False))
            assert [f["type"] for f in warm] == ["response.created", "response.completed"]
            first = _turn(conn, _create(input=[USER], tools=TOOLS, previous_response_id=warm[-1]["response"]["id"]))
            done = first[-1]["response"]
            assert first[-1]["type"] == "response.completed"
            call = next(item for item in done["output"] if item["type"] == "function_call")
            assert call["name"] == "list_files"
            output = {"type": "function_call_output", "call_id": call["call_id"], "output": "a.txt b.txt"}
            second = _turn(conn, _create(input=[output], tools=TOOLS, previous_response_id=done["id"]))
            text = "".join(f["delta"] for f in second if f["type"] == "response.output_text.delta")
            assert text == "Two files: a.txt and b.txt."
            assert [f["sequence_number"] for f in second] == sorted(f["sequence_number"] for f in second)
    finally:
        server.stop()
    assert session.replay is not None and session.replay.status()["model_calls_served"] == 2


def test_a_diverging_turn_gets_the_apis_error_frame_with_the_divergence_report(tmp_path: Path) -> None:
    session = replay_session(_record_two_turns(tmp_path))
    server, url = _served_socket(session)
    try:
        with connect(url) as conn:
            changed = {**USER, "content": [{"type": "input_text", "text": "What's in the other folder?"}]}
            frames = _turn(conn, _create(input=[changed], tools=TOOLS))
            assert len(frames) == 1 and frames[0]["type"] == "error" and frames[0]["status"] == 400
            assert frames[0]["error"]["type"] == "replay_divergence"
            assert "other folder" in frames[0]["error"]["message"]
            bad = _turn(conn, {"type": "session.update"})
            assert bad[0]["type"] == "error" and "not a model call" in bad[0]["error"]["message"]
    finally:
        server.stop()


def test_an_unregistered_path_is_not_upgraded(tmp_path: Path) -> None:
    session = replay_session(_record_two_turns(tmp_path))
    server, url = _served_socket(session)
    try:
        with pytest.raises(Exception, match="404"):
            connect(url.rsplit("/", 1)[0] + "/not-a-token", open_timeout=60).close()
    finally:
        server.stop()
