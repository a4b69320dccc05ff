"""Audio answers through the session engine (no proxy): OpenAI chat ``message.audio`` and Gemini speech ``inlineData``.

Recorded: the bytes once in ``RUN.media.json``, the transcript as the text, no
provider id in the cassette, ``verify`` passing. Replayed: the same bytes, whole
and streamed, and a next turn that refers to the audio by the id the replay
served matches the recorded turn that referred to it by the provider's id.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.cassette.media import load_media, media_path
from blackbox_mitm.codecs.base import SseEvent
from blackbox_mitm.codecs.verified import verify_file
from blackbox_mitm.session.build import record_session, replay_session
from blackbox_mitm.session.engine import Answer, Forward, ModelRequest

WAV = b"RIFF\x24\x08\x00\x00WAVEfmt " + bytes(range(256)) * 8
PCM = bytes(range(0, 256, 3)) * 40
NATIVE = "audio_6772b6a0f9a48190a1b2c3d4e5f60718"
CHAT = "/v1/chat/completions"
TTS = "/v1beta/models/gemini-2.5-flash-preview-tts:generateContent"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _chat_body(audio_id: str | None) -> bytes:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Say hello."}]
    if audio_id is not None:
        messages += [{"role": "assistant", "content": None, "audio": {"id": audio_id}}, {"role": "user", "content": "Again."}]
    body = {
        "model": "gpt-4o-audio-preview",
        "modalities": ["text", "audio"],
        "audio": {"voice": "alloy", "format": "wav"},
        "messages": messages,
    }
    return json.dumps(body).encode()


def _chat_answer(transcript: str) -> bytes:
    audio = {"id": NATIVE, "data": base64.b64encode(WAV).decode(), "expires_at": 1_764_003_600, "transcript": transcript}
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None, "audio": audio, "annotations": []}
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}
    return orjson.dumps(
        {"id": "chatcmpl-Zz9", "object": "chat.completion", "created": 1_764_000_000, "model": "gpt-4o-audio-preview", "choices": [choice]}
    )


def _forward(session: Any, path: str, body: bytes, answer: bytes | list[SseEvent]) -> None:
    action = session.on_request(ModelRequest(path=path, headers={}, body=body))
    assert isinstance(action, Forward), action
    assert session.on_response(action.ticket, 200, answer) is None


def test_a_chat_audio_answer_and_a_turn_that_refers_to_it_record_and_replay(tmp_path: Path) -> None:
    cassette = tmp_path / "speak.json"
    session = record_session(cassette)
    _forward(session, CHAT, _chat_body(None), _chat_answer("Hello!"))
    _forward(session, CHAT, _chat_body(NATIVE), _chat_answer("Hello!"))
    assert session.recorder is not None
    session.recorder.finish(cassette, exit_code=0)
    text = cassette.read_text()
    assert NATIVE not in text and "chatcmpl-Zz9" not in text  # no provider id in the cassette
    trace = load_trace(cassette)
    outputs = [s.payload for s in trace.steps if s.type == "model_output"]
    assert outputs[0]["text"] == "Hello!" and outputs[0]["content"][0]["sha256"] == _sha(WAV)
    document = load_media(cassette, trace)
    assert document is not None and list(document["media"]) == [_sha(WAV)]  # stored once
    assert verify_file(cassette).ok

    replay = replay_session(cassette)
    first = replay.on_request(ModelRequest(path=CHAT, headers={}, body=_chat_body(None)))
    assert isinstance(first, Answer) and first.status == 200, first
    audio = json.loads(first.body)["choices"][0]["message"]["audio"]
    assert base64.b64decode(audio["data"]) == WAV and audio["id"].startswith("audio_bb")
    second = replay.on_request(ModelRequest(path=CHAT, headers={}, body=_chat_body(audio["id"])))
    assert isinstance(second, Answer) and second.status == 200, second  # the served id matched the recorded native one


def _tts_body() -> bytes:
    config = {"responseModalities": ["AUDIO"], "speechConfig": {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}}}
    return json.dumps(
        {"contents": [{"role": "user", "parts": [{"text": "Say cheerfully: have a nice day"}]}], "generationConfig": config}
    ).encode()


def _tts_chunk(data: bytes, finish: str | None) -> dict[str, Any]:
    candidate: dict[str, Any] = {
        "content": {
            "role": "model",
            "parts": [{"inlineData": {"mimeType": "audio/L16;codec=pcm;rate=24000", "data": base64.b64encode(data).decode()}}],
        },
        "index": 0,
    }
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 40, "totalTokenCount": 49}}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_gemini_speech_answer_records_and_replays_byte_identical(tmp_path: Path, stream: bool) -> None:
    cassette = tmp_path / "tts.json"
    path = TTS.replace("generateContent", "streamGenerateContent?alt=sse") if stream else TTS
    halves = [PCM[:1000], PCM[1000:]]
    session = record_session(cassette)
    if stream:  # TTS streams its audio as several inlineData chunks
        _forward(
            session, path, _tts_body(), [SseEvent(None, json.dumps(_tts_chunk(h, "STOP" if k else None))) for k, h in enumerate(halves)]
        )
    else:
        _forward(session, path, _tts_body(), orjson.dumps(_tts_chunk(PCM, "STOP")))
    assert session.recorder is not None
    session.recorder.finish(cassette, exit_code=0)
    trace = load_trace(cassette)
    step_input = next(s.payload for s in trace.steps if s.type == "model_input")
    assert step_input["params"]["modalities"] == ["AUDIO"] and step_input["params"]["speechConfig"]["voiceConfig"]
    output = next(s.payload for s in trace.steps if s.type == "model_output")
    assert [p["type"] for p in output["content"]] == ["audio"] * (2 if stream else 1)
    assert output["content"][0]["mediaType"] == "audio/L16;codec=pcm;rate=24000"
    assert media_path(cassette).exists() and verify_file(cassette).ok

    answer = replay_session(cassette).on_request(ModelRequest(path=path, headers={}, body=_tts_body()))
    assert isinstance(answer, Answer) and answer.status == 200, answer
    if stream:
        events = [json.loads(line[6:]) for line in answer.body.decode().splitlines() if line.startswith("data: ")]
        parts = [p for e in events for p in e["candidates"][0]["content"]["parts"]]
    else:
        parts = json.loads(answer.body)["candidates"][0]["content"]["parts"]
    assert b"".join(base64.b64decode(p["inlineData"]["data"]) for p in parts) == PCM
