"""The Converse API half of the fake cloud (examples/fake_clouds.py): a rule-based weather model in Bedrock's format.

``converse_response(body)`` is a ConverseResponse; ``converse_events(body)`` the
``(event type, payload)`` pairs of a ConverseStream (messageStart, content
blocks, messageStop, metadata). The model calls get_weather once per known city
the user names, then sums up the tool results. Written from AWS's API reference,
not from blackbox_mitm.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

Json = dict[str, Any]
CITIES = ("paris", "lyon", "london", "tokyo", "berlin")


def _answer(body: Json) -> tuple[list[Json], str]:
    """(the assistant's content blocks, the stopReason) for a request."""
    messages = body.get("messages") or []
    results = [b["toolResult"] for m in messages for b in m.get("content", []) if "toolResult" in b]
    if results:
        lines = []
        for result in results:
            block = (result.get("content") or [{}])[0]
            data = block.get("json") if "json" in block else json.loads(block.get("text") or "{}")
            lines.append(f"{data.get('city')}: {data.get('forecast')}, {data.get('celsius')}°C.")
        return [{"text": " ".join(lines)}], "end_turn"
    question = " ".join(b.get("text", "") for b in (messages[-1].get("content", []) if messages else []))
    cities = [c.capitalize() for c in CITIES if c in question.lower()]
    if not cities or not (body.get("toolConfig") or {}).get("tools"):
        return [{"text": f"You said: {question}"}], "end_turn"
    uses = [{"toolUse": {"toolUseId": "tooluse_" + secrets.token_urlsafe(16), "name": "get_weather", "input": {"city": c}}} for c in cities]
    return [{"text": "Let me check the weather."}, *uses], "tool_use"


def converse_response(body: Json) -> Json:
    content, stop = _answer(body)
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": 120, "outputTokens": 30, "totalTokens": 150},
        "metrics": {"latencyMs": 321},
    }


def converse_events(body: Json) -> list[tuple[str, Json]]:
    content, stop = _answer(body)
    events: list[tuple[str, Json]] = [("messageStart", {"role": "assistant"})]
    for i, block in enumerate(content):
        if "text" in block:
            words = block["text"].split(" ")
            for j, word in enumerate(words):
                events.append(
                    ("contentBlockDelta", {"contentBlockIndex": i, "delta": {"text": word + (" " if j < len(words) - 1 else "")}})
                )
        else:
            use = block["toolUse"]
            events.append(
                ("contentBlockStart", {"contentBlockIndex": i, "start": {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}})
            )
            raw = json.dumps(use["input"])
            for k in range(0, len(raw), 7):
                events.append(("contentBlockDelta", {"contentBlockIndex": i, "delta": {"toolUse": {"input": raw[k : k + 7]}}}))
        events.append(("contentBlockStop", {"contentBlockIndex": i}))
    events.append(("messageStop", {"stopReason": stop}))
    events.append(("metadata", {"usage": {"inputTokens": 120, "outputTokens": 30, "totalTokens": 150}, "metrics": {"latencyMs": 321}}))
    return events
