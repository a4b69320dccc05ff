"""OpenAI chat-completions audio output (codecs/openai_chat/audio.py): the answer's audio, streamed and whole, and its id.

The transcript is the neutral answer's text, the bytes become an ``audio`` part
(their digest; the bytes go to the run's media), the provider's ``audio_…`` id
never appears in a payload, and an assistant message that refers to the audio
by id decodes to the same part at record (the native id) and at replay (the id
we served).
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest

from blackbox_mitm.cassette.media import collecting, resolving
from blackbox_mitm.codecs import openai_chat
from blackbox_mitm.codecs.base import CallIds, DecodedRequest, StreamIncomplete
from blackbox_mitm.codecs.sse import parse_sse
from blackbox_mitm.errors import BlackboxUnsupportedError

AUDIO = bytes(range(256)) * 80  # 20 KiB: several streamed data pieces
SHA = hashlib.sha256(AUDIO).hexdigest()
NATIVE = "audio_6772b6a0f9a48190a1b2c3d4e5f60718"
CREATED = 1_764_000_000


def _request(ids: CallIds, messages: list[dict[str, Any]] | None = None, *, fmt: str = "wav", stream: bool = False) -> DecodedRequest:
    body: dict[str, Any] = {
        "model": "gpt-4o-audio-preview",
        "modalities": ["text", "audio"],
        "audio": {"voice": "alloy", "format": fmt},
        "messages": messages or [{"role": "user", "content": "Say hello."}],
    }
    if stream:
        body["stream"] = True
    return openai_chat.decode_request(json.dumps(body).encode(), ids)


def _answer(**audio: Any) -> dict[str, Any]:
    wire = {"id": NATIVE, "data": base64.b64encode(AUDIO).decode(), "expires_at": CREATED + 3600, "transcript": "Hello there!", **audio}
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None, "audio": wire, "annotations": []}
    return {
        "id": "chatcmpl-AbC123",
        "object": "chat.completion",
        "created": CREATED,
        "model": "gpt-4o-audio-preview",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
    }


def _decode(ids: CallIds, request: DecodedRequest, answer: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    with collecting() as media:
        out = openai_chat.decode_response(json.dumps(answer or _answer()).encode(), ids, request)
    return dict(out), media


def test_the_request_keeps_the_voice_and_format_as_compared_params() -> None:
    params = _request(CallIds()).model_input["params"]
    assert params["modalities"] == ["text", "audio"] and params["audio"] == {"voice": "alloy", "format": "wav"}


def test_an_audio_answer_is_the_transcript_and_an_audio_part_by_digest() -> None:
    ids = CallIds()
    out, media = _decode(ids, _request(ids))
    part = {"type": "audio", "mediaType": "audio/wav", "sha256": SHA, "size": len(AUDIO), "transcript": "Hello there!", "expiresIn": 3600}
    assert out == {"type": "final_answer", "text": "Hello there!", "content": [part]}
    assert media == {SHA: ("audio/wav", AUDIO)}  # the bytes go to the run's media file
    assert NATIVE not in json.dumps(out) and "chatcmpl-AbC123" not in json.dumps(out)


@pytest.mark.parametrize(
    ("fmt", "media_type"), [("pcm16", "audio/pcm"), ("mp3", "audio/mpeg"), ("opus", "audio/opus"), ("flac", "audio/flac")]
)
def test_the_media_type_comes_from_the_requested_format(fmt: str, media_type: str) -> None:
    ids = CallIds()
    out, _ = _decode(ids, _request(ids, fmt=fmt))
    assert out["content"][0]["mediaType"] == media_type


def test_the_served_answer_is_the_recorded_bytes_under_our_own_id() -> None:
    ids = CallIds()
    request = _request(ids)
    out, _ = _decode(ids, request)
    created_ms = CREATED * 1000 + 250
    with resolving({SHA: AUDIO}):
        served = openai_chat.encode_response(out, request=request, ids=CallIds(), created_ms=created_ms)
    message = served["choices"][0]["message"]
    assert message["content"] is None and message["refusal"] is None
    audio = message["audio"]
    assert base64.b64decode(audio["data"]) == AUDIO and audio["transcript"] == "Hello there!"
    assert audio["id"].startswith("audio_bb") and audio["id"] != NATIVE
    assert audio["expires_at"] == CREATED + 3600  # the recorded lifetime, from the served answer's own time


def test_a_history_that_refers_to_the_audio_matches_at_record_and_at_replay() -> None:
    def history(audio_id: str) -> list[dict[str, Any]]:
        return [
            {"role": "user", "content": "Say hello."},
            {"role": "assistant", "audio": {"id": audio_id}},
            {"role": "user", "content": "Again, slower."},
        ]

    recording = CallIds()
    out, _ = _decode(recording, _request(recording))
    recorded = _request(recording, history(NATIVE)).model_input
    replaying = CallIds()
    with resolving({SHA: AUDIO}):
        served = openai_chat.encode_response(out, request=_request(replaying), ids=replaying, created_ms=CREATED * 1000)
    replayed = _request(replaying, history(served["choices"][0]["message"]["audio"]["id"])).model_input
    assert recorded == replayed
    assert recorded["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "audio", "mediaType": "audio/wav", "sha256": SHA, "size": len(AUDIO)}],
    }
    assert NATIVE not in json.dumps(recorded)


def test_an_audio_id_no_answer_of_the_run_carried_is_refused_by_name() -> None:
    with pytest.raises(BlackboxUnsupportedError) as caught:
        _request(CallIds(), [{"role": "user", "content": "hi"}, {"role": "assistant", "audio": {"id": "audio_from_elsewhere"}}])
    assert "messages[1].audio.id" in str(caught.value) and "audio ids of the answers it recorded or served" in str(caught.value)


@pytest.mark.parametrize(
    ("audio", "field"),
    [
        ({"data": 5}, "choices[0].message.audio"),
        ({"data": "@@@"}, "choices[0].message.audio.data"),
        ({"transcript": 1}, "choices[0].message.audio.transcript"),
    ],
)
def test_unreadable_audio_is_a_clear_error_naming_the_field(audio: dict[str, Any], field: str) -> None:
    ids = CallIds()
    with pytest.raises(BlackboxUnsupportedError) as caught:
        _decode(ids, _request(ids), _answer(**audio))
    assert field in str(caught.value)


def _stream_events(request: DecodedRequest, out: dict[str, Any]) -> list[Any]:
    with resolving({SHA: AUDIO}):
        return parse_sse(openai_chat.encode_stream(out, request=request, ids=CallIds(), created_ms=CREATED * 1000))


def test_a_stream_sends_delta_audio_pieces_that_add_up_to_the_recorded_answer() -> None:
    ids = CallIds()
    request = _request(ids, fmt="pcm16", stream=True)
    out, _ = _decode(ids, request)
    events = _stream_events(request, out)
    deltas = [json.loads(e.data)["choices"][0]["delta"] for e in events[:-1] if json.loads(e.data)["choices"]]
    audio = [d["audio"] for d in deltas if "audio" in d]
    assert sum("id" in a for a in audio) == 1 and "id" in audio[0]  # the id once: accumulators concatenate strings
    data = [a["data"] for a in audio if "data" in a]
    assert len(data) > 1 and all(len(p) % 4 == 0 for p in data[:-1])  # each piece decodes alone
    assert b"".join(base64.b64decode(p) for p in data) == AUDIO
    assert "".join(a.get("transcript", "") for a in audio) == "Hello there!"
    whole = openai_chat.aggregate_stream(events)
    again, media = _decode(CallIds(), request, whole)
    assert again == out and media == {SHA: ("audio/pcm", AUDIO)}


def test_a_provider_stream_whose_pieces_each_carry_padding_adds_up_to_the_bytes() -> None:
    pieces = [AUDIO[:1001], AUDIO[1001:5000], AUDIO[5000:]]  # padded base64 each: joined as text they would not decode
    head = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": CREATED, "model": "m"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> Any:
        from blackbox_mitm.codecs.base import SseEvent

        return SseEvent(None, json.dumps({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}))

    from blackbox_mitm.codecs.base import SseEvent

    events = [
        chunk({"role": "assistant", "content": None}),
        chunk({"audio": {"id": NATIVE, "transcript": "Hello "}}),
        chunk({"audio": {"transcript": "there!"}}),
        *[chunk({"audio": {"data": base64.b64encode(p).decode()}}) for p in pieces],
        chunk({"audio": {"expires_at": CREATED + 60}}),
        chunk({}, "stop"),
        SseEvent(None, "[DONE]"),
    ]
    ids = CallIds()
    out, media = _decode(ids, _request(ids, fmt="pcm16", stream=True), openai_chat.aggregate_stream(events))
    assert out["text"] == "Hello there!" and out["content"][0]["expiresIn"] == 60 and media[SHA][1] == AUDIO


def test_a_stream_piece_that_is_not_base64_means_the_call_did_not_complete() -> None:
    from blackbox_mitm.codecs.base import SseEvent

    bad = {"id": "c", "created": 1, "model": "m", "choices": [{"index": 0, "delta": {"audio": {"data": "@@@"}}, "finish_reason": None}]}
    with pytest.raises(StreamIncomplete, match="malformed"):
        openai_chat.aggregate_stream([SseEvent(None, json.dumps(bad)), SseEvent(None, "[DONE]")])


def test_audio_beside_tool_calls_keeps_both() -> None:
    ids = CallIds()
    answer = _answer()
    message = answer["choices"][0]["message"]
    message["tool_calls"] = [{"id": "call_Xy", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]
    answer["choices"][0]["finish_reason"] = "tool_calls"
    out, _ = _decode(ids, _request(ids), answer)
    assert out["type"] == "tool_calls" and out["text"] == "Hello there!" and out["content"][0]["sha256"] == SHA
    with resolving({SHA: AUDIO}):
        served = openai_chat.encode_response(out, request=_request(ids), ids=CallIds(), created_ms=0)["choices"][0]
    assert served["finish_reason"] == "tool_calls" and served["message"]["content"] is None
    assert (
        base64.b64decode(served["message"]["audio"]["data"]) == AUDIO and served["message"]["tool_calls"][0]["function"]["name"] == "lookup"
    )


def _served(ids: CallIds) -> str:
    """The audio id a replay served for the recorded answer (mapped in ``ids``)."""
    out, _ = _decode(CallIds(), _request(CallIds()))
    with resolving({SHA: AUDIO}):
        served = openai_chat.encode_response(out, request=_request(ids), ids=ids, created_ms=CREATED * 1000)
    audio_id: str = served["choices"][0]["message"]["audio"]["id"]
    return audio_id


def test_after_a_forks_cut_a_served_audio_id_goes_upstream_as_its_transcript() -> None:
    ids = CallIds()
    served = _served(ids)
    body: dict[str, Any] = {
        "model": "gpt-4o-audio-preview",
        "messages": [
            {"role": "user", "content": "Say hello."},
            {"role": "assistant", "audio": {"id": served}},
            {"role": "assistant", "content": "And more.", "audio": {"id": served}},
            {"role": "assistant", "audio": {"id": NATIVE}},  # not ours (a live answer after the cut): as sent
            {"role": "user", "content": "Now slower."},
        ],
    }
    forwarded = openai_chat.forward_body(json.dumps(body).encode(), ids)
    assert forwarded is not None
    messages = json.loads(forwarded)["messages"]
    assert messages[1] == {"role": "assistant", "content": "Hello there!"}
    assert messages[2] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hello there!"}, {"type": "text", "text": "And more."}],
    }
    assert messages[3] == {"role": "assistant", "audio": {"id": NATIVE}}
    assert messages[0] == body["messages"][0] and messages[4] == body["messages"][4]
    recorded: Any = _request(ids, body["messages"][:2]).model_input["messages"][1]["content"]
    assert recorded[0]["sha256"] == SHA  # what is recorded: the audio, compared by digest


def test_a_body_without_a_served_audio_id_is_forwarded_as_sent() -> None:
    ids = CallIds()
    _served(ids)
    plain = {"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "audio": {"id": NATIVE}}]}
    assert openai_chat.forward_body(json.dumps(plain).encode(), ids) is None
    assert openai_chat.forward_body(b"not json", ids) is None
