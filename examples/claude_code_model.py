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
``BB-COPY``
    Read ``notes.txt`` in the working directory by its absolute path, write its
    first line to ``copy.txt`` there (the Write tool, an absolute path too),
    then say so.
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
    both finish an order gap apart and Claude Code may make one call fewer;
    replayed with the recorded pace, it makes the same calls.

``BB-TOGETHER-2`` / ``BB-TOGETHER-3``
    Two (alpha, beta) or three (alpha, beta, gamma) background subagents whose
    answers the provider sends within milliseconds of each other
    (``TOGETHER_SPACING_MS`` apart, the last started first, ``TOGETHER_THINK_MS``
    after the first of them asked): the order Claude Code sees them finish
    in is a race on any machine. Claude Code reports them as they finish;
    once all have, the answer sums up what they said.

``BB-BEHIND``
    Two background subagents: alpha thinks 0.2 s; beta is answered only once the
    turn that reports alpha alone has arrived (then ``BEHIND_THINK_MS`` later),
    and that turn's answer is slow (``BEHIND_TURN_MS``): beta ends while that
    turn is still being answered, so Claude Code reports it in a turn of its own
    afterwards. Its request arrived before beta's answer completed, by
    construction rather than by timing (so it holds on a loaded machine): what a
    replay must wait for before it lets beta end (``session/release.py``,
    happens-before).

``BB-FORKS``
    Call the ``list_forks`` tool of the ``blackbox`` MCP server (``blackbox mcp``,
    which Claude Code names ``mcp__blackbox__list_forks``) on ``runs/weather.json``,
    then answer with the lines of its result that say where each fork was cut and
    where it first parted from its parent.

``BB-FETCH``
    A Bash ``curl -s https://docs.example.com/page.html``, then a WebFetch of
    ``https://docs.example.com/other.html``, then an answer quoting both
    results (the web is a local stand-in reached through ``--map-remote``).
``BB-MCP``
    Calls the MCP tool ``mcp__notes__lookup`` (an MCP server named ``notes``)
    with ``{"word": "alpha"}``, then answers with what it returned.

``BB-IMAGE``
    Think (a signed thinking block), Read ``img.png`` and ``doc.pdf`` in the
    working directory (Claude Code sends the picture back as an image block and
    the PDF as a document block), then think again and say what it received.

``BB-TOOLSEARCH``
    Load WebFetch through Claude Code's ``ToolSearch`` tool (its result is
    ``tool_reference`` blocks), then say which tools the result named.

``BB-TOOLSEARCH-WEB``
    Claude Code's defaults (tool search on): load WebFetch and WebSearch with one
    ``ToolSearch`` call (``select:WebFetch,WebSearch``, answered with two
    ``tool_reference`` blocks), then WebFetch ``https://docs.example.com/page.html``
    (the web is a local stand-in; Claude Code's own sub-call about the page is
    answered with the page's line that answers the question), then WebSearch (its sub-call is ``BB-SEARCH``'s
    server-side search), then an answer naming the loaded tools and quoting both
    results.

``BB-TOOLSEARCH-MCP``
    Claude Code's defaults (tool search on) with an MCP server named ``notes``
    (``examples/mcp_notes_server.py --stdio``): its tool is deferred, so the
    model loads it with ``ToolSearch`` (``select:mcp__notes__lookup``, answered
    with a ``tool_reference`` block), calls ``mcp__notes__lookup`` with
    ``{"word": "alpha"}``, then answers naming the loaded tool and quoting what
    the server returned.

``BB-SEARCH``
    A WebSearch (with tool search off, so the tool is offered directly): Claude
    Code asks the model again with Anthropic's server-side ``web_search_20250305``
    tool, and this "model" answers that sub-call as the API does — a
    ``server_tool_use`` block, a ``web_search_tool_result`` block with two
    results, then text with ``web_search_result_location`` citations, a
    ``container``-less message with ``usage.server_tool_use`` — streamed when
    asked to stream. Then the answer quotes what the WebSearch tool returned.

