"""A scripted "model" for Claude Code: answers Anthropic Messages requests by what they ask, so Claude Code uses its tools.

Claude Code sends many model calls, some at once (its subagents run in
parallel), so a list of answers consumed in order cannot script it. This
responder reads each request instead — the first user message says which
task it is, the last one whether tool results came back — and answers the way
a model would. It is written from the wire format (shared/providers.md), not
from blackbox_mitm. Plug it into the fake provider::

    FakeProvider(responder=claude_code_model.respond)          # in Python
    python examples/fake_provider.py --responder claude-code   # from a shell

Tasks, chosen by a marker in the prompt (``claude -p "… TASK …"``):

``BB-READ``
    Read ``notes.txt`` in the working directory, then answer with its first line.
``BB-AGENTS``
    Two foreground subagents (the Agent tool with ``run_in_background: false``)
    and a Read, in one turn; each subagent answers after a random delay, so
    they finish in a different order on every run. Then a summary of the three
    results.
``BB-BACKGROUND``
    The same two subagents in the background (Claude Code's default), alpha
    thinking 0.2 s and beta 1.5 s (``BACKGROUND_THINK_MS``): the turn ends
    while they run; Claude Code reports each as it finishes, and once both
    have, the answer sums up what they said. Replayed as fast as possible,
    both finish at once and Claude Code makes one call fewer; replayed with
    the recorded pace, it makes the same calls.

``BB-IMAGE``
    Think (a signed thinking block), Read ``img.png`` and ``doc.pdf`` in the
    working directory (Claude Code sends the picture back as an image block and
    the PDF as a document block), then think again and say what it received.

``BB-TOOLSEARCH``
    Load WebFetch through Claude Code's ``ToolSearch`` tool (its result is
    ``tool_reference`` blocks), then say which tools the result named.

Subagents are told apart by their prompt (``BB-SUB alpha`` / ``BB-SUB beta``).
Anything else gets a short text answer (Claude Code's side calls, such as a
title for the session).
"""

from __future__ import annotations

import random
import re
from typing import Any

Answer = dict[str, Any]
Json = dict[str, Any]

SUBAGENTS = ("alpha", "beta")
BACKGROUND_THINK_MS = {"alpha": 200, "beta": 1500}
_CWD = re.compile(r"Primary working directory: (\S+)")


def _blocks(content: Any) -> list[Json]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _text(content: Any) -> str:
    return "\n".join(str(b.get("text", "")) for b in _blocks(content) if b.get("type") == "text")


def _result_text(block: Json) -> str:
    content = block.get("content")
    return content if isinstance(content, str) else _text(content)


def _user_texts(body: Json) -> list[str]:
    return [_text(m.get("content")) for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]


def _working_directory(body: Json) -> str:
    everything = " ".join([_text(body.get("system")), *_user_texts(body)])
    found = _CWD.search(everything)
    return found.group(1) if found else "."


def _last_results(body: Json) -> list[str]:
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    if not messages or messages[-1].get("role") != "user":
        return []
    return [_result_text(b) for b in _blocks(messages[-1].get("content")) if b.get("type") == "tool_result"]


def _turns(body: Json) -> int:
    """How many answers of ours the history holds."""
    return sum(1 for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "assistant")


def _agent_call(name: str, background: bool) -> Json:
    arguments: Json = {
        "description": f"Count {name}",
        "prompt": f"BB-SUB {name}{' (background)' if background else ''}: say how many letters the word {name} has.",
        "subagent_type": "general-purpose",
    }
    if not background:
        arguments["run_in_background"] = False
    return {"name": "Agent", "arguments": arguments}


def _subagent(name: str, body: Json) -> Answer:
    # Foreground: a random think time, so the subagents finish in a different order on every run. Background:
    # fixed think times far apart, so Claude Code reports each in a notification of its own.
    background = "(background)" in (_user_texts(body) or [""])[0]
    delay = BACKGROUND_THINK_MS[name] if background else random.randint(50, 900)
    return {"text": f"The word {name} has {len(name)} letters.", "delay_ms": delay}


