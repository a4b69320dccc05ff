"""The fake Responses API's WebSocket mode behaves like the API where the tests depend on it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from fake_responses_ws import FakeResponsesWs
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect
from websockets.sync.connection import Connection

SCRIPT = [{"text": "one"}, {"text": "two"}, {"text": "three"}]


def _turn(ws: Connection, **body: Any) -> list[dict[str, Any]]:
    ws.send(json.dumps({"type": "response.create", "model": "m", **body}))
    events = []
    while True:
        event = json.loads(ws.recv(timeout=10))
        events.append(event)
        if event["type"] in ("response.completed", "error"):
            return events


def _ws(fake: FakeResponsesWs) -> ClientConnection:
    return connect(fake.url.replace("http://", "ws://") + "/v1/responses", proxy=None)


def test_turns_on_one_socket_are_answered_in_order_and_a_warm_up_uses_no_answer() -> None:
    with FakeResponsesWs(SCRIPT) as fake, _ws(fake) as ws:
        warm = _turn(ws, input=[], generate=False)
        assert [e["type"] for e in warm] == ["response.created", "response.completed"]
        first = _turn(ws, input="hi", previous_response_id=warm[-1]["response"]["id"], store=False)
        assert "".join(e["delta"] for e in first if e["type"] == "response.output_text.delta") == "one"
        second = _turn(ws, input="again", previous_response_id=first[-1]["response"]["id"], store=False)
        assert second[-1]["response"]["output"][0]["content"][0]["text"] == "two"
        assert [e["sequence_number"] for e in second] == list(range(len(second)))


def test_a_store_false_response_is_continued_only_on_its_socket() -> None:
    with FakeResponsesWs(SCRIPT) as fake:
        with _ws(fake) as ws:
            first = _turn(ws, input="hi", store=False)
        with _ws(fake) as other:
            error = _turn(other, input="again", previous_response_id=first[-1]["response"]["id"], store=False)
    assert error == [
        {
            "type": "error",
            "status": 400,
            "error": {
                "type": "invalid_request_error",
                "code": "previous_response_not_found",
                "message": f"Previous response with id '{first[-1]['response']['id']}' not found.",
            },
        }
    ]


def test_without_the_transport_the_upgrade_gets_426_and_http_still_answers() -> None:
    with FakeResponsesWs(SCRIPT, websocket=False) as fake:
        with pytest.raises(InvalidStatus, match="426"):
            _ws(fake).close()
        req = urllib.request.Request(
            fake.url + "/v1/responses",
            data=json.dumps({"model": "m", "input": "hi"}).encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = json.loads(resp.read())
    assert body["status"] == "completed" and body["output"][0]["content"][0]["text"] == "one"


def test_a_cut_answer_drops_the_connection_without_a_final_event() -> None:
    with FakeResponsesWs([{"text": "never finished", "cut": True}]) as fake, _ws(fake) as ws:
        ws.send(json.dumps({"type": "response.create", "model": "m", "input": "hi"}))
        seen = []
        with pytest.raises(ConnectionClosed):
            while True:
                seen.append(json.loads(ws.recv(timeout=10))["type"])
    assert seen and "response.completed" not in seen


def test_an_unknown_path_is_a_404() -> None:
    with FakeResponsesWs(SCRIPT) as fake, pytest.raises(urllib.error.HTTPError, match="404"):
        urllib.request.urlopen(fake.url + "/v1/models", timeout=10)
