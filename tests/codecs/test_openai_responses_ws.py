"""The Responses API's WebSocket companion: which messages are calls, warm-ups folded into the turn after, frames."""

from __future__ import annotations

import json

from blackbox_mitm.codecs.openai_responses import websocket as ws
from blackbox_mitm.codecs.websocket_base import CALL, LOCAL, OTHER, WebSocketCodec

_COMPANION: WebSocketCodec = ws  # mypy checks the module against the Protocol

USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}


def _create(**fields: object) -> str:
    return json.dumps({"type": "response.create", "model": "gpt-test", **fields})


def test_a_response_create_is_the_http_body_without_its_socket_keys() -> None:
    turn = ws.read_client(ws.open_socket(), _create(input=[USER], store=False))
    assert turn.kind == CALL
    assert turn.body is not None
    assert json.loads(turn.body) == {"model": "gpt-test", "input": [USER], "store": False, "stream": True}


def test_a_socket_always_streams_even_when_the_message_says_otherwise() -> None:
    turn = ws.read_client(ws.open_socket(), _create(input="hi", stream=False))
    assert turn.body is not None and json.loads(turn.body)["stream"] is True


def test_generate_false_is_a_local_message_not_a_call() -> None:
    turn = ws.read_client(ws.open_socket(), _create(input=[], generate=False))
    assert turn.kind == LOCAL
    assert turn.body is None
    assert turn.message is not None and turn.message["generate"] is False


def test_other_messages_and_unreadable_text_are_named() -> None:
    socket = ws.open_socket()
    other = ws.read_client(socket, json.dumps({"type": "session.update"}))
    assert other.kind == OTHER and "'session.update'" in other.reason
    assert "not JSON" in ws.read_client(socket, "{nope").reason
    assert "JSON list" in ws.read_client(socket, "[1, 2]").reason


def test_a_turn_continuing_a_served_warm_up_carries_the_warm_ups_input_and_no_warm_up_id() -> None:
    socket = ws.open_socket()
    warm = ws.read_client(socket, _create(input=[USER], generate=False, previous_response_id=None))
    assert warm.message is not None
    frames = [json.loads(f) for f in ws.answer_without_call(socket, warm.message)]
    assert [f["type"] for f in frames] == ["response.created", "response.completed"]
    assert frames[1]["response"]["output"] == [] and frames[1]["response"]["status"] == "completed"
    warm_id = frames[0]["response"]["id"]
    assert frames[1]["response"]["id"] == warm_id
    second = {"type": "message", "role": "user", "content": "and then?"}
    turn = ws.read_client(socket, _create(input=[second], previous_response_id=warm_id))
    assert turn.body is not None
    body = json.loads(turn.body)
    assert body["input"] == [USER, second]
    assert "previous_response_id" not in body


def test_an_upstream_warm_ups_id_is_learnt_from_its_events() -> None:
    socket = ws.open_socket()
    ws.read_client(socket, _create(input="first", generate=False, previous_response_id="resp_before"))
    for kind in ("response.created", "response.completed"):
        event = ws.read_server(socket, json.dumps({"type": kind, "response": {"id": "resp_up1", "output": []}}))
        assert event is not None and event.event == kind
    turn = ws.read_client(socket, _create(input="second", previous_response_id="resp_up1"))
    assert turn.body is not None
    body = json.loads(turn.body)
    assert [i["content"] for i in body["input"]] == ["first", "second"]
    assert body["previous_response_id"] == "resp_before"  # the warm-up's own predecessor: a real response


def test_a_turn_continuing_a_real_response_is_left_to_the_codec() -> None:
    socket = ws.open_socket()
    turn = ws.read_client(socket, _create(input=[USER], previous_response_id="resp_real"))
    assert turn.body is not None and json.loads(turn.body)["previous_response_id"] == "resp_real"


def test_server_frames_are_sse_events_of_their_type() -> None:
    socket = ws.open_socket()
    text = json.dumps({"type": "response.output_text.delta", "delta": "Hi", "sequence_number": 3})
    event = ws.read_server(socket, text)
    assert event is not None and event.event == "response.output_text.delta" and event.data == text
    assert ws.read_server(socket, "not json") is None
    assert ws.read_server(socket, json.dumps({"no": "type"})) is None


def test_frames_are_the_sse_events_data() -> None:
    body = (
        b'event: response.created\ndata: {"type":"response.created"}\n\nevent: response.completed\ndata: {"type":"response.completed"}\n\n'
    )
    assert ws.frames(body) == ['{"type":"response.created"}', '{"type":"response.completed"}']


def test_an_http_error_becomes_the_apis_error_frame() -> None:
    body = json.dumps({"error": {"type": "replay_divergence", "code": None, "message": "step 3 differs"}}).encode()
    frame = json.loads(ws.error_frame(400, body))
    assert frame == {"type": "error", "status": 400, "error": {"type": "replay_divergence", "code": None, "message": "step 3 differs"}}
    plain = json.loads(ws.error_frame(502, b"bad gateway"))
    assert plain["status"] == 502 and plain["error"]["message"] == "bad gateway"


def test_only_the_responses_path_opens_a_model_socket() -> None:
    assert ws.accepts("/v1/responses")
    assert ws.accepts("/openai/v1/responses/")
    assert not ws.accepts("/v1/realtime")
