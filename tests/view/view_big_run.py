"""A Claude Code-sized cassette, made up: 200 model calls, each with ~32 KB of tool definitions and a ~7 KB
system prompt, a history that grows by a tool round per call, and a side call now and then that overlaps the
main one (as Claude Code's small-model calls do). Tens of MB on disk; shared by the size test and the
load-time benchmark (benchmarks/view_load.py).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from blackbox_mitm.cassette import Trace, save_trace

T0 = 1_796_000_000_000
TOOL_NAMES = ("Bash", "Read", "Edit", "Write", "Glob", "Grep", "LS", "WebFetch", "TodoWrite", "NotebookEdit", "Task", "MultiEdit")
_WORDS: tuple[str, ...] = ("the", "agent", "reads", "a", "file", "then", "runs", "tests", "and", "edits", "function", "until", "every")
_WORDS += ("assertion", "holds", "before", "it", "reports", "what", "changed", "why", "build", "is", "green", "again", "after", "refactor")


def _prose(rng: random.Random, size: int) -> str:
    out: list[str] = []
    n = 0
    while n < size:
        word = rng.choice(_WORDS)
        out.append(word)
        n += len(word) + 1
    return " ".join(out)[:size]


def tool_definitions(rng: random.Random, total: int = 32_000) -> list[dict[str, Any]]:
    each = total // len(TOOL_NAMES)
    tools = []
    for name in TOOL_NAMES:
        schema = {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": _prose(rng, 200)},
                "command": {"type": "string", "description": _prose(rng, 200)},
                "timeout": {"type": "number", "description": "milliseconds"},
            },
            "required": ["path"],
        }
        tools.append({"name": name, "description": _prose(rng, max(each - 600, 100)), "inputSchema": schema})
    return tools


def claude_code_run(path: Path, *, calls: int = 200, seed: int = 7) -> Path:
    """Write the cassette to ``path`` (it must not exist) and return it."""
    rng = random.Random(seed)
    tools = tool_definitions(rng)
    system = _prose(rng, 7_000)
    side_system = "You write a 5-word title for the conversation."
    trace = Trace.new("claude-code-big", created_at=T0)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test in tests/test_parser.py and explain the fix."}]
    now = T0 + 5
    for n in range(calls):
        start = now
        latency = rng.randint(1_500, 9_000)
        if n % 25 == 3:  # a side call that starts during the main call and ends inside it
            side_in = {
                "messages": [{"role": "user", "content": history[0]["content"]}],
                "tools": [],
                "systemPrompt": side_system,
                "model": "claude-haiku",
            }
            side_start, side_end = start + 200, start + 200 + latency // 3
            trace.append("model_input", side_in, timestamp=side_start)
            trace.append("model_output", {"type": "final_answer", "text": "Fix the parser test"}, timestamp=side_end)
        payload = {
            "messages": [dict(m) for m in history],
            "tools": tools,
            "systemPrompt": system,
            "model": "claude-sonnet",
            "params": {"maxTokens": 32000},
        }
        trace.append("model_input", payload, timestamp=start)
        end = start + latency
        if n == calls - 1:
            answer = "The parser dropped the last token; fixed the loop bound and the test passes."
            trace.append("model_output", {"type": "final_answer", "text": answer}, timestamp=end)
            trace.append("metadata", {"event": "run_completed", "status": "success", "result": answer}, timestamp=end + 3)
            break
        name = TOOL_NAMES[n % len(TOOL_NAMES)]
        cid = f"call-{n}"  # one tool call per main call
        tool_input = {"path": f"src/module_{n}.py", "command": f"pytest -q tests/test_{n}.py"}
        narration = _prose(rng, rng.randint(40, 300))
        trace.append(
            "model_output",
            {"type": "tool_calls", "calls": [{"toolCallId": cid, "toolName": name, "toolInput": tool_input}], "text": narration},
            timestamp=end,
        )
        trace.append("tool_call", {"toolCallId": cid, "toolName": name, "toolInput": tool_input}, timestamp=end + 1)
        result = _prose(rng, rng.randint(500, 3_000))
        done = end + rng.randint(50, 2_000)
        trace.append("tool_result", {"toolCallId": cid, "toolName": name, "result": result}, timestamp=done)
        history.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": narration},
                    {"type": "tool_use", "toolCallId": cid, "toolName": name, "toolInput": tool_input},
                ],
            }
        )
        history.append({"role": "user", "content": [{"type": "tool_result", "toolCallId": cid, "toolName": name, "result": result}]})
        now = done + 1
    save_trace(trace, path)
    return path
