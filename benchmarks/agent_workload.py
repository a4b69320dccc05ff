"""A Claude Code-shaped agent session as Anthropic Messages wire bodies: the agent-sized requests of issue #28.

Deterministic (the same bytes in every variant and round). Each call re-sends a
~14 KB system prompt (text blocks, the first with Claude Code's billing line and
"Today's date is …", which the built-in masks cover), 20 tool definitions (~42 KB,
descriptions and input schemas), and a history that grows by a tool round per
call (an assistant turn with text and a ``tool_use``, a user turn with the
``tool_result``: a file of a few KB). ``calls`` is chosen so the last request is
about ``target_kb`` KB; every earlier request is a prefix of it, as an agent's
requests are.

``session_bodies(calls)`` gives the request bodies, ``response_body(i)`` the
provider's answer to call ``i`` (a tool call, then a final answer for the last).
"""

from __future__ import annotations

import json
import random
from typing import Any

__all__ = ["MODEL", "response_body", "session_bodies", "system_blocks", "tool_definitions"]

MODEL = "claude-sonnet-4-5"
_WORDS: tuple[str, ...] = (
    "the",
    "agent",
    "reads",
    "a",
    "file",
    "then",
    "runs",
    "tests",
    "and",
    "edits",
    "function",
    "until",
    "every",
    "assertion",
)
_WORDS += ("holds", "before", "it", "reports", "what", "changed", "why", "build", "is", "green", "again", "after", "refactor", "tool")
TOOL_NAMES: tuple[str, ...] = ("Bash", "Read", "Edit", "Write", "Glob", "Grep", "LS", "WebFetch", "WebSearch", "TodoWrite", "NotebookEdit")
TOOL_NAMES += ("Task", "MultiEdit", "BashOutput", "KillShell", "ExitPlanMode", "SlashCommand", "AskUser", "Skill", "ListMcpResources")


def _prose(rng: random.Random, size: int) -> str:
    out: list[str] = []
    n = 0
    while n < size:
        word = rng.choice(_WORDS)
        out.append(word)
        n += len(word) + 1
    return " ".join(out)[:size]


def system_blocks(rng: random.Random, size: int = 14_000) -> list[dict[str, Any]]:
    head = "x-anthropic-billing-header: cc_version=2.0.14; cch=3f9a0c1d; cc_prompt_id=9b2e6c1a-77f0-4d1e-a3c5-0e8f2b6d4a11"
    return [
        {"type": "text", "text": head},
        {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
        {"type": "text", "text": _prose(rng, size) + "\nToday's date is 2026-12-01.", "cache_control": {"type": "ephemeral"}},
    ]


def tool_definitions(rng: random.Random, total: int = 42_000) -> list[dict[str, Any]]:
    each = total // len(TOOL_NAMES)
    tools = []
    for name in TOOL_NAMES:
        schema = {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": _prose(rng, 160)},
                "command": {"type": "string", "description": _prose(rng, 160)},
                "timeout": {"type": "number", "description": "milliseconds"},
                "options": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
            },
            "required": ["path"],
            "additionalProperties": False,
            "$schema": "http://json-schema.org/draft-07/schema#",
        }
        tools.append({"name": name, "description": _prose(rng, max(200, each - 600)), "input_schema": schema})
    return tools


def _file(rng: random.Random, k: int, size: int) -> str:
    lines = [f'"""Module {k}."""', ""]
    n = 0
    while sum(len(x) + 1 for x in lines) < size:
        lines += [f"def step_{k}_{n}(value: int) -> int:", f'    """{_prose(rng, 60)}."""', f"    return value * {rng.randint(2, 99)}", ""]
        n += 1
    return "\n".join(lines)


def _round(rng: random.Random, k: int, file_size: int) -> list[dict[str, Any]]:
    tool_id = f"toolu_bb{k:04d}"
    assistant = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": f"I'll read src/module_{k}.py next."},
            {"type": "tool_use", "id": tool_id, "name": "Read", "input": {"file_path": f"/repo/src/module_{k}.py"}},
        ],
    }
    user = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": _file(rng, k, file_size)}],
    }
    return [assistant, user]


def session_bodies(calls: int = 12, *, file_size: int = 5_000, seed: int = 28) -> list[bytes]:
    """The request bodies of a ``calls``-call session; with the defaults the last is about 120 KB."""
    rng = random.Random(seed)
    system = system_blocks(rng)
    tools = tool_definitions(rng)
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<system-reminder>" + _prose(rng, 1500) + "</system-reminder>"},
                {"type": "text", "text": "Find which step functions double their input."},
            ],
        }
    ]
    bodies = []
    for i in range(calls):
        body = {"model": MODEL, "max_tokens": 32000, "messages": messages, "system": system, "tools": tools, "stream": False}
        bodies.append(json.dumps(body, separators=(",", ":")).encode())
        messages = [*messages, *_round(rng, i, file_size)]
    return bodies


def response_body(i: int, last: bool) -> bytes:
    """The provider's Message answering call ``i``: a tool call, or (``last``) a final answer."""
    if last:
        content: list[dict[str, Any]] = [{"type": "text", "text": "step_3_1 doubles its input; no other step does."}]
        stop = "end_turn"
    else:
        content = [
            {"type": "text", "text": f"I'll read src/module_{i}.py next."},
            {"type": "tool_use", "id": f"toolu_bb{i:04d}", "name": "Read", "input": {"file_path": f"/repo/src/module_{i}.py"}},
        ]
        stop = "tool_use"
    body = {
        "id": f"msg_bench{i:06d}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 30000 + i, "output_tokens": 40},
    }
    return json.dumps(body, separators=(",", ":")).encode()
