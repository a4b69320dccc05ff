"""End to end: an answer that carries an image, through a real proxy, with the real google-genai SDK.

The fake Gemini API (examples/fake_gemini.py) plays an image model: it answers
with text and an ``inlineData`` PNG. ``blackbox record`` keeps the picture once in
``RUN.media.json`` (sealed by the terminal event); ``blackbox verify`` passes; a
strict offline replay (the fake stopped) gives the SDK the very same bytes,
whole and streamed; a byte changed in the media file fails ``verify`` and the
replay refuses the run.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
from pathlib import Path

import pytest
from conftest import blackbox
from fake_gemini import FakeGemini

from blackbox_mitm.cassette import compression, load_trace
from blackbox_mitm.cassette.media import load_media, media_path

pytestmark = pytest.mark.e2e

KEY = "AIzaSyBx9Q2mZ7kL4pW1cV8nR3tY6uH0jF5dG2a"  # the shape of a Google API key; never a real one
# A 2x2 PNG, made here so the test owns its bytes (a real image: the SDK decodes the base64 to exactly these).
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEUlEQVR4nGP4z8DA8B+MgBgAHfAD/dPQfSYAAAAASUVORK5CYII=")
AGENT = """
import hashlib, sys
from google import genai
from google.genai import types

client = genai.Client(http_options=types.HttpOptions(client_args={"trust_env": True}))
config = types.GenerateContentConfig(response_modalities=["TEXT", "IMAGE"])
if sys.argv[1] == "stream":
    parts = [p for c in client.models.generate_content_stream(model="gemini-2.5-flash-image", contents="Draw a 2x2 tile.", config=config)
             for p in c.candidates[0].content.parts]
else:
    parts = client.models.generate_content(model="gemini-2.5-flash-image", contents="Draw a 2x2 tile.", config=config).candidates[0].content.parts
text = "".join(p.text or "" for p in parts)
images = [p.inline_data for p in parts if p.inline_data is not None]
open(sys.argv[2], "wb").write(images[0].data)
print(text, images[0].mime_type, len(images[0].data), hashlib.sha256(images[0].data).hexdigest())
"""


def _remote(fake: FakeGemini) -> list[str]:
    return ["--map-remote", rf"|https://generativelanguage\.googleapis\.com|{fake.url}"]


@pytest.mark.parametrize("mode", ["whole", "stream"])
def test_an_image_answer_records_once_verifies_and_replays_offline_byte_identical(mode: str, tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "draw.py"
    agent.write_text(AGENT)
    cassette = tmp_path / "draw.json.zst"
    answer = {"text": "Here is your tile.", "image": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}}
    recorded_png, replayed_png = tmp_path / "recorded.png", tmp_path / "replayed.png"
    with FakeGemini(script=[answer]) as fake:
        rec = blackbox(
            "record", "-o", str(cassette), "--confdir", str(confdir), *_remote(fake), "--",
            sys.executable, str(agent), mode, str(recorded_png),
            env={"GEMINI_API_KEY": KEY},
        )  # fmt: skip
        assert rec.returncode == 0, rec.stderr
    digest = hashlib.sha256(PNG).hexdigest()
    assert rec.stdout.split() == ["Here", "is", "your", "tile.", "image/png", str(len(PNG)), digest]
    assert recorded_png.read_bytes() == PNG

    trace = load_trace(cassette)
    [output] = [s.payload for s in trace.steps if s.type == "model_output"]
    assert output["content"][-1] == {"type": "image", "mediaType": "image/png", "sha256": digest, "size": len(PNG)}
    side = media_path(cassette)
    assert side.name == "draw.media.json.zst"  # compressed as the cassette is
    document = load_media(cassette, trace)
    assert document is not None and base64.b64decode(document["media"][digest]["data"]) == PNG
    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0, checked.stdout
    shown = blackbox("show", str(cassette))
    assert f"image/png {len(PNG)} bytes {digest[:12]}" in shown.stdout and "media: 1 stored once each" in shown.stdout

    # Offline: the fake is stopped; no key is given.
    env = {k: v for k, v in os.environ.items() if k != "GEMINI_API_KEY"}
    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", sys.executable, str(agent), mode, str(replayed_png), env=env)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert replayed_png.read_bytes() == PNG  # byte for byte

    # One byte changed in the stored picture: verify names the digest, and the run is not replayed.
    plain = json.loads(compression.decode(side, side.read_bytes()))
    tampered = bytearray(PNG)
    tampered[20] ^= 0xFF
    plain["media"][digest]["data"] = base64.b64encode(bytes(tampered)).decode()
    side.write_bytes(compression.encode(side, json.dumps(plain).encode()))
    bad = blackbox("verify", str(cassette))
    assert bad.returncode == 1 and digest in bad.stdout, bad.stdout
    refused = blackbox(
        "replay", str(cassette), "--confdir", str(confdir), "--", sys.executable, str(agent), mode, str(replayed_png), env=env
    )
    assert refused.returncode != 0 and "does not verify" in (refused.stderr + refused.stdout)


def test_over_the_cap_the_recording_says_so_verifies_and_the_replay_names_the_missing_image(tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "draw.py"
    agent.write_text(AGENT)
    cassette = tmp_path / "draw.json"
    answer = {"text": "Here is your tile.", "image": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}}
    with FakeGemini(script=[answer]) as fake:
        rec = blackbox(
            "record", "-o", str(cassette), "--confdir", str(confdir), *_remote(fake), "--",
            sys.executable, str(agent), "whole", str(tmp_path / "out.png"),
            env={"GEMINI_API_KEY": KEY, "BLACKBOX_MEDIA_MAX_BYTES": "10"},
        )  # fmt: skip
    assert rec.returncode == 0, rec.stderr
    digest = hashlib.sha256(PNG).hexdigest()
    assert f"media not kept: the image/png {digest[:12]}… ({len(PNG)} bytes): the run's media reached the 10-byte cap" in rec.stderr
    assert "BLACKBOX_MEDIA_MAX_BYTES raises it" in rec.stderr
    assert blackbox("verify", str(cassette)).returncode == 0  # nothing recorded is lost: the step names it by digest
    shown = blackbox("show", str(cassette)).stdout
    assert "[not kept: the run's media reached the 10-byte cap" in shown
    env = {k: v for k, v in os.environ.items() if k != "GEMINI_API_KEY"}
    rep = blackbox(
        "replay", str(cassette), "--confdir", str(confdir), "--", sys.executable, str(agent), "whole", str(tmp_path / "r.png"), env=env
    )
    assert rep.returncode != 0
    assert f"the image {digest[:12]}… (image/png) is needed here, but the run's media file does not hold it" in rep.stdout + rep.stderr


def test_a_cap_that_is_not_a_number_is_a_clear_error(tmp_path: Path, confdir: Path) -> None:
    bad = blackbox(
        "record", "-o", str(tmp_path / "x.json"), "--confdir", str(confdir), "--", "true", env={"BLACKBOX_MEDIA_MAX_BYTES": "10MB"}
    )
    assert bad.returncode == 2 and "BLACKBOX_MEDIA_MAX_BYTES must be a number of bytes" in bad.stderr and "Traceback" not in bad.stderr