``BB-COMPACT``
    A long session: the Read's turn reports 995,000 input tokens (``COMPACT_USAGE``),
    past the auto-compact threshold of the 1M-token window of Claude Code's
    default model, so Claude Code compacts: it asks for a summary of the
    conversation (answered with one that names the task again), continues from
    it, and the answer says it did.

``BB-THINK``
    Think (a signed thinking block), then Read ``notes.txt``; think again and
    answer with its first line. ``respond_checking_thinking`` answers like
    Anthropic with thinking on: an assistant turn with a ``tool_use`` sent back
    without its thinking block first, or with a signature this model never
    made, is a 400 (``Expected `thinking` or `redacted_thinking`, but found
    `tool_use```). Signatures are an HMAC of the thinking text under this
    model's own key, so any instance of it checks another's, as Anthropic's
    servers do (what a ``fork --live`` against a new fake needs).

Subagents are told apart by their prompt (``BB-SUB alpha`` / ``BB-SUB beta``).
Anything else gets a short text answer (Claude Code's side calls, such as a
title for the session).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import random
import re
import secrets
import threading
import time
from typing import Any

Answer = dict[str, Any]
Json = dict[str, Any]

SUBAGENTS = ("alpha", "beta")
BACKGROUND_THINK_MS = {"alpha": 200, "beta": 1500}
BEHIND_THINK_MS = {"alpha": 200, "beta": 200}  # beta: after the turn reporting alpha has arrived
BEHIND_TURN_MS = 1500  # the turn reporting alpha: still being answered when beta ends
BEHIND_WAIT_S = 60  # beta waits at most this long for that turn (a run that never sends it is not left hanging)
_behind_reported = threading.Event()  # set when the turn reporting alpha alone arrives; cleared by a new run
TOGETHER = ("alpha", "beta", "gamma")
TOGETHER_THINK_MS = 800  # after the first subagent asked: every one of them has asked by then
TOGETHER_SPACING_MS = 3
_together_lock = threading.Lock()
_together_start: dict[int, float] = {}  # subagents in the batch -> when the first of them asked (time.monotonic)
_CWD = re.compile(r"Primary working directory: ([^\s\\\"]+)")


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
    found = _CWD.search(json.dumps(body))  # wherever Claude Code puts its environment block
    return found.group(1) if found else "."


def _last_results(body: Json) -> list[str]:
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    if not messages or messages[-1].get("role") != "user":
        return []
    return [_result_text(b) for b in _blocks(messages[-1].get("content")) if b.get("type") == "tool_result"]


def _turns(body: Json) -> int:
    """How many answers of ours the history holds."""
    return sum(1 for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "assistant")


def _agent_call(name: str, background: bool, together: int = 0, behind: bool = False) -> Json:
    where = f" (together {together})" if together else " (behind)" if behind else " (background)" if background else ""
    arguments: Json = {
        "description": f"Count {name}",
        "prompt": f"BB-SUB {name}{where}: say how many letters the word {name} has.",
        "subagent_type": "general-purpose",
    }
    if not background:
        arguments["run_in_background"] = False
    return {"name": "Agent", "arguments": arguments}


def _together_delay(name: str, count: int) -> float:
    """When this subagent answers: the batch's start plus the think time, the last-started first, a few ms apart."""
    now = time.monotonic()
    with _together_lock:
        start = _together_start.get(count)
        if start is None or now - start > 10:  # a new batch (another run)
            start = _together_start[count] = now
    rank = count - 1 - TOGETHER.index(name)
    return max(0.0, (start - now) * 1000 + TOGETHER_THINK_MS + rank * TOGETHER_SPACING_MS)


def _subagent(name: str, body: Json) -> Answer:
    # Foreground: a random think time, so the subagents finish in a different order on every run. Background:
    # fixed think times far apart, so Claude Code reports each in a notification of its own. Together: a race.
    first = (_user_texts(body) or [""])[0]
    together = re.search(r"\(together (\d)\)", first)
    if together:
        delay: float = _together_delay(name, int(together.group(1)))
    elif "(behind)" in first:
        if name != "alpha":
            _behind_reported.wait(BEHIND_WAIT_S)
        delay = BEHIND_THINK_MS[name]
    elif "(background)" in first:
        delay = BACKGROUND_THINK_MS[name]
    else:
        delay = random.randint(50, 900)
    return {"text": f"The word {name} has {len(name)} letters.", "delay_ms": delay}