def _read(body: Json) -> Json:
    return {"name": "Read", "arguments": {"file_path": f"{_working_directory(body)}/notes.txt"}}


def _task_read(body: Json) -> Answer:
    results = _last_results(body)
    if not results:
        return {"text": "I'll read the notes.", "tool_calls": [_read(body)]}
    first = next((line for line in results[0].splitlines() if line.strip()), "")
    return {"text": "The first line of notes.txt is: " + re.sub(r"^\s*\d+\s*[→\t]\s*", "", first)}


def _task_image(body: Json) -> Answer:
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    last = _blocks(messages[-1].get("content")) if messages else []
    results = [b for b in last if b.get("type") == "tool_result"]
    if not results:
        reads = [{"name": "Read", "arguments": {"file_path": f"{_working_directory(body)}/{name}"}} for name in ("img.png", "doc.pdf")]
        return {"thinking": "The user asks about an image and a PDF: read both first.", "text": "I'll look at both.", "tool_calls": reads}
    held = []
    for result in results:
        content = result.get("content")
        kinds = sorted({b.get("type", "?") for b in content if isinstance(b, dict)}) if isinstance(content, list) else ["text"]
        held.append("+".join(kinds))
    return {"thinking": "Both Read results came back.", "text": "The Read results held: " + ", ".join(held) + "."}


def _task_tool_search(body: Json) -> Answer:
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    last = _blocks(messages[-1].get("content")) if messages else []
    results = [b for b in last if b.get("type") == "tool_result"]
    if not results:
        names = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
        if "ToolSearch" not in names:
            return {"text": "No ToolSearch tool offered."}
        return {
            "text": "Loading WebFetch.",
            "tool_calls": [{"name": "ToolSearch", "arguments": {"query": "select:WebFetch", "max_results": 1}}],
        }
    content = results[0].get("content")
    refs = (
        [b.get("tool_name") for b in content if isinstance(b, dict) and b.get("type") == "tool_reference"]
        if isinstance(content, list)
        else []
    )
    return {"text": "Loaded: " + (", ".join(str(r) for r in refs) or "nothing") + "."}


def _task_agents(body: Json, background: bool) -> Answer:
    results = _last_results(body)
    texts = _user_texts(body)
    if _turns(body) == 0:
        calls = [_agent_call(n, background) for n in SUBAGENTS]
        if not background:
            calls.append(_read(body))
        return {"text": "Two agents and a read, at once.", "tool_calls": calls}
    if background:
        finished = [n for n in SUBAGENTS if any(f"The word {n} has" in t for t in texts + results)]
        if len(finished) < len(SUBAGENTS):
            return {"text": "Waiting for the agents: " + (", ".join(finished) or "none") + " finished so far."}
        return {"text": "Both agents finished: alpha has 5 letters, beta has 4."}
    said = " ".join(sorted(line.strip() for r in results for line in r.splitlines() if line.strip().startswith("The word")))
    return {"text": f"Done. {said}"}


def respond(kind: str, body: Json) -> Answer:
    """The answer to one request (``kind`` is the provider: only "anthropic" is scripted)."""
    if kind != "anthropic":
        return {"text": "This responder only speaks for Claude Code."}
    texts = _user_texts(body)
    first = texts[0] if texts else ""
    for name in SUBAGENTS:
        if f"BB-SUB {name}" in first:
            return _subagent(name, body)
    if "BB-READ" in first:
        return _task_read(body)
    if "BB-TOOLSEARCH" in first:
        return _task_tool_search(body)
    if "BB-IMAGE" in first:
        return _task_image(body)
    if "BB-AGENTS" in first:
        return _task_agents(body, background=False)
    if "BB-BACKGROUND" in first:
        return _task_agents(body, background=True)
    return {"text": "Hello from the scripted model."}
