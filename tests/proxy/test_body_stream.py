"""proxy/flows.body_stream: a body chunk the tee turns into nothing is sent as nothing, never as an empty chunk.

mitmproxy sends a stream callable's ``b""`` for a body chunk as a chunk of its own, which in chunked encoding is
the body's end. The end-to-end half is tests/e2e/test_streaming.py's gzip test (one connection for every call).
"""

from __future__ import annotations

from blackbox_mitm.proxy.flows import body_stream


class EventsTee:
    """A tee that passes on complete events only (``b"\\n\\n"``-ended), as StreamCapture does; ``b""`` at the end."""

    def __init__(self) -> None:
        self.buffer = b""

    def __call__(self, chunk: bytes) -> bytes:
        self.buffer += chunk
        complete, _, self.buffer = self.buffer.rpartition(b"\n\n")
        return complete + b"\n\n" if complete else b""


def test_half_an_event_is_sent_as_nothing_and_the_rest_with_its_event() -> None:
    stream = body_stream(EventsTee())
    assert stream(b'data: {"a"') == []  # not b"": that would be a chunk of its own, the body's end
    assert stream(b": 1}\n\n") == b'data: {"a": 1}\n\n'


def test_what_the_tee_sends_is_sent_unchanged_and_the_end_stays_the_end() -> None:
    stream = body_stream(lambda chunk: chunk.upper())
    assert stream(b"data: x\n\n") == b"DATA: X\n\n"
    assert stream(b"") == b""  # the end of the body: mitmproxy sends nothing more for it
