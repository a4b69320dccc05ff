"""End to end: audio answers through a real proxy, with the real ``openai`` and ``google-genai`` Python SDKs.

OpenAI chat completions with ``modalities=["text", "audio"]``: the fake provider
(examples/fake_provider.py) answers with ``message.audio`` (whole) or
``delta.audio`` pieces (streamed), and the agent's next turn refers to the audio
by its id. Gemini with ``response_modalities=["AUDIO"]``: the fake Gemini API
(examples/fake_gemini.py) answers with ``inlineData`` PCM audio. Each run is
recorded, verified, then replayed strictly offline (the fake stopped, no key):
the agent prints the same, and the audio bytes it writes are the recorded ones.
The provider's audio id is nowhere in the cassette.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import blackbox, remote_args
from fake_gemini import FakeGemini
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.cassette.media import load_media

pytestmark = pytest.mark.e2e

NATIVE = "audio_6772b6a0f9a48190a1b2c3d4e5f60718"
CREATED = 1_764_000_000
WAV = b"RIFF\x24\x40\x00\x00WAVEfmt " + bytes(range(256)) * 64  # 16 KiB, made here: the test owns its bytes
PCM = bytes(range(7, 256, 2)) * 100
GEMINI_KEY = "AIzaSyBx9Q2mZ7kL4pW1cV8nR3tY6uH0jF5dG2a"  # the shape of a Google API key; never a real one

CHAT_AGENT = """
import base64, hashlib, sys
from openai import OpenAI

client = OpenAI()
mode, out = sys.argv[1], sys.argv[2]
kw = dict(model="gpt-4o-audio-preview", modalities=["text", "audio"], audio={"voice": "alloy", "format": "pcm16" if mode == "stream" else "wav"})
messages = [{"role": "user", "content": "Say hello."}]
if mode == "stream":
    data, transcript, audio_id = b"", "", None
    for chunk in client.chat.completions.create(messages=messages, stream=True, **kw):
        for choice in chunk.choices:
            a = choice.delta.audio
            if a is not None:
                audio_id = audio_id or a.id
                transcript += a.transcript or ""
                data += base64.b64decode(a.data) if a.data else b""
else:
    m = client.chat.completions.create(messages=messages, **kw).choices[0].message
    data, transcript, audio_id = base64.b64decode(m.audio.data), m.audio.transcript, m.audio.id
open(out, "wb").write(data)
print(transcript, len(data), hashlib.sha256(data).hexdigest())
messages += [{"role": "assistant", "audio": {"id": audio_id}}, {"role": "user", "content": "Now slower."}]
again = client.chat.completions.create(messages=messages, **kw).choices[0].message
print(again.audio.transcript, hashlib.sha256(base64.b64decode(again.audio.data)).hexdigest())
"""

GEMINI_AGENT = """
import hashlib, sys
from google import genai
from google.genai import types

client = genai.Client(http_options=types.HttpOptions(client_args={"trust_env": True}))
voice = types.SpeechConfig(voice_config=types.VoiceConfig(prebuilt_voice_config=types.PrebuiltVoiceConfig(voice_name="Kore")))
config = types.GenerateContentConfig(response_modalities=["AUDIO"], speech_config=voice)
model, prompt = "gemini-2.5-flash-preview-tts", "Say cheerfully: have a wonderful day!"
if sys.argv[1] == "stream":
    parts = [p for c in client.models.generate_content_stream(model=model, contents=prompt, config=config) for p in c.candidates[0].content.parts]
else:
    parts = client.models.generate_content(model=model, contents=prompt, config=config).candidates[0].content.parts