def _read(body: Json) -> Json:
    return {"name": "Read", "arguments": {"file_path": f"{_working_directory(body)}/notes.txt"}}


def _task_read(body: Json) -> Answer:
    results = _last_results(body)
    if not results:
        return {"text": "I'll read the notes.", "tool_calls": [_read(body)]}
    first = next((line for line in results[0].splitlines() if line.strip()), "")
    return {"text": "The first line of notes.txt is: " + re.sub(r"^\s*\d+\s*[→\t]\s*", "", first)}


def _task_copy(body: Json) -> Answer:
    results = _last_results(body)
    if not results:
        return {"text": "I'll read the notes.", "tool_calls": [_read(body)]}
    if _turns(body) == 1:
        first = next((line for line in results[0].splitlines() if line.strip()), "")
        line = re.sub(r"^\s*\d+\s*[→\t]\s*", "", first)
        path = f"{_working_directory(body)}/copy.txt"
        return {"text": "Writing the copy.", "tool_calls": [{"name": "Write", "arguments": {"file_path": path, "content": line + "\n"}}]}
    return {"text": "Copied the first line of notes.txt to copy.txt."}


def _task_image(body: Json) -> Answer:
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    last = _blocks(messages[-1].get("content")) if messages else []
    results = [b for b in last if b.get("type") == "tool_result"]
    if not results:
        reads = [{"name": "Read", "arguments": {"file_path": f"{_working_directory(body)}/{name}"}} for name in ("img.png", "doc.pdf")]
        return {"thinking": "The user asks about an image and a PDF: read both first.", "text": "I'll look at both.", "tool_calls": reads}
    # In the order the model asked for them: Claude Code runs the two Reads at once and may send their results in
    # the order they finished, so the answer would otherwise depend on which file was read first.
    asked = [b.get("id") for b in _blocks(messages[-2].get("content")) if b.get("type") == "tool_use"] if len(messages) > 1 else []
    results.sort(key=lambda r: asked.index(r.get("tool_use_id")) if r.get("tool_use_id") in asked else len(asked))
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


FETCH_QUESTION = "What is the answer on this page?"


def _fetch_summary(first: str) -> Answer:
    """WebFetch's own sub-call (the page as markdown, then the question): the page's line that answers it."""
    line = next((x.strip() for x in first.splitlines() if "answer is" in x), "no answer on the page")
    return {"text": f"The page says: {line}"}


def _loaded_tools(body: Json) -> list[str]:
    """The tools the history's ToolSearch results named (their ``tool_reference`` blocks), in order."""
    loaded: list[str] = []
    for m in body.get("messages", []):
        for b in _blocks(m.get("content")) if isinstance(m, dict) and m.get("role") == "user" else []:
            content = b.get("content") if b.get("type") == "tool_result" else None
            loaded += [str(r.get("tool_name")) for r in content or [] if isinstance(r, dict) and r.get("type") == "tool_reference"]
    return loaded


def _task_tool_search_web(body: Json) -> Answer:
    turns = _turns(body)
    if turns == 0:
        query = {"query": "select:WebFetch,WebSearch", "max_results": 2}
        return {"text": "Loading the web tools.", "tool_calls": [{"name": "ToolSearch", "arguments": query}]}
    if turns == 1:
        fetch = {"url": FETCH_PAGE, "prompt": FETCH_QUESTION}
        return {"text": "Fetching the page.", "tool_calls": [{"name": "WebFetch", "arguments": fetch}]}
    if turns == 2:
        return {"text": "Now searching the web.", "tool_calls": [{"name": "WebSearch", "arguments": {"query": SEARCH_QUERY}}]}
    loaded = _loaded_tools(body)
    fetched, searched = (" ".join(r.split()) for r in _all_results(body)[-2:])
    return {"text": f"Loaded: {', '.join(loaded)}.\nFetched: {fetched}\nSearched: {searched}"}


MCP_TOOL = "mcp__notes__lookup"


