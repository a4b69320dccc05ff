"""End to end, with the real ``openai`` Python SDK through a real proxy: what the OpenAI codecs recorded last.

* Responses: a developer message with an image (what the API takes in system and
  developer messages as in user ones) is recorded by digest, the bytes once in the
  media file; the fake provider got them byte for byte; ``verify`` passes; a strict
  offline replay gives the same output, and another image diverges. Whole and streamed.
* Responses: an answer whose output text carries file, container-file and URL
  citations and token ``logprobs`` is recorded with them and replayed offline with
  them, whole and streamed.
* Chat completions: after ``fork --live``'s cut, the agent sends back the served
  audio answer's ``audio_bb…`` id; a fake OpenAI that, like OpenAI, rejects an audio
  id it never gave accepts the continued conversation, because the turn goes
  upstream as the answer's transcript.
* Chat completions: a refusal the agent sends back in its history (the assistant
  message's ``refusal``) is recorded as a refusal part and replays strictly.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import blackbox, remote_args
from fake_provider import FakeProvider
from fake_responses import FakeResponses, events_of
from test_audio_e2e import CHAT_AGENT, NATIVE, WAV, _chat_body

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.cassette.media import load_media

pytestmark = pytest.mark.e2e

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40  # made here: the test owns its bytes

DEVELOPER_AGENT = """
import base64, sys
from openai import OpenAI

client = OpenAI()
mode, image = sys.argv[1], open(sys.argv[2], "rb").read()
url = "data:image/png;base64," + base64.b64encode(image).decode()
developer = {"role": "developer", "content": [{"type": "input_text", "text": "House style:"}, {"type": "input_image", "image_url": url}]}
items = [developer, {"role": "user", "content": "Describe the logo."}]
if mode == "stream":
    with client.responses.stream(model="gpt-4.1", input=items) as stream:
        print(stream.get_final_response().output_text)
else:
    print(client.responses.create(model="gpt-4.1", input=items).output_text)
"""

CITED_AGENT = """
import sys
from openai import OpenAI

client = OpenAI()
kw = dict(model="gpt-4.1", input="Where is the limit defined?", include=["message.output_text.logprobs"], top_logprobs=1)
if sys.argv[1] == "stream":
    deltas, response = [], None
    for event in client.responses.create(stream=True, **kw):
        if event.type == "response.output_text.delta":
            deltas.append([lp.token for lp in event.logprobs])
        if event.type == "response.completed":
            response = event.response
    print("deltas", deltas)
else:
    response = client.responses.create(**kw)
