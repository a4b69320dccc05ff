"""The pacer's schedule for --pace: a streamed answer spread over the recorded call's time, a whole body sent after it.

No test here depends on the clock: the pacer's waits are recorded (and return at
once), the pacer's clock is a fake one that moves only by the waits it asks for,
and the bytes that arrive are checked.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest

from blackbox_mitm.proxy import pacing
from blackbox_mitm.proxy.pacing import StreamPacer, event_offsets

SSE = b"event: a\ndata: 1\n\nevent: b\ndata: 2\n\nevent: c\ndata: 3\n\nevent: d\ndata: 4\n\n"


class RecordedWaits(threading.Event):
    """An Event whose waits return at once, are written down (in seconds), and move the fake clock by as much."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float] = []
        self.clock = 1000.0

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(round(timeout or 0.0, 3))
        self.clock += timeout or 0.0
        return False


@pytest.fixture
def pacer(monkeypatch: pytest.MonkeyPatch) -> Iterator[StreamPacer]:
    p = StreamPacer(0)
    stopping = RecordedWaits()
    p._stopping = stopping
    monkeypatch.setattr(pacing, "time", SimpleNamespace(monotonic=lambda: stopping.clock))  # the pacer's clock only
    p.start()
    yield p
    p._stopping = threading.Event()
    p.stop()


def fetch(url: str) -> tuple[int, str, bytes]:
    parts = urlsplit(url)
    assert parts.hostname is not None
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request("POST", parts.path, body=b"{}")
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, resp.headers.get("content-type", ""), body


@pytest.mark.parametrize(
    ("n", "total", "expected"),
    [(0, 100, []), (1, 100, [100.0]), (2, 100, [0.0, 100.0]), (5, 1000, [0.0, 250.0, 500.0, 750.0, 1000.0]), (3, -5, [0.0, 0.0, 0.0])],
)
def test_event_offsets_spread_evenly_with_the_last_at_the_total(n: int, total: float, expected: list[float]) -> None:
    assert event_offsets(n, total) == expected


def test_a_paced_stream_waits_until_each_events_turn(pacer: StreamPacer) -> None:
    url = pacer.register(200, {"content-type": "text/event-stream"}, SSE, total_ms=3000)
    status, ctype, body = fetch(url)
    assert (status, ctype, body) == (200, "text/event-stream", SSE)
    waits = pacer._stopping.waits  # type: ignore[attr-defined]
    # four events, due 0, 1, 2 and 3 s after the request: each wait is what is left until its event is due
    # (the clock moves by the waits alone, so what is left is exactly the gap to the next event)
    assert waits == [0.0, 1.0, 1.0, 1.0]


def test_a_whole_body_is_sent_once_the_call_has_taken_as_long(pacer: StreamPacer) -> None:
    body = b'{"type":"message","content":[]}'
    url = pacer.register(200, {"content-type": "application/json"}, body, total_ms=1500, stream=False)
    assert fetch(url) == (200, "application/json", body)
    assert pacer._stopping.waits == [1.5]  # type: ignore[attr-defined]


def test_without_a_total_the_stream_delay_applies_between_events(pacer: StreamPacer) -> None:
    pacer.delay_ms = 40
    url = pacer.register(200, {"content-type": "text/event-stream"}, SSE)
    assert fetch(url)[2] == SSE
    assert pacer._stopping.waits == [0.04, 0.04, 0.04]  # type: ignore[attr-defined]


def test_a_body_is_played_once(pacer: StreamPacer) -> None:
    url = pacer.register(200, {"content-type": "text/event-stream"}, SSE, total_ms=10)
    assert fetch(url)[0] == 200
    assert fetch(url)[0] == 404


def test_a_held_stream_sends_its_last_event_only_once_released() -> None:
    """Two overlapping answers fetched at once: the one recorded second ends after the first, by the scheduler's log."""
    from blackbox_mitm.cassette import Trace
    from blackbox_mitm.matcher.recorded import recorded_calls_of
    from blackbox_mitm.session.release import ReleaseOrder

    trace = Trace.new("held-1", created_at=0)
    for i, (start, end) in enumerate([(0, 100), (1, 103)]):
        trace.append("model_input", {"messages": [{"role": "user", "content": f"call {i}"}], "tools": []}, timestamp=start)
        trace.append("model_output", {"type": "final_answer", "text": f"answer {i}"}, timestamp=end)
    # The agent's next turn takes both answers in: what makes their order one to keep (session/perceived.py).
    trace.append("model_input", {"messages": [{"role": "user", "content": "answer 0; answer 1"}], "tools": []}, timestamp=200)
    trace.append("model_output", {"type": "final_answer", "text": "noted"}, timestamp=210)
    order = ReleaseOrder(recorded_calls_of(trace), gap_ms=20)
    p = StreamPacer(0).start()
    try:
        second = p.register(200, {"content-type": "text/event-stream"}, SSE, hold=order.hold(1))
        first = p.register(200, {"content-type": "application/json"}, b'{"a": 1}', stream=False, hold=order.hold(0))
        results: dict[str, tuple[int, str, bytes]] = {}
        threads = [
            threading.Thread(target=lambda k=k, u=u: results.__setitem__(k, fetch(u))) for k, u in (("second", second), ("first", first))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    finally:
        p.stop()
    assert results["second"] == (200, "text/event-stream", SSE)  # every event, the last one after the release
    assert results["first"][2] == b'{"a": 1}'
    releases = order.releases
    assert [r.call for r in releases] == [0, 1]
    assert releases[1].after == 0 and releases[1].at_ms >= releases[0].at_ms + 20