data = b"".join(p.inline_data.data for p in parts if p.inline_data is not None)
open(sys.argv[2], "wb").write(data)
print(parts[0].inline_data.mime_type, len(data), hashlib.sha256(data).hexdigest())
"""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _chat_body(transcript: str, data: bytes) -> dict[str, Any]:
    audio = {"id": NATIVE, "data": _b64(data), "expires_at": CREATED + 3600, "transcript": transcript}
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None, "audio": audio, "annotations": []}
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}
    return {"id": "chatcmpl-AudioA1", "object": "chat.completion", "created": CREATED, "model": "gpt-4o-audio-preview", "choices": [choice]}


def _chat_events(transcript: str, data: bytes) -> list[Any]:
    """A stream as OpenAI sends one: the id with the first transcript piece, data pieces (each its own base64), the expiry."""
    head = {"id": "chatcmpl-AudioS1", "object": "chat.completion.chunk", "created": CREATED, "model": "gpt-4o-audio-preview"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    cuts = [0, 3001, 9000, len(data)]
    return [
        chunk({"role": "assistant", "content": None, "refusal": None}),
        chunk({"audio": {"id": NATIVE, "transcript": transcript[:4]}}),
        chunk({"audio": {"transcript": transcript[4:]}}),
        *[chunk({"audio": {"data": _b64(data[a:b])}}) for a, b in itertools.pairwise(cuts)],
        chunk({"audio": {"expires_at": CREATED + 3600}}),
        chunk({}, "stop"),
        "[DONE]",
    ]


def _replay(cassette: Path, confdir: Path, argv: list[str], drop: str) -> Any:
    env = {k: v for k, v in os.environ.items() if k != drop}
    return blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *argv, env=env)


@pytest.mark.parametrize("mode", ["whole", "stream"])
def test_openai_chat_audio_records_and_replays_offline_byte_identical(mode: str, tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "speak.py"
    agent.write_text(CHAT_AGENT)
    cassette = tmp_path / "speak.json"
    first = {"raw_events": _chat_events("Hello there!", WAV)} if mode == "stream" else {"raw": _chat_body("Hello there!", WAV)}
    script = [first, {"raw": _chat_body("Hello... there.", WAV[::-1])}]
    recorded, replayed = tmp_path / "recorded.audio", tmp_path / "replayed.audio"
    with FakeProvider(script) as fake:
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *remote_args(fake.url), "--",
                       sys.executable, str(agent), mode, str(recorded))  # fmt: skip
        assert rec.returncode == 0, rec.stderr
        assert fake.requests[1]["body"]["messages"][1] == {"role": "assistant", "audio": {"id": NATIVE}}  # the provider's id went back
    assert rec.stdout.splitlines() == [
        f"Hello there! {len(WAV)} {hashlib.sha256(WAV).hexdigest()}",
        f"Hello... there. {hashlib.sha256(WAV[::-1]).hexdigest()}",
    ]
    assert recorded.read_bytes() == WAV
    assert NATIVE not in cassette.read_text() and "chatcmpl-Audio" not in cassette.read_text()
    trace = load_trace(cassette)
    document = load_media(cassette, trace)
    assert document is not None and sorted(document["media"]) == sorted(hashlib.sha256(b).hexdigest() for b in (WAV, WAV[::-1]))
    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0, checked.stdout

    rep = _replay(cassette, confdir, [sys.executable, str(agent), mode, str(replayed)], "OPENAI_API_KEY")
    assert rep.returncode == 0, rep.stderr  # strict: the second turn's served audio id matched the recorded one
    assert rep.stdout == rec.stdout
    assert replayed.read_bytes() == WAV  # byte for byte


@pytest.mark.parametrize("mode", ["whole", "stream"])
def test_gemini_speech_records_and_replays_offline_byte_identical(mode: str, tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "tts.py"
    agent.write_text(GEMINI_AGENT)
    cassette = tmp_path / "tts.json.zst"
    mime = "audio/L16;codec=pcm;rate=24000"
    pieces = [PCM[:5000], PCM[5000:]] if mode == "stream" else [PCM]
    recorded, replayed = tmp_path / "recorded.pcm", tmp_path / "replayed.pcm"
    remote = ["--map-remote", r"|https://generativelanguage\.googleapis\.com|"]
    with FakeGemini(script=[{"audio": [{"mimeType": mime, "data": _b64(p)} for p in pieces]}]) as fake:
        remote[1] += fake.url
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *remote, "--",
                       sys.executable, str(agent), mode, str(recorded), env={"GEMINI_API_KEY": GEMINI_KEY})  # fmt: skip
        assert rec.returncode == 0, rec.stderr
    assert rec.stdout.split() == [mime, str(len(PCM)), hashlib.sha256(PCM).hexdigest()]
    assert recorded.read_bytes() == PCM
    trace = load_trace(cassette)
    step_input = next(s.payload for s in trace.steps if s.type == "model_input")
    assert step_input["params"]["modalities"] == ["AUDIO"] and "Kore" in str(step_input["params"]["speechConfig"])
    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0, checked.stdout

    rep = _replay(cassette, confdir, [sys.executable, str(agent), mode, str(replayed)], "GEMINI_API_KEY")
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert replayed.read_bytes() == PCM