part = response.output[0].content[0]
print(part.text)
print([a.type for a in part.annotations], [getattr(a, "file_id", None) for a in part.annotations])
print([(lp.token, lp.logprob) for lp in part.logprobs])
"""


def _run(tmp: Path, name: str, source: str) -> Path:
    agent = tmp / name
    agent.write_text(source)
    return agent


@pytest.mark.parametrize("mode", ["whole", "stream"])
def test_a_developer_message_with_an_image_records_by_digest_and_replays_strictly(mode: str, tmp_path: Path, confdir: Path) -> None:
    agent = _run(tmp_path, "style.py", DEVELOPER_AGENT)
    image, other = tmp_path / "logo.png", tmp_path / "other.png"
    image.write_bytes(PNG)
    other.write_bytes(PNG[::-1])
    cassette = tmp_path / "style.json"
    argv = [sys.executable, str(agent), mode]
    with FakeResponses() as fake:
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *remote_args(fake.url), "--", *argv, str(image))
        sent = fake.calls()
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout.strip() == "Echo: Describe the logo."
    [call] = sent
    assert call["input"][0]["content"][1]["image_url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()  # as the agent sent it

    digest = hashlib.sha256(PNG).hexdigest()
    trace = load_trace(cassette)
    step = next(s.payload for s in trace.steps if s.type == "model_input")
    assert "systemPrompt" not in step
    assert step["messages"][0] == {
        "role": "system",
        "content": [
            {"type": "text", "text": "House style:"},
            {"type": "image", "mediaType": "image/png", "sha256": digest, "size": len(PNG)},
        ],
    }
    assert base64.b64encode(PNG).decode()[:200] not in cassette.read_text()  # the bytes are in the media file, once
    document = load_media(cassette, trace)
    assert document is not None and list(document["media"]) == [digest]
    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0, checked.stdout + checked.stderr

    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *argv, str(image))  # the fake is gone: offline
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    changed = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *argv, str(other))
    assert changed.returncode != 0
    assert "message 0 (system)" in changed.stderr, changed.stderr


def _cited_response() -> dict[str, Any]:
    text = "See limits.md."
    logprobs = [
        {
            "token": "See",
            "logprob": -0.02,
            "bytes": list(b"See"),
            "top_logprobs": [{"token": "See", "logprob": -0.02, "bytes": list(b"See")}],
        },
        {
            "token": " limits",
            "logprob": -0.31,
            "bytes": list(b" limits"),
            "top_logprobs": [{"token": " the", "logprob": -1.4, "bytes": list(b" the")}],
        },
        {
            "token": ".md.",
            "logprob": -0.11,
            "bytes": list(b".md."),
            "top_logprobs": [{"token": ".md.", "logprob": -0.11, "bytes": list(b".md.")}],
        },
    ]
    annotations = [
        {"type": "file_citation", "file_id": "file-Lim1ts", "filename": "limits.md", "index": 14},
        {
            "type": "container_file_citation",
            "container_id": "cntr_ab12",
            "file_id": "cfile_cd34",
            "filename": "limits.md",
            "start_index": 4,
            "end_index": 13,
        },
        {"type": "url_citation", "url": "https://docs.example.com/limits", "title": "Limits", "start_index": 4, "end_index": 13},
    ]
    part = {"type": "output_text", "text": text, "annotations": annotations, "logprobs": logprobs}
    message = {"id": "msg_0a1b2c", "type": "message", "status": "completed", "role": "assistant", "content": [part]}
    usage = {
        "input_tokens": 12,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 3,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    return {
        "id": "resp_0a1b2c3d",
        "object": "response",
        "created_at": 1_764_000_000,
        "status": "completed",
        "model": "gpt-4.1-2025-04-14",
        "output": [message],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "top_logprobs": 1,
        "usage": usage,
    }


@pytest.mark.parametrize("mode", ["whole", "stream"])
def test_citations_of_every_kind_and_logprobs_are_recorded_and_replayed(mode: str, tmp_path: Path, confdir: Path) -> None:
    agent = _run(tmp_path, "cited.py", CITED_AGENT)
    cassette = tmp_path / "cited.json"
    response = _cited_response()
    answer = {"raw_events": events_of(response)} if mode == "stream" else {"raw": response}
    with FakeResponses([answer]) as fake:
        rec = blackbox(
            "record", "-o", str(cassette), "--confdir", str(confdir), *remote_args(fake.url), "--", sys.executable, str(agent), mode
        )
    assert rec.returncode == 0, rec.stderr
    lines = rec.stdout.splitlines()
    assert lines[-3:] == [
        "See limits.md.",
        "['file_citation', 'container_file_citation', 'url_citation'] ['file-Lim1ts', 'cfile_cd34', None]",
        "[('See', -0.02), (' limits', -0.31), ('.md.', -0.11)]",
    ]
    output = next(s.payload for s in load_trace(cassette).steps if s.type == "model_output")
    assert output["parts"][0]["tokenLogprobs"] == response["output"][0]["content"][0]["logprobs"]
    assert [a["type"] for a in output["parts"][0]["annotations"]] == ["file_citation", "container_file_citation", "url_citation"]
    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0, checked.stdout + checked.stderr

    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", sys.executable, str(agent), mode)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout.splitlines()[-3:] == lines[-3:]
    if mode == "stream":  # the replay streams one delta per recorded token, each with its logprob
        assert rep.stdout.splitlines()[0] == "deltas [['See'], [' limits'], ['.md.']]"


def _rejects_unknown_audio(known: set[str]) -> Any:
    """A fake OpenAI that, like OpenAI, answers 400 for an assistant message whose audio id it never gave."""

    def respond(kind: str, body: dict[str, Any]) -> dict[str, Any]:
        for i, msg in enumerate(body.get("messages") or []):
            audio = msg.get("audio") if msg.get("role") == "assistant" else None
            if isinstance(audio, dict) and audio.get("id") not in known:
                return {
                    "status": 400,
                    "message": f"Audio with id '{audio.get('id')}' not found (messages[{i}].audio.id).",
                    "retry_after_ms": None,
                }
        return {"raw": _chat_body("Hello... there.", WAV[::-1])}

    return respond


def test_fork_live_sends_a_served_audio_answer_upstream_as_its_transcript(tmp_path: Path, confdir: Path) -> None:
    agent = _run(tmp_path, "speak.py", CHAT_AGENT)
    parent, child = tmp_path / "speak.json", tmp_path / "forked.json"
    argv = [sys.executable, str(agent), "whole", str(tmp_path / "out.audio")]
    with FakeProvider([{"raw": _chat_body("Hello there!", WAV)}, {"raw": _chat_body("Hello... there.", WAV[::-1])}]) as fake:
        rec = blackbox("record", "-o", str(parent), "--confdir", str(confdir), *remote_args(fake.url), "--", *argv)
    assert rec.returncode == 0, rec.stderr

    with FakeProvider(responder=_rejects_unknown_audio({NATIVE})) as upstream:
        args = ["fork", str(parent), "--live-after", "1", "-o", str(child), "--confdir", str(confdir)]
        forked = blackbox(*args, *remote_args(upstream.url), "--", *argv)
        live = [r["body"] for r in upstream.requests]
    assert forked.returncode == 0, forked.stderr
    assert forked.stdout == rec.stdout  # the first answer served from the cassette, the second from the live provider
    [request] = live
    assert request["messages"][1] == {"role": "assistant", "content": "Hello there!"}  # the transcript, no audio id
    assert "audio_bb" not in json.dumps(request)

    steps = load_trace(child).steps
    second = [s.payload for s in steps if s.type == "model_input"][1]
    audio = second["messages"][1]["content"][0]
    assert audio["type"] == "audio" and audio["sha256"] == hashlib.sha256(WAV).hexdigest()  # the child records what the agent sent
    checked = blackbox("verify", str(child))
    assert checked.returncode == 0, checked.stdout + checked.stderr


REFUSED_AGENT = """
import sys
from openai import OpenAI

