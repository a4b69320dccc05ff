"""AWS's event-stream framing (codecs/common/eventstream.py), checked against botocore's own decoder."""

from __future__ import annotations

import json
import struct
import zlib

import pytest
from botocore.eventstream import EventStreamBuffer

from blackbox_mitm.codecs import bedrock, parse_stream
from blackbox_mitm.codecs.base import CallIds, SseEvent
from blackbox_mitm.codecs.common.eventstream import EventStreamError, EventStreamParser, encode_message, frame_events

HEADERS = [(":event-type", "chunk"), (":content-type", "application/json"), (":message-type", "event")]


def _botocore(body: bytes) -> list[tuple[dict[str, object], bytes]]:
    buffer = EventStreamBuffer()
    buffer.add_data(body)
    return [(dict(m.headers), m.payload) for m in buffer]


def test_botocore_decodes_what_we_encode_crcs_included() -> None:
    payload = json.dumps({"bytes": "eyJ0eXBlIjoibWVzc2FnZV9zdG9wIn0=", "note": "ß 日本"}).encode()
    body = encode_message(HEADERS, payload) + encode_message(HEADERS, b"{}")
    decoded = _botocore(body)
    assert decoded == [(dict(HEADERS), payload), (dict(HEADERS), b"{}")]


def test_we_decode_what_botocore_accepts_fed_a_byte_at_a_time() -> None:
    events = [SseEvent("chunk", '{"a": 1}'), SseEvent("exception:throttlingException", '{"message": "slow down"}')]
    body = frame_events(events)
    assert len(_botocore(body)) == 2  # botocore checks both CRCs
    parser = EventStreamParser()
    got = [ev for i in range(len(body)) for _, ev in parser.feed_blocks(body[i : i + 1]) if ev is not None]
    assert got == events
    assert parser.rest() == b""


def test_a_corrupt_message_is_a_named_error_like_botocore_raises() -> None:
    body = bytearray(encode_message(HEADERS, b'{"x": 1}'))
    body[-6] ^= 0xFF  # a payload byte: the message CRC no longer matches
    with pytest.raises(EventStreamError, match="CRC"):
        EventStreamParser().feed_blocks(bytes(body))
    with pytest.raises(Exception, match="Checksum mismatch"):
        _botocore(bytes(body))


def test_a_bad_prelude_is_refused_before_waiting_for_bytes_that_never_come() -> None:
    prelude = struct.pack(">II", 1 << 30, 0)
    with pytest.raises(EventStreamError):
        EventStreamParser().feed_blocks(prelude + struct.pack(">I", zlib.crc32(prelude)))
    with pytest.raises(EventStreamError, match="prelude"):
        EventStreamParser().feed_blocks(b"event: x\ndata: {}\n\n")  # SSE is not an event stream


def test_a_synthesized_bedrock_stream_is_botocore_chunks_of_anthropic_events() -> None:
    request = bedrock.decode_request(
        b'{"anthropic_version": "bedrock-2023-05-31", "max_tokens": 5, "messages": []}',
        CallIds(),
        path="/model/m/invoke-with-response-stream",
    )
    body = bedrock.encode_stream({"type": "final_answer", "text": "hi"}, request=request, ids=CallIds(), created_ms=0)
    messages = _botocore(body)
    assert {h[":event-type"] for h, _ in messages} == {"chunk"}
    kinds = [ev.event for ev in parse_stream(bedrock, body)]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"


@pytest.mark.parametrize(
    ("segment", "neutral"),
    [
        ("arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-x-v1%3A0", "us.anthropic.claude-x-v1:0"),
        ("arn:aws:bedrock:eu-west-1::foundation-model%2Fanthropic.claude-y", "anthropic.claude-y"),
        ("anthropic.claude-3-5-haiku-20241022-v1:0", "anthropic.claude-3-5-haiku-20241022-v1:0"),
    ],
)
def test_the_model_is_the_id_without_region_account_or_partition(segment: str, neutral: str) -> None:
    request = bedrock.decode_request(b'{"max_tokens": 5, "messages": []}', CallIds(), path=f"/model/{segment}/invoke")
    assert request.model_input["model"] == neutral
    assert "123456789012" not in json.dumps(request.model_input) and "us-east-1" not in json.dumps(request.model_input)
    assert request.model is not None and request.model.endswith(neutral)  # a replay echoes what was sent