def _task_tool_search_mcp(body: Json) -> Answer:
    turns = _turns(body)
    if turns == 0:
        query = {"query": f"select:{MCP_TOOL}", "max_results": 1}
        return {"text": "Loading the notes tool.", "tool_calls": [{"name": "ToolSearch", "arguments": query}]}
    if turns == 1:
        offered = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
        if MCP_TOOL not in offered:
            return {"text": f"ToolSearch did not load {MCP_TOOL}; offered: {', '.join(map(str, offered))}."}
        return {"text": "Asking the notes server.", "tool_calls": [{"name": MCP_TOOL, "arguments": {"word": "alpha"}}]}
    loaded = _loaded_tools(body)
    said = " ".join(" ".join(r.split()) for r in _last_results(body))
    return {"text": f"Loaded: {', '.join(loaded)}.\nThe notes server said: {said}"}


def _task_agents(body: Json, background: bool, together: int = 0, behind: bool = False) -> Answer:
    results = _last_results(body)
    texts = _user_texts(body)
    names = TOGETHER[:together] if together else SUBAGENTS
    if _turns(body) == 0:
        if behind:
            _behind_reported.clear()
        calls = [_agent_call(n, background, together, behind) for n in names]
        if not background:
            calls.append(_read(body))
        return {"text": f"{len(names)} background agents, at once." if together else "Two agents and a read, at once.", "tool_calls": calls}
    if background:
        # In the order the notifications name them: the order they finished in, as Claude Code saw it.
        said = " ".join(texts + results)
        finished = sorted((n for n in names if f"The word {n} has" in said), key=lambda n: said.index(f"The word {n} has"))
        if len(finished) < len(names):
            waiting: Answer = {"text": "Waiting for the agents: " + (", ".join(finished) or "none") + " finished so far."}
            if behind and finished:
                _behind_reported.set()
                waiting["delay_ms"] = BEHIND_TURN_MS
            return waiting
        if not together:
            return {"text": "Both agents finished: alpha has 5 letters, beta has 4."}
        return {"text": "All agents finished, in this order: " + ", ".join(f"{n} ({len(n)})" for n in finished) + "."}
    said = " ".join(sorted(line.strip() for r in results for line in r.splitlines() if line.strip().startswith("The word")))
    return {"text": f"Done. {said}"}


FORKS_TOOL = "mcp__blackbox__list_forks"


def _task_forks(body: Json) -> Answer:
    results = _last_results(body)
    if not results:
        return {"text": "I'll ask blackbox for the forks.", "tool_calls": [{"name": FORKS_TOOL, "arguments": {"run": "runs/weather.json"}}]}
    keep = ("fork ", "cut at step", "first divergence", "DIVERGED")
    said = [line.strip() for line in results[0].splitlines() if line.strip().startswith(keep)]
    return {"text": "The forks of runs/weather.json, as blackbox lists them:\n" + "\n".join(said)}


FETCH_PAGE = "https://docs.example.com/page.html"
FETCH_OTHER = "https://docs.example.com/other.html"


def _task_fetch(body: Json) -> Answer:
    turns = _turns(body)
    if turns == 0:
        return {
            "text": "Fetching the page.",
            "tool_calls": [{"name": "Bash", "arguments": {"command": f"curl -s {FETCH_PAGE}", "description": "Fetch the page"}}],
        }
    if turns == 1:
        return {
            "text": "Now the other page.",
            "tool_calls": [{"name": "WebFetch", "arguments": {"url": FETCH_OTHER, "prompt": "What does the page say?"}}],
        }
    seen = " | ".join(" ".join(r.split()) for r in _all_results(body))
    return {"text": f"Fetched: {seen}"}


def _all_results(body: Json) -> list[str]:
    out = []
    for m in body.get("messages", []):
        if isinstance(m, dict) and m.get("role") == "user":
            out += [_result_text(b) for b in _blocks(m.get("content")) if b.get("type") == "tool_result"]
    return out


def _task_mcp(body: Json) -> Answer:
    if _turns(body) == 0:
        return {"text": "Asking the notes server.", "tool_calls": [{"name": "mcp__notes__lookup", "arguments": {"word": "alpha"}}]}
    return {"text": "The notes server said: " + " ".join(" ".join(r.split()) for r in _last_results(body))}


