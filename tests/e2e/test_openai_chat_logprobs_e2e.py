"""End to end, with the real ``openai`` Python SDK through a real proxy: chat completions' token ``logprobs``.

The agent asks with ``logprobs: true, top_logprobs: 1``; the answer's logprobs are
recorded on it (``tokenLogprobs``), ``verify`` passes, and a strict offline replay
gives the agent the same tokens and logprobs, whole and streamed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import blackbox, remote_args
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace

pytestmark = pytest.mark.e2e

AGENT = """
import sys
from openai import OpenAI

client = OpenAI()
kw = dict(model="gpt-4.1", messages=[{"role": "user", "content": "Say hello."}], logprobs=True, top_logprobs=1)
if sys.argv[1] == "stream":
    text, tokens = "", []
    for chunk in client.chat.completions.create(stream=True, **kw):
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            tokens += [(lp.token, lp.logprob) for lp in (chunk.choices[0].logprobs.content or [])] if chunk.choices[0].logprobs else []
else:
    choice = client.chat.completions.create(**kw).choices[0]
    text, tokens = choice.message.content, [(lp.token, lp.logprob) for lp in choice.logprobs.content]
print(text)
print(tokens)
"""

LOGPROBS = [
    {
        "token": "Hello",
        "logprob": -0.03,
        "bytes": list(b"Hello"),
        "top_logprobs": [{"token": "Hello", "logprob": -0.03, "bytes": list(b"Hello")}],
    },
    {"token": "!", "logprob": -0.4, "bytes": list(b"!"), "top_logprobs": [{"token": ".", "logprob": -1.2, "bytes": list(b".")}]},
]


def _answer(mode: str) -> dict[str, Any]:
    head = {"id": "chatcmpl-Bx9native", "created": 1_764_000_000, "model": "gpt-4.1-2025-04-14"}
    if mode == "whole":
        message: dict[str, Any] = {"role": "assistant", "content": "Hello!", "refusal": None, "annotations": []}
        choice = {"index": 0, "message": message, "logprobs": {"content": LOGPROBS, "refusal": None}, "finish_reason": "stop"}
        return {"raw": {**head, "object": "chat.completion", "choices": [choice]}}
    chunk = {**head, "object": "chat.completion.chunk"}
    events: list[Any] = [
        {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}]}
    ]
    for lp in LOGPROBS:
        lps = {"content": [lp], "refusal": None}
        events.append({**chunk, "choices": [{"index": 0, "delta": {"content": lp["token"]}, "logprobs": lps, "finish_reason": None}]})
    events.append({**chunk, "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}]})
    return {"raw_events": [*events, "[DONE]"]}


@pytest.mark.parametrize("mode", ["whole", "stream"])
def test_chat_logprobs_are_recorded_and_replayed(mode: str, tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "lp.py"
    agent.write_text(AGENT)
    cassette = tmp_path / "lp.json"
    argv = [sys.executable, str(agent), mode]
    with FakeProvider([_answer(mode)]) as fake:
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *remote_args(fake.url), "--", *argv)
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout.splitlines() == ["Hello!", "[('Hello', -0.03), ('!', -0.4)]"]
    output = next(s.payload for s in load_trace(cassette).steps if s.type == "model_output")
    assert output["tokenLogprobs"] == LOGPROBS
    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *argv)  # the fake is gone: offline
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
