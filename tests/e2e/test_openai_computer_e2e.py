"""End to end, with the real ``openai`` Python SDK through a real proxy: a computer-use round on the Responses API.

The agent declares ``computer_use_preview``, gets a ``computer_call`` (a click, with a
pending safety check), "takes" a screenshot (its own PNG bytes) and sends the
``computer_call_output`` back with the check acknowledged; the model then answers.
Recorded (the screenshot by digest, its bytes once in the media file, no provider id
in the cassette), ``verify`` passes, and a strict offline replay gives the agent the
same call and answer; another screenshot diverges. Whole and streamed.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import blackbox, remote_args
from fake_responses import FakeResponses, events_of

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.cassette.media import load_media

pytestmark = pytest.mark.e2e

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 30  # made here: the test owns its bytes

AGENT = """
import base64, sys
from openai import OpenAI

client = OpenAI()
mode, shot = sys.argv[1], open(sys.argv[2], "rb").read()
tool = {"type": "computer_use_preview", "display_width": 1024, "display_height": 768, "environment": "browser"}
items = [{"role": "user", "content": "Open the docs page."}]

def ask():
    kw = dict(model="computer-use-preview", tools=[tool], input=items, truncation="auto")
    if mode == "stream":
        with client.responses.stream(**kw) as stream:
            return stream.get_final_response()
    return client.responses.create(**kw)

first = ask()
[call] = [o for o in first.output if o.type == "computer_call"]
print("action", call.action.type, call.action.x, call.action.y, [c.code for c in call.pending_safety_checks])
items += [o.model_dump(exclude_none=True) for o in first.output]
url = "data:image/png;base64," + base64.b64encode(shot).decode()
items.append({
    "type": "computer_call_output",
    "call_id": call.call_id,
    "output": {"type": "computer_screenshot", "image_url": url},
    "acknowledged_safety_checks": [c.model_dump(exclude_none=True) for c in call.pending_safety_checks],
})
print(ask().output_text)
"""


def _response(rid: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    usage = {
        "input_tokens": 30,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 35,
    }
    head = {"id": rid, "object": "response", "created_at": 1_764_000_000, "status": "completed", "model": "computer-use-preview"}
    return {**head, "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "usage": usage}


CALL = {
    "id": "cu_67cc0a1b2c3d",
    "type": "computer_call",
    "call_id": "call_zX9y8W7v",
    "status": "completed",
    "action": {"type": "click", "button": "left", "x": 156, "y": 50},
    "pending_safety_checks": [{"id": "cu_sc_67cb9f8e7d", "code": "malicious_instructions", "message": "Check the page."}],
}
DONE = {
    "id": "msg_67cc0f0e0d",
    "type": "message",
    "status": "completed",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "The docs page is open.", "annotations": [], "logprobs": []}],
}


def _script(mode: str) -> list[dict[str, Any]]:
    answers = [_response("resp_67cc0a", [CALL]), _response("resp_67cc0f", [DONE])]
    return [{"raw_events": events_of(r)} if mode == "stream" else {"raw": r} for r in answers]


@pytest.mark.parametrize("mode", ["whole", "stream"])
def test_a_computer_use_round_records_and_replays_strictly(mode: str, tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "computer.py"
    agent.write_text(AGENT)
    shot, other = tmp_path / "shot.png", tmp_path / "other.png"
    shot.write_bytes(PNG)
    other.write_bytes(PNG[::-1])
    cassette = tmp_path / "computer.json"
    argv = [sys.executable, str(agent), mode]
    with FakeResponses(_script(mode)) as fake:
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *remote_args(fake.url), "--", *argv, str(shot))
        sent = fake.calls()
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout.splitlines() == ["action click 156 50 ['malicious_instructions']", "The docs page is open."]
    assert sent[1]["input"][-1]["acknowledged_safety_checks"][0]["id"] == "cu_sc_67cb9f8e7d"  # as the agent sent it

    text = cassette.read_text()
    for native in ("cu_67cc0a1b2c3d", "call_zX9y8W7v", "cu_sc_67cb9f8e7d", "resp_67cc0a"):
        assert native not in text
    digest = hashlib.sha256(PNG).hexdigest()
    trace = load_trace(cassette)
    last = [s.payload for s in trace.steps if s.type == "model_input"][-1]
    [result] = last["messages"][-1]["content"]
    assert result["toolName"] == "computer"
    assert result["result"] == [{"type": "image", "mediaType": "image/png", "sha256": digest, "size": len(PNG)}]
    assert result["safetyChecks"] == [{"code": "malicious_instructions", "message": "Check the page."}]
    document = load_media(cassette, trace)
    assert document is not None and list(document["media"]) == [digest]
    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0, checked.stdout + checked.stderr

    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *argv, str(shot))  # the fake is gone: offline
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    changed = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *argv, str(other))
    assert changed.returncode != 0
    assert "differ" in changed.stderr, changed.stderr
