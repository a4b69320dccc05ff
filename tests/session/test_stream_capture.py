"""The stream tee in plain Python: events pass as they arrive, the final one only once the call is durable.

Its edge cases (content encodings, a cut, an error event, a refusal, a full disk) without a proxy;
tests/e2e/test_streaming.py shows the same through real mitmproxy processes and SDKs.
"""

from __future__ import annotations

import errno
import gzip
import json
import zlib
from pathlib import Path
from typing import Any

import pytest

from blackbox_mitm.cassette import journal_path
from blackbox_mitm.cassette.journal import Journal
from blackbox_mitm.codecs import anthropic_messages, openai_chat
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.codecs.sse import parse_sse
from blackbox_mitm.session.build import record_session
from blackbox_mitm.session.engine import Forward, ModelRequest, Session
from blackbox_mitm.session.stream import StreamCapture

TEXT = {"type": "final_answer", "text": "Cloudy in Paris. " * 20}


def _forwarded(session: Session, path: str, body: dict[str, Any]) -> Forward:
    action = session.on_request(ModelRequest(path=path, headers={}, body=json.dumps(body).encode()))
    assert isinstance(action, Forward)
    return action


def _openai(tmp_path: Path) -> tuple[Session, StreamCapture, bytes]:
    session = record_session(tmp_path / "run.json")
    fwd = _forwarded(session, "/v1/chat/completions", {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]})
    request = DecodedRequest("openai", {"messages": [], "tools": []}, stream=True)
    body = openai_chat.encode_stream(TEXT, request=request, ids=CallIds(), created_ms=1)
    return session, StreamCapture(session, fwd.ticket), body


def _journal_outputs(tmp_path: Path) -> int:
    return journal_path(tmp_path / "run.json").read_bytes().count(b'"model_output"')


def _chunks(body: bytes, size: int = 37) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def test_events_pass_on_as_they_arrive_and_the_final_one_after_the_step_is_durable(tmp_path: Path) -> None:
    session, capture, body = _openai(tmp_path)
    events = parse_sse(body)
    out = b""
    for chunk in _chunks(body):
        before = _journal_outputs(tmp_path)
        passed = capture.tee(chunk)
        if b"[DONE]" in passed:
            assert before == 0 and _journal_outputs(tmp_path) == 1  # written before [DONE] went out
        out += passed
    out += capture.tee(b"")
    assert out == body  # the agent gets every byte, in order
    assert len(capture.events) == len(events)
    assert session.recorder is not None and session.recorder.model_calls == 1


def test_an_event_is_passed_on_as_soon_as_it_is_complete(tmp_path: Path) -> None:
    _, capture, body = _openai(tmp_path)
    first_end = body.index(b"\n\n") + 2
    assert capture.tee(body[: first_end - 1]) == b""  # not yet a whole event
    assert capture.tee(body[first_end - 1 : first_end]) == body[:first_end]


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_an_encoded_stream_is_recorded_and_sent_on_decoded(encoding: str, tmp_path: Path) -> None:
    session = record_session(tmp_path / "run.json")
    fwd = _forwarded(session, "/v1/chat/completions", {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]})
    body = openai_chat.encode_stream(
        TEXT, request=DecodedRequest("openai", {"messages": [], "tools": []}, stream=True), ids=CallIds(), created_ms=1
    )
    packed = gzip.compress(body) if encoding == "gzip" else zlib.compress(body)
    capture = StreamCapture(session, fwd.ticket, encoding)
    assert capture.decodes
    out = b"".join(capture.tee(c) for c in _chunks(packed, 11)) + capture.tee(b"")
    assert out == body
    assert session.recorder is not None and session.recorder.model_calls == 1


def test_a_corrupt_encoding_is_not_recorded_and_says_why(tmp_path: Path) -> None:
    session = record_session(tmp_path / "run.json")
    fwd = _forwarded(session, "/v1/chat/completions", {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]})
    capture = StreamCapture(session, fwd.ticket, "gzip")
    capture.tee(b"\x1f\x8b\x08\x00garbage-that-is-not-deflate")
    assert capture.done and any("could not decode" in n for n in session.notes)
    assert session.recorder is not None and session.recorder.model_calls == 0


def test_a_stream_cut_before_its_final_event_records_nothing(tmp_path: Path) -> None:
    session, capture, body = _openai(tmp_path)
    capture.tee(body[: len(body) // 2])
    capture.tee(b"")
    assert any("ended before its final event" in n for n in session.notes)
    assert session.recorder is not None and session.recorder.model_calls == 0 and session.in_flight == 0


def test_the_providers_error_event_is_passed_on_and_not_recorded(tmp_path: Path) -> None:
    session = record_session(tmp_path / "run.json")
    fwd = _forwarded(
        session, "/v1/messages", {"model": "m", "max_tokens": 5, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    )
    capture = StreamCapture(session, fwd.ticket)
    error = b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
    assert capture.tee(error) == error
    assert any("Overloaded" in n for n in session.notes)
    assert session.recorder is not None and session.recorder.model_calls == 0


def test_a_refused_answer_replaces_the_final_event_with_the_providers_error(tmp_path: Path) -> None:
    session = record_session(tmp_path / "run.json")
    fwd = _forwarded(
        session, "/v1/messages", {"model": "m", "max_tokens": 5, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    )
    body = anthropic_messages.encode_stream(
        TEXT, request=DecodedRequest("anthropic", {"messages": [], "tools": []}, stream=True), ids=CallIds(), created_ms=1
    )
    body = body.replace(b'"stop_reason":"end_turn"', b'"stop_reason":"stop_sequence"')
    capture = StreamCapture(session, fwd.ticket)
    out = capture.tee(body) + capture.tee(b"")
    events = parse_sse(out)
    assert events[-1].event == "error" and "stop_sequence" in events[-1].data
    assert not any(e.event == "message_stop" for e in events)
    assert session.refused and session.recorder is not None and session.recorder.model_calls == 0


def test_a_full_disk_at_the_final_event_sends_an_error_instead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session, capture, body = _openai(tmp_path)

    def full(self: Journal, steps: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Journal, "write", full)
    out = capture.tee(body)
    assert b"[DONE]" not in out and b"No space left on device" in out
    last = parse_sse(out)[-1]
    assert json.loads(last.data)["error"]["message"].startswith("blackbox could not record")
    assert session.failed_writes
