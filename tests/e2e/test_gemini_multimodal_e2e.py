"""End to end: Gemini media outside a user turn, through a real proxy, with the real google-genai SDK.

* A function call whose result carries an image (Gemini 3's multimodal function
  response: ``types.FunctionResponse(parts=[types.FunctionResponsePart...])``,
  the ``response`` pointing at it by ``{"$ref": displayName}``): ``blackbox
  record`` keeps the tool result as its ``response`` and the picture by digest
  (the bytes once in ``RUN.media.json``); ``verify`` passes; a strict offline
  replay (the fake stopped, no key) gives the agent the same answers; ``fork
  --live-after`` sends the function response, screenshot included, to the
  provider byte for byte. Streamed, it records and replays the same way.
* A two-turn image chat (gemini-2.5-flash-image): the answer's image goes back
  in the next turn's history; it is the same media part as the recorded answer's,
  and the run replays strictly, whole and streamed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import blackbox
from fake_gemini import FakeGemini

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.cassette.media import load_media

pytestmark = pytest.mark.e2e

KEY = "AIzaSyBx9Q2mZ7kL4pW1cV8nR3tY6uH0jF5dG2a"  # the shape of a Google API key; never a real one
# A 2x2 PNG, made here so the test owns its bytes.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEUlEQVR4nGP4z8DA8B+MgBgAHfAD/dPQfSYAAAAASUVORK5CYII=")
DIGEST = hashlib.sha256(PNG).hexdigest()
NODE = shutil.which("node")
CHECK_JS = Path(__file__).resolve().parent.parent / "fixtures" / "cassettes" / "check_js_media.js"

SCREENSHOT_AGENT = """
import base64, json, sys
from google import genai
from google.genai import types

png = base64.b64decode(sys.argv[1])
client = genai.Client(http_options=types.HttpOptions(client_args={"trust_env": True}))
shot = types.FunctionDeclaration(name="take_screenshot", description="A screenshot of the page.",
                                 parameters_json_schema={"type": "object", "properties": {"url": {"type": "string"}}})
config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[shot])])
chat = client.chats.create(model="gemini-3-flash-preview", config=config)
stream = sys.argv[2:] == ["stream"]

def send(message):
    if not stream:
        response = chat.send_message(message)
        return response.function_calls or [], response.text
    chunks = list(chat.send_message_stream(message))
    return [c for chunk in chunks for c in chunk.function_calls or []], "".join(chunk.text or "" for chunk in chunks)

calls, _ = send("What does example.com look like?")
call = calls[0]
result = types.Part(function_response=types.FunctionResponse(
    id=call.id, name=call.name, response={"url": call.args["url"], "image": {"$ref": "page.png"}},
    parts=[types.FunctionResponsePart(inline_data=types.FunctionResponseBlob(mime_type="image/png", data=png, display_name="page.png"))],
))
_, answer = send(result)
print(json.dumps({"call": [call.name, call.args], "answer": answer}))
"""

IMAGE_CHAT_AGENT = """
import hashlib, json, sys
from google import genai
from google.genai import types

client = genai.Client(http_options=types.HttpOptions(client_args={"trust_env": True}))
config = types.GenerateContentConfig(response_modalities=["TEXT", "IMAGE"])
chat = client.chats.create(model="gemini-2.5-flash-image", config=config)
seen = []
for prompt in ("Draw a 2x2 tile.", "Now describe it."):
    if sys.argv[1] == "stream":
        parts = [p for c in chat.send_message_stream(prompt) for p in c.candidates[0].content.parts]
    else:
        parts = chat.send_message(prompt).candidates[0].content.parts
    images = [hashlib.sha256(p.inline_data.data).hexdigest() for p in parts if p.inline_data is not None]
    seen.append({"text": "".join(p.text or "" for p in parts), "images": images})