COMPACT_USAGE = {"input": 995_000, "output": 120}  # near the 1M-token window: Claude Code compacts before its next call
SUMMARY_ASKED = "create a detailed summary of the conversation"
CONTINUED = "continued from a previous conversation"


def _task_compact(body: Json) -> Answer:
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    if messages and SUMMARY_ASKED in _text(messages[-1].get("content")):
        summary = "BB-COMPACT: the user asked for the first line of notes.txt; the Read returned it: Blackbox notes."
        return {"text": f"<analysis>One Read so far.</analysis>\n<summary>{summary}</summary>", "usage": {"input": 2_000, "output": 40}}
    if any(CONTINUED in _text(m.get("content")) for m in messages if m.get("role") == "user"):
        return {"text": "After compacting: the first line of notes.txt is Blackbox notes.", "usage": {"input": 3_000, "output": 15}}
    if not _last_results(body):
        return {"text": "I'll read the notes.", "tool_calls": [_read(body)], "usage": COMPACT_USAGE}
    return {"text": "The first line of notes.txt is: Blackbox notes (no compaction)."}


def _task_think(body: Json) -> Answer:
    results = _last_results(body)
    if not results:
        return {"thinking": "The user wants the first line: read the file.", "text": "I'll read the notes.", "tool_calls": [_read(body)]}
    first = next((line for line in results[0].splitlines() if line.strip()), "")
    return {"thinking": "The Read came back.", "text": "The first line of notes.txt is: " + re.sub(r"^\s*\d+\s*[→\t]\s*", "", first)}


THINKING_KEY = b"claude-code-model: not a real key"


def thinking_signature(thinking: str) -> str:
    """The signature this model puts on a thinking block: an HMAC of its text (any instance can check it)."""
    return "Eq" + hmac.new(THINKING_KEY, thinking.encode(), hashlib.sha256).hexdigest()[:40]


def thinking_error(body: Json) -> str | None:
    """What Anthropic says of a history whose tool-use turns lack their signed thinking (thinking on); None when it is right."""
    if not isinstance(body.get("thinking"), dict) or body["thinking"].get("type") == "disabled":
        return None
    for n, message in enumerate(m for m in body.get("messages", []) if isinstance(m, dict)):
        blocks = _blocks(message.get("content")) if message.get("role") == "assistant" else []
        if not any(b.get("type") == "tool_use" for b in blocks):
            continue
        head = blocks[0]
        if head.get("type") not in ("thinking", "redacted_thinking"):
            return (
                f"messages.{n}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{head.get('type')}`. "
                "When `thinking` is enabled, a final `assistant` message must start with a thinking block."
            )
        if head.get("type") == "thinking" and head.get("signature") != thinking_signature(str(head.get("thinking", ""))):
            return f"messages.{n}.content.0: Invalid `signature` in `thinking` block"
    return None


def respond_checking_thinking(kind: str, body: Json) -> Answer:
    """``respond``, with Anthropic's check of thinking blocks in the history and signatures it can check."""
    error = thinking_error(body) if kind == "anthropic" else None
    if error is not None:
        return {"status": 400, "message": error}
    answer = respond(kind, body)
    if answer.get("thinking"):
        answer = {**answer, "signature": thinking_signature(answer["thinking"])}
    return answer


