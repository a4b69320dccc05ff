"""End to end: Gemini's codeExecution tool through a real proxy, with the real google-genai SDK.

The fake Gemini API (examples/fake_gemini.py) plays a model that runs code at
Google: its answer holds an ``executableCode`` part and a
``codeExecutionResult`` part, then text. The agent offers
``tools=[types.Tool(code_execution=types.ToolCodeExecution())]`` and asks a
follow-up in the same chat, so the second request's model turn carries both
parts back. ``blackbox record`` keeps them as server-side parts; ``verify``
passes; a strict offline replay (the fake stopped, no key) gives the SDK the
same ``executable_code`` and ``code_execution_result``, whole and streamed.
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
CODE = "print(sum([2, 3, 5, 7, 11, 13, 17, 19, 23, 29]))"
AGENT = """
import json, sys
from google import genai
from google.genai import types

client = genai.Client(http_options=types.HttpOptions(client_args={"trust_env": True}))
config = types.GenerateContentConfig(tools=[types.Tool(code_execution=types.ToolCodeExecution())])
chat = client.chats.create(model="gemini-2.5-flash", config=config)
seen = []
for question in ("Sum of the first 10 primes?", "And doubled?"):
    if sys.argv[1] == "stream":
        chunks = list(chat.send_message_stream(question))
        parts = [p for c in chunks for p in c.candidates[0].content.parts]
        codes = [c.executable_code for c in chunks if c.executable_code]
        results = [c.code_execution_result for c in chunks if c.code_execution_result]
    else:
        response = chat.send_message(question)
        parts = response.candidates[0].content.parts
        codes, results = [response.executable_code], [response.code_execution_result]
    kinds = []  # the parts' kinds in order, a text streamed in pieces counted once
    for p in parts:
        kind = "code" if p.executable_code else "result" if p.code_execution_result else "text"
        if p.text != "" and kinds[-1:] != [kind]:
            kinds.append(kind)
    seen.append({"code": codes, "result": results, "kinds": kinds, "text": "".join(p.text or "" for p in parts)})
print(json.dumps(seen))
"""
ANSWERS = [
    {"code_execution": [{"code": CODE, "output": "129\n"}], "text": "The sum is 129."},
    {"code_execution": [{"code": "print(129 * 2)", "output": "258\n"}], "text": "Doubled: 258."},
]


def _remote(fake: FakeGemini) -> list[str]:
    return ["--map-remote", rf"|https://generativelanguage\.googleapis\.com|{fake.url}"]


@pytest.mark.parametrize("mode", ["whole", "stream"])
def test_code_execution_records_verifies_and_replays_offline_as_recorded(mode: str, tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "primes.py"
    agent.write_text(AGENT)
    cassette = tmp_path / "primes.json"
    # The text in 3 pieces, where a replay serves it in one: google-genai's streamed chat keeps one history content per
    # chunk, so the replayed history has fewer model contents; strict replay compares a turn's contents joined.
    with FakeGemini(script=json.loads(json.dumps(ANSWERS)), stream_pieces=3) as fake:
        rec = blackbox(
            "record", "-o", str(cassette), "--confdir", str(confdir), *_remote(fake), "--",
            sys.executable, str(agent), mode, env={"GEMINI_API_KEY": KEY},
        )  # fmt: skip
        assert rec.returncode == 0, rec.stderr
        history = fake.model_requests()[1]["body"]["contents"]  # streamed: the SDK keeps one model content per chunk
        sent_back = [p for c in history if c.get("role") == "model" for p in c["parts"]]
    seen = json.loads(rec.stdout)
    assert seen[0] == {"code": [CODE], "result": ["129\n"], "kinds": ["code", "result", "text"], "text": "The sum is 129."}
    assert seen[1]["code"] == ["print(129 * 2)"] and seen[1]["result"] == ["258\n"]
    assert [k for p in sent_back for k in p if k in ("executableCode", "codeExecutionResult")] == ["executableCode", "codeExecutionResult"]

    trace = load_trace(cassette)
    [first, _] = [s.payload for s in trace.steps if s.type == "model_output"]
    assert [p["type"] for p in first["content"]] == ["server_tool_call", "server_tool_result", "text"]
    assert first["content"][0]["toolInput"] == {"language": "PYTHON", "code": CODE}
    assert first["content"][1]["result"] == {"outcome": "OUTCOME_OK", "output": "129\n"}
    [_, second_input] = [s.payload for s in trace.steps if s.type == "model_input"]
    assert second_input["tools"] == [{"name": "codeExecution", "builtin": {"codeExecution": {}}}]
    turn = [m["content"] for m in second_input["messages"] if m["role"] == "assistant"]  # streamed: one message per chunk
    served = [p for c in turn if isinstance(c, list) for p in c if p["type"] != "text"]
    assert served == first["content"][:2]  # the history's model turn carries the same parts, with the same call-N
    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0, checked.stdout

    env = {k: v for k, v in os.environ.items() if k != "GEMINI_API_KEY"}  # offline: the fake is stopped, no key
    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", sys.executable, str(agent), mode, env=env)
    assert rep.returncode == 0, rep.stderr
    assert json.loads(rep.stdout) == seen