print(json.dumps(seen))
"""


def _remote(fake: FakeGemini) -> list[str]:
    return ["--map-remote", rf"|https://generativelanguage\.googleapis\.com|{fake.url}"]


def _offline() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "GEMINI_API_KEY"}


def _sent_response(fake: FakeGemini) -> dict[str, Any]:
    """The function response the fake received in its last model request."""
    contents = fake.model_requests()[-1]["body"]["contents"]
    [response] = [p["functionResponse"] for p in contents[-1]["parts"] if "functionResponse" in p]
    return dict(response)


def test_a_function_result_with_an_image_records_verifies_replays_and_goes_upstream_byte_identical(tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "screenshot.py"
    agent.write_text(SCREENSHOT_AGENT)
    cassette = tmp_path / "screenshot.json"
    argv = [sys.executable, str(agent), base64.b64encode(PNG).decode()]
    script = [
        {"function_calls": [{"name": "take_screenshot", "args": {"url": "https://example.com"}}]},
        {"text": "A page with a heading and one link."},
    ]
    with FakeGemini(script=json.loads(json.dumps(script))) as fake:
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *_remote(fake), "--", *argv, env={"GEMINI_API_KEY": KEY})
        assert rec.returncode == 0, rec.stderr
        sent = _sent_response(fake)
    assert json.loads(rec.stdout) == {
        "call": ["take_screenshot", {"url": "https://example.com"}],
        "answer": "A page with a heading and one link.",
    }
    [part] = sent["parts"]
    blob = part["inline_data"]  # google-genai 3.3 sends a function response's parts in snake_case, URL-safe base64
    assert base64.urlsafe_b64decode(blob["data"]) == PNG and blob["display_name"] == "page.png"

    trace = load_trace(cassette)
    media = {"type": "image", "mediaType": "image/png", "sha256": DIGEST, "size": len(PNG), "name": "page.png"}
    [result] = [s.payload for s in trace.steps if s.type == "tool_result"]
    assert result == {
        "toolCallId": "call-0",
        "toolName": "take_screenshot",
        "result": {"response": {"url": "https://example.com", "image": {"$ref": "page.png"}}, "parts": [media]},
    }
    [_, second] = [s.payload for s in trace.steps if s.type == "model_input"]
    assert second["messages"][-1]["content"][0]["result"] == result["result"]
    document = load_media(cassette, trace)
    assert document is not None and list(document["media"]) == [DIGEST]
    assert base64.b64decode(document["media"][DIGEST]["data"]) == PNG
    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0, checked.stdout
    if NODE is not None:  # the independent Node checker, written from docs/cassette.md, finds the digest in the tool result
        node = subprocess.run([NODE, str(CHECK_JS), str(cassette)], capture_output=True, text=True, timeout=60)
        assert node.returncode == 0 and json.loads(node.stdout) == {"ok": True, "problems": [], "stored": 1, "named": 1}, node.stdout

    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *argv, env=_offline())
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout

    # Another screenshot is another tool result: the strict replay diverges, naming the step.
    other = [sys.executable, str(agent), base64.b64encode(PNG[:-1] + b"\x01").decode()]
    diverged = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *other, env=_offline())
    assert diverged.returncode != 0 and "the agent diverged from recorded run" in diverged.stderr, diverged.stderr

    # fork --live after the first answer: the function response, its image included, reaches the provider as sent.
    child = tmp_path / "live.json"
    with FakeGemini(script=[{"text": "Live: a page with a heading."}]) as live:
        fork = blackbox(
            "fork", str(cassette), "--live-after", "1", "-o", str(child), "--confdir", str(confdir), *_remote(live), "--", *argv,
            env={"GEMINI_API_KEY": KEY},
        )  # fmt: skip
        assert fork.returncode == 0, fork.stderr
        assert len(live.model_requests()) == 1  # the first call was served from the recording
        live_sent = _sent_response(live)
    # The same function response, its image's bytes as the agent wrote them; only the id is the served call's.
    assert {k: v for k, v in live_sent.items() if k != "id"} == sent and str(live_sent["id"]).startswith("gemini-bb")
    assert json.loads(fork.stdout)["answer"] == "Live: a page with a heading."
    assert blackbox("verify", str(child)).returncode == 0


def test_a_streamed_function_result_with_an_image_records_and_replays_strictly(tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "screenshot.py"
    agent.write_text(SCREENSHOT_AGENT)
    cassette = tmp_path / "screenshot.json"
    argv = [sys.executable, str(agent), base64.b64encode(PNG).decode(), "stream"]
    script: list[dict[str, Any]] = [
        {"function_calls": [{"name": "take_screenshot", "args": {"url": "https://example.com"}}]},
        {"text": "A page with a heading and one link."},
    ]
    with FakeGemini(script=script, stream_pieces=1) as fake:
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *_remote(fake), "--", *argv, env={"GEMINI_API_KEY": KEY})
        assert rec.returncode == 0, rec.stderr
    assert json.loads(rec.stdout)["answer"] == "A page with a heading and one link."
    trace = load_trace(cassette)
    [result] = [s.payload for s in trace.steps if s.type == "tool_result"]
    assert result["result"]["parts"] == [
        {"type": "image", "mediaType": "image/png", "sha256": DIGEST, "size": len(PNG), "name": "page.png"}
    ]
    assert blackbox("verify", str(cassette)).returncode == 0
    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *argv, env=_offline())
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout


@pytest.mark.parametrize("mode", ["whole", "stream"])
def test_an_image_chat_sends_the_answers_image_back_and_replays_strictly(mode: str, tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "tile.py"
    agent.write_text(IMAGE_CHAT_AGENT)
    cassette = tmp_path / "tile.json"
    script: list[dict[str, Any]] = [
        {"text": "Here is your tile.", "image": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}},
        {"text": "Four squares, two of each colour."},
    ]
    # One text piece per chunk, as a replay serves a text this short: google-genai's streamed chat keeps one history
    # content per chunk, so a recording cut into other pieces than the replay's would send a different history back.
    with FakeGemini(script=script, stream_pieces=1) as fake:
        rec = blackbox(
            "record", "-o", str(cassette), "--confdir", str(confdir), *_remote(fake), "--",
            sys.executable, str(agent), mode, env={"GEMINI_API_KEY": KEY},
        )  # fmt: skip
        assert rec.returncode == 0, rec.stderr
        history = fake.model_requests()[1]["body"]["contents"]
    assert json.loads(rec.stdout) == [
        {"text": "Here is your tile.", "images": [DIGEST]},
        {"text": "Four squares, two of each colour.", "images": []},
    ]
    returned = [p["inlineData"] for c in history if c.get("role") == "model" for p in c["parts"] if "inlineData" in p]
    assert [base64.urlsafe_b64decode(d["data"]) for d in returned] == [PNG]  # the answer's image went back in the history

    trace = load_trace(cassette)
    [answer, _] = [s.payload for s in trace.steps if s.type == "model_output"]
    image = {"type": "image", "mediaType": "image/png", "sha256": DIGEST, "size": len(PNG)}
    assert answer["content"][-1] == image
    [_, second] = [s.payload for s in trace.steps if s.type == "model_input"]
    sent_back = [p for m in second["messages"] if m["role"] == "assistant" and isinstance(m["content"], list) for p in m["content"]]
    assert image in sent_back  # the same part, by digest, as the recorded answer's
    document = load_media(cassette, trace)
    assert document is not None and list(document["media"]) == [DIGEST]  # once, though it came twice
    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0, checked.stdout

    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", sys.executable, str(agent), mode, env=_offline())
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