def respond(kind: str, body: Json) -> Answer:
    """The answer to one request (``kind`` is the provider: only "anthropic" is scripted)."""
    if kind != "anthropic":
        return {"text": "This responder only speaks for Claude Code."}
    texts = _user_texts(body)
    first = texts[0] if texts else ""
    for name in TOGETHER:
        if f"BB-SUB {name}" in first:
            return _subagent(name, body)
    if "BB-READ" in first:
        return _task_read(body)
    if any("BB-COMPACT" in t for t in texts):  # after compacting, the task is named in the summary
        return _task_compact(body)
    if "BB-COPY" in first:
        return _task_copy(body)
    if first.lstrip().startswith("Web page content:") and FETCH_QUESTION in first:
        return _fetch_summary(first)
    if "BB-TOOLSEARCH-MCP" in first:
        return _task_tool_search_mcp(body)
    if "BB-TOOLSEARCH-WEB" in first:
        return _task_tool_search_web(body)
    if "BB-TOOLSEARCH" in first:
        return _task_tool_search(body)
    if "BB-IMAGE" in first:
        return _task_image(body)
    if "BB-THINK" in first:
        return _task_think(body)
    if "BB-AGENTS" in first:
        return _task_agents(body, background=False)
    if "BB-FETCH" in first:
        return _task_fetch(body)
    if "BB-MCP" in first:
        return _task_mcp(body)
    if "BB-BACKGROUND" in first:
        return _task_agents(body, background=True)
    if "BB-BEHIND" in first:
        return _task_agents(body, background=True, behind=True)
    if "BB-FORKS" in first:
        return _task_forks(body)
    if first.startswith(SEARCH_PROMPT):
        return _web_search_answer(first[len(SEARCH_PROMPT) :], body)
    if "BB-SEARCH" in first:
        return _task_search(body)
    together = re.search(r"BB-TOGETHER-(\d)", first)
    if together:
        return _task_agents(body, background=True, together=min(int(together.group(1)), len(TOGETHER)))
    return {"text": "Hello from the scripted model."}


SEARCH_PROMPT = "Perform a web search for the query: "  # Claude Code's sub-call for its WebSearch tool
SEARCH_QUERY = "blackbox mitmproxy recorder"
SEARCH_RESULTS = (
    ("Blackbox for mitmproxy", "https://docs.example.com/blackbox"),
    ("Recording LLM agents", "https://blog.example.com/recording-agents"),
)


def _task_search(body: Json) -> Answer:
    results = _last_results(body)
    if not results:
        return {"text": "Searching the web.", "tool_calls": [{"name": "WebSearch", "arguments": {"query": SEARCH_QUERY}}]}
    return {"text": "The search said: " + " ".join(results[0].split())}


def _web_search_answer(query: str, body: Json) -> Answer:
    """The sub-call with the server-side web_search tool, answered as the API answers it (whole or streamed)."""
    call_id = "srvtoolu_01" + secrets.token_hex(11)
    results = [
        {
            "type": "web_search_result",
            "title": title,
            "url": url,
            "encrypted_content": "Eq" + secrets.token_hex(30),
            "page_age": "2 days ago",
        }
        for title, url in SEARCH_RESULTS
    ]
    cite = {
        "type": "web_search_result_location",
        "url": SEARCH_RESULTS[0][1],
        "title": SEARCH_RESULTS[0][0],
        "encrypted_index": "Eo" + secrets.token_hex(15),
        "cited_text": "Blackbox records what an LLM agent says to its model provider.",
    }
    blocks: list[Json] = [
        {"type": "text", "text": "I'll search for that."},
        {"type": "server_tool_use", "id": call_id, "name": "web_search", "input": {"query": query}},
        {"type": "web_search_tool_result", "tool_use_id": call_id, "content": results},
        {"type": "text", "text": "Blackbox records an agent's model calls", "citations": [cite]},
        {"type": "text", "text": " and replays them offline."},
    ]
    usage = {"input_tokens": 2048, "output_tokens": 96, "server_tool_use": {"web_search_requests": 1}}
    message = {
        "id": "msg_01" + secrets.token_hex(11),
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-sonnet-4-5"),
        "content": blocks,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }
    if not body.get("stream"):
        return {"raw": message}
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[Json] = [{"type": "message_start", "message": start}]
    for i, block in enumerate(blocks):
        if block["type"] == "server_tool_use":
            events.append({"type": "content_block_start", "index": i, "content_block": {**block, "input": {}}})
            events.append(
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
                }
            )
        elif block["type"] == "text":
            events.append({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": "", "citations": None}})
            for citation in block.get("citations", []):
                events.append({"type": "content_block_delta", "index": i, "delta": {"type": "citations_delta", "citation": citation}})
            events.append({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": block["text"]}})
        else:
            events.append({"type": "content_block_start", "index": i, "content_block": block})
        events.append({"type": "content_block_stop", "index": i})
    events.append({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 96}})
    events.append({"type": "message_stop"})
    return {"raw_events": events}
