"""A recorded HTTP+SSE stream held open: each JSON-RPC answer goes out once its request was answered."""

from __future__ import annotations

import http.client
import threading

from blackbox_mitm.proxy.sse_hold import SseHold, jsonrpc_ids, sse_events

BODY = (
    b"event: endpoint\r\ndata: /messages/?session_id=abc\r\n\r\n"
    b'event: message\r\ndata: {"jsonrpc":"2.0","id":0,"result":{}}\r\n\r\n'
    b'event: message\r\ndata: {"jsonrpc":"2.0","id":1,"result":{"tools":[]}}\r\n\r\n'
)


def test_events_and_request_ids_are_read() -> None:
    assert len(sse_events(BODY)) == 3
    assert jsonrpc_ids(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}') == {"1"}
    assert jsonrpc_ids(b'{"jsonrpc":"2.0","method":"notifications/initialized"}') == set()
    assert jsonrpc_ids(b"not json") == set()


def test_an_answer_waits_for_its_request_and_the_endpoint_goes_at_once() -> None:
    hold = SseHold()
    try:
        url = hold.register(200, {"content-type": "text/event-stream"}, BODY)
        conn = http.client.HTTPConnection("127.0.0.1", hold.port, timeout=10)
        conn.request("GET", url.split(str(hold.port), 1)[1])
        response = conn.getresponse()
        assert response.status == 200
        first = response.fp.readline() + response.fp.readline() + response.fp.readline()
        assert b"event: endpoint" in first
        got: list[bytes] = []
        reader = threading.Thread(target=lambda: got.extend(response.fp.readline() for _ in range(6)), daemon=True)
        reader.start()
        reader.join(timeout=0.5)
        assert got == []  # nothing released before its request was answered
        hold.release(b'{"jsonrpc":"2.0","id":0,"method":"initialize"}')
        hold.release(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
        reader.join(timeout=10)
        text = b"".join(got)
        assert text.index(b'"id":0') < text.index(b'"id":1')
    finally:
        hold.stop()
