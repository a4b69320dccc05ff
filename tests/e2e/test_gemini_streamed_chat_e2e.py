"""End to end: a two-turn streamed google-genai chat whose provider chunks are not a replay's 64-character pieces.

google-genai's ``chat.send_message_stream`` (``google/genai/chats.py``) keeps the
content of every streamed chunk as its own history content: a model answer that
came in 23 chunks goes back in the next request as 23 model contents. A replay
serves the same text cut into its own pieces (``codecs/gemini/stream.py``), so the
replayed history holds another number of model contents. The Gemini codec
declares that adjacent model contents are one turn (``ONE_TURN_ROLES``): strict
replay compares them joined, on both sides, so the recording made from Google's
chunks replays strictly offline — three times over.

The fake Gemini API (examples/fake_gemini.py) streams each text in 12 pieces of 5 to
14 characters; the second answer is a function call after streamed narration.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import blackbox
from fake_gemini import FakeGemini

from blackbox_mitm.cassette import load_trace

pytestmark = pytest.mark.e2e

KEY = "AIzaSyBx9Q2mZ7kL4pW1cV8nR3tY6uH0jF5dG2a"  # the shape of a Google API key; never a real one
FIRST = (
    "Zurich sits at the northern end of Lake Zurich, where the Limmat leaves the lake; "
    "its old town climbs both banks of the river, and the Alps show on clear days."
)
NARRATION = "Let me look up the weather there for you before I answer that."
FINAL = "It is sunny in Zurich today, 22 degrees: a fine afternoon for a walk along the lake shore."
AGENT = """
import json, sys
from google import genai
from google.genai import types

def get_weather(city: str) -> dict:
    \"\"\"The weather in a city.\"\"\"
    return {"city": city, "forecast": "sunny", "celsius": 22}

client = genai.Client(http_options=types.HttpOptions(client_args={"trust_env": True}))
config = types.GenerateContentConfig(tools=[get_weather])
chat = client.chats.create(model="gemini-2.5-flash", config=config)
seen = []
for question in ("Tell me about Zurich.", "And the weather there?"):
    chunks = list(chat.send_message_stream(question))
    seen.append({"chunks": len(chunks), "text": "".join(c.text or "" for c in chunks)})
turns = []  # the chat's history, adjacent contents of one role as one turn: (role, its parts' kinds and text)
for content in chat.get_history(curated=True):
    said = "".join(p.text or "" for p in content.parts) + "".join(f"<call {p.function_call.name}>" for p in content.parts if p.function_call)
    said += "".join(f"<result {p.function_response.name}>" for p in content.parts if p.function_response)
    if turns and turns[-1][0] == content.role:
        turns[-1][1] += said
    else:
        turns.append([content.role, said])
print(json.dumps({"answers": seen, "turns": turns}))
"""
# fake_gemini cuts each text in 12 pieces: 13-14 characters (159), 5-6 (62) and 7-8 (90); a replay cuts 64
ANSWERS = [
    {"text": FIRST},
    {"text": NARRATION, "function_calls": [{"name": "get_weather", "args": {"city": "Zurich"}}]},
    {"text": FINAL},
]


def _remote(fake: FakeGemini) -> list[str]:
    return ["--map-remote", rf"|https://generativelanguage\.googleapis\.com|{fake.url}"]


def test_streamed_chat_cut_unlike_a_replay_replays_strictly_offline(tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "chat.py"
    agent.write_text(AGENT)
    cassette = tmp_path / "chat.json"
    with FakeGemini(script=json.loads(json.dumps(ANSWERS)), stream_pieces=12) as fake:
        rec = blackbox(
            "record", "-o", str(cassette), "--confdir", str(confdir), *_remote(fake), "--",
            sys.executable, str(agent), env={"GEMINI_API_KEY": KEY},
        )  # fmt: skip
        assert rec.returncode == 0, rec.stderr
        requests = [r["body"] for r in fake.model_requests()]
    assert len(requests) == 3  # the two questions, and the function's result sent by the SDK's automatic calling
    # The SDK sent the first answer back as one model content per chunk it got: 12, each 5 to 17 characters.
    sent_back = [c for c in requests[1]["contents"] if c.get("role") == "model"]
    assert len(sent_back) == 12
    assert all(5 <= len(c["parts"][0]["text"]) <= 17 for c in sent_back)
    assert "".join(c["parts"][0]["text"] for c in sent_back) == FIRST
    seen = json.loads(rec.stdout)
    assert seen["answers"] == [{"chunks": 12, "text": FIRST}, {"chunks": 25, "text": NARRATION + FINAL}]
    assert seen["turns"] == [
        ["user", "Tell me about Zurich."],
        ["model", FIRST],
        ["user", "And the weather there?"],
        ["model", NARRATION + "<call get_weather>"],
        ["user", "<result get_weather>"],
        ["model", FINAL],
    ]

    trace = load_trace(cassette)
    inputs = [s.payload for s in trace.steps if s.type == "model_input"]
    assert len(inputs) == 3
    assistant = [m for m in inputs[1]["messages"] if m["role"] == "assistant"]
    assert len(assistant) == 12  # the cassette keeps what was sent: one message per content
    [answer] = [s.payload for s in trace.steps if s.type == "model_output" and s.payload["type"] == "tool_calls"]
    [call] = [p for m in inputs[2]["messages"] for p in m["content"] if isinstance(p, dict) and p["type"] == "tool_use"]
    [result] = [s.payload for s in trace.steps if s.type == "tool_result"]
    # The call came in the 13th content of its turn: it is the answer's call-N all the same, and its result is paired.
    assert call["toolCallId"] == answer["calls"][0]["toolCallId"] == result["toolCallId"]
    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0, checked.stdout

    env = {k: v for k, v in os.environ.items() if k != "GEMINI_API_KEY"}  # offline: the fake is stopped, no key
    for _ in range(3):
        rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", sys.executable, str(agent), env=env)
        assert rep.returncode == 0, rep.stderr
        replayed = json.loads(rep.stdout)
        assert replayed["turns"] == seen["turns"]
        # A replay's own pieces: 64, 64 and 31 characters; the narration whole, then the call; 64 and 26 characters.
        assert replayed["answers"] == [{"chunks": 3, "text": FIRST}, {"chunks": 4, "text": NARRATION + FINAL}]
        assert "3 of 3 model calls served from the recording, no divergence" in rep.stderr, rep.stderr