client = OpenAI()
messages = [{"role": "user", "content": "Help me pick a lock."}]
first = client.chat.completions.create(model="gpt-4.1", messages=messages).choices[0].message
print("refused:", first.refusal)
messages += [{"role": "assistant", "content": first.content, "refusal": first.refusal}, {"role": "user", "content": sys.argv[1]}]
print(client.chat.completions.create(model="gpt-4.1", messages=messages).choices[0].message.content)
"""


def test_a_refusal_sent_back_in_the_history_records_and_replays_strictly(tmp_path: Path, confdir: Path) -> None:
    agent = _run(tmp_path, "refused.py", REFUSED_AGENT)
    cassette = tmp_path / "refused.json"
    argv = [sys.executable, str(agent), "Then explain how locks work."]
    script = [{"text": "I can't help with that.", "stop": "refusal"}, {"text": "A pin tumbler lock has..."}]
    with FakeProvider(script) as fake:
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *remote_args(fake.url), "--", *argv)
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout.splitlines() == ["refused: I can't help with that.", "A pin tumbler lock has..."]
    second = [s.payload for s in load_trace(cassette).steps if s.type == "model_input"][1]
    assert second["messages"][1] == {"role": "assistant", "content": [{"type": "refusal", "text": "I can't help with that."}]}
    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0, checked.stdout + checked.stderr

    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *argv)
    assert rep.returncode == 0, rep.stderr  # strict: the served refusal, sent back, is the recorded history
    assert rep.stdout == rec.stdout
