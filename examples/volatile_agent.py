"""A small real agent whose requests change on every run: the case masks are for.

    python examples/volatile_agent.py "Where is order 1234?"

A tool loop over the official ``anthropic`` SDK (a default ``anthropic.Anthropic()``,
unadapted to recording). Its system prompt carries the current time and a fresh
session uuid, and its one tool, ``lookup_order``, answers with a random
``trace_id`` — as real agents put dates, session ids and random ids into what
they send. A strict replay of it diverges at the system prompt unless those
spans are masked::

    blackbox replay run.json --mask 'Now: \\S+' --mask 'session [0-9a-f-]{36}' --mask 'trace-[0-9a-f]{16}' \\
        -- python examples/volatile_agent.py "Where is order 1234?"

Only the final answer goes to stdout. Exit status: 0 on a final answer, 1 on an
API error, 2 when the model never finishes.
"""

from __future__ import annotations

import datetime
import json
import secrets
import sys
import uuid
from typing import Any

import anthropic

MODEL = "claude-sonnet-4-6"
MAX_TOKENS = 512
MAX_ROUNDS = 6
TOOLS: list[Any] = [
    {
        "name": "lookup_order",
        "description": "Where an order is.",
        "input_schema": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]},
    }
]


def system_prompt() -> str:
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds")
    return f"You track orders. Now: {now}. You are session {uuid.uuid4()}."


def lookup_order(order: str) -> str:
    """The tool: the order's status, and a trace id that is new on every call."""
    return json.dumps({"order": order, "status": "shipped", "trace_id": f"trace-{secrets.token_hex(8)}"})


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: volatile_agent.py QUESTION", file=sys.stderr)
        return 2
    client = anthropic.Anthropic()
    system = system_prompt()
    messages: list[Any] = [{"role": "user", "content": argv[0]}]
    for _ in range(MAX_ROUNDS):
        try:
            reply = client.messages.create(model=MODEL, max_tokens=MAX_TOKENS, system=system, messages=messages, tools=TOOLS)
        except anthropic.APIError as exc:
            print(f"volatile_agent: API error: {exc}", file=sys.stderr)
            return 1
        calls = [b for b in reply.content if b.type == "tool_use"]
        if not calls:
            print("".join(b.text for b in reply.content if b.type == "text"))
            return 0
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
        results = [
            {"type": "tool_result", "tool_use_id": c.id, "content": lookup_order(str(dict(c.input).get("order", "")))} for c in calls
        ]
        for c, r in zip(calls, results, strict=True):
            print(f"tool {c.name}({json.dumps(c.input)}) -> {r['content']}", file=sys.stderr)
        messages.append({"role": "user", "content": results})
    print("volatile_agent: the model never finished", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
