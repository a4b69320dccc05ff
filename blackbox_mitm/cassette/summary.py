"""One line per step, the summary every listing shares (``show``, the tails of ``diff``, fork listings).

``summarize_step`` says what happened at a step: the model and the last user
text for a ``model_input``; the tool calls ``get_weather({"city":"Paris"})`` or
the final answer (and a stop marker) for a ``model_output``; ``name(args)`` for a
``tool_call``; ``name → result`` or ``name → error: ...`` for a ``tool_result``;
the terminal event for ``metadata``. ``one_line`` keeps any text to one
printable line; ``cassette.timeline`` builds ``blackbox show`` from these.
"""

from __future__ import annotations

import json
import re
from typing import Any

from blackbox_mitm.cassette.payloads import compaction_of, output_text, tokens_of, tool_calls_of
from blackbox_mitm.cassette.records import JSONObject
from blackbox_mitm.cassette.trace import TraceStep

__all__ = ["SUMMARY_LIMIT", "media_text", "one_line", "outcome_text", "summarize_step", "tokens_text"]

SUMMARY_LIMIT = 110
_TEXT_LIMIT = 60
_JSON_LIMIT = 60
_WHITESPACE = re.compile(r"\s+")


# -- one line per step ----------------------------------------------------------------


def summarize_step(step: TraceStep, *, limit: int = SUMMARY_LIMIT) -> str:
    """One line saying what happened at ``step``, at most ``limit`` characters."""
    payload = step.payload
    if not isinstance(payload, dict):
        text = _json(payload, _JSON_LIMIT)
    elif step.type == "model_input":
        text = _model_input(payload)
    elif step.type == "model_output":
        text = _model_output(payload)
    elif step.type == "tool_call":
        text = _call(payload)
    elif step.type == "tool_result":
        text = _tool_result(payload)
    elif step.type == "metadata":
        text = _metadata(payload)
    else:
        text = _json(payload, _JSON_LIMIT)
    return one_line(text, limit)


def _model_input(p: JSONObject) -> str:
    raw = p.get("messages")
    messages: list[Any] = raw if isinstance(raw, list) else []
    parts = []
    model = p.get("model")
    if isinstance(model, str) and model:
        parts.append(one_line(model, 40))
    parts.append(f"{len(messages)} message{'s' if len(messages) != 1 else ''}")
    user = _last_user_text(messages)
    parts.append(f"user: {_quote(user)}" if user is not None else "no user text")
    results = _tool_results_in(messages[-1]) if messages else []
    if results:
        parts.append("then " + ", ".join(results))
    media = _media_in(messages[-1].get("content") if messages and isinstance(messages[-1], dict) else None)
    if media:
        parts.append("with " + ", ".join(media))
    return " · ".join(parts)


def media_text(part: JSONObject) -> str:
    """A media part in words: its type, size and digest (``image/png 70 bytes 8cf8513dd0fb…``), or its reference."""
    what = str(part.get("mediaType") or part.get("type") or "media")
    if isinstance(part.get("sha256"), str):
        return f"{what} {int(part.get('size') or 0):,} bytes {part['sha256'][:12]}…"
    ref = part.get("url") if isinstance(part.get("url"), str) else part.get("file")
    return f"{what} {one_line(str(ref), 40)}" if ref is not None else what


def _media_in(value: Any) -> list[str]:
    """The media parts of a message's content (and of the tool results it carries), in words."""
    found = _media_parts(value)
    return [media_text(p) for p in found[:3]] + ([f"and {len(found) - 3} more"] if len(found) > 3 else [])


def _media_parts(value: Any) -> list[JSONObject]:
    out: list[JSONObject] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if v.get("type") in ("image", "document", "audio", "video"):
                out.append(v)
            else:
                stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))
    return out


def _last_user_text(messages: list[Any]) -> str | None:
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str) and content.strip():
            return content
        if isinstance(content, list):
            text = " ".join(
                p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
            )
            if text.strip():
                return text
    return None


def _tool_results_in(message: Any) -> list[str]:
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return []
    out = []
    for part in message["content"]:
        if isinstance(part, dict) and part.get("type") == "tool_result":
            name = _name(part.get("toolName"))
            out.append(f"{name} error" if "error" in part else f"{name} result")
    return out


def _model_output(p: JSONObject) -> str:
    calls = tool_calls_of(p)
    text = output_text(p)
    stop = p.get("stop")
    if p.get("type") in ("tool_call", "tool_calls"):
        shown = ", ".join(_call(c) for c in calls[:3]) or "no tool calls"
        if len(calls) > 3:
            shown += f", and {len(calls) - 3} more"
        out = f"calls {shown}"
        if text and text.strip():
            out = f"{_quote(text, 40)} then {out}"
    elif stop == "refusal":
        return f"refused: {_quote(text or '')}"
    else:
        out = f"answer: {_quote(text or '')}"
    media = _media_in(p.get("content"))
    if media:
        out += " + " + ", ".join(media)
    compacted = compaction_of(p)
    if compacted is not None:  # Codex's compaction: the conversation so far, as the provider's opaque data
        out = f"compacted the conversation ({len(compacted['data']):,} chars of opaque data)" + (f" · {out}" if text else "")
    if stop == "length":
        out = "[cut off at max tokens] " + out
    elif isinstance(stop, str) and stop != "refusal":
        out = f"[stop: {stop}] {out}"
    if "tokens" in p:
        out = f"[{tokens_text(tokens_of(p))}] {out}"
    return out


def _call(c: Any) -> str:
    if not isinstance(c, dict):
        return _json(c, _JSON_LIMIT)
    return f"{_name(c.get('toolName'))}({_json(c.get('toolInput'), _JSON_LIMIT)})"


def _tool_result(p: JSONObject) -> str:
    name = _name(p.get("toolName"))
    if "error" in p:
        error = p["error"]
        return f"{name} → error: {one_line(error, _TEXT_LIMIT) if isinstance(error, str) else _json(error, _JSON_LIMIT)}"
    return f"{name} → {_json(p.get('result'), 80)}"


def _metadata(p: JSONObject) -> str:
    event = p.get("event")
    if event == "run_completed":
        result = p.get("result")
        return "run completed" + (f": {_quote(result)}" if isinstance(result, str) else "")
    if event == "run_failed":
        return "run failed: " + _failure(p)
    rest = {k: v for k, v in p.items() if k != "event"}
    head = one_line(event, 40) if isinstance(event, str) else "metadata"
    return head + (f" {_json(rest, 80)}" if rest else "")


def _failure(p: JSONObject) -> str:
    reason = p.get("reason")
    out = one_line(reason, 40) if isinstance(reason, str) else "unknown reason"
    details = []
    if "exitCode" in p:
        details.append(f"exit code {_json(p['exitCode'], 12)}")
    if "inFlight" in p:
        details.append(f"{_json(p['inFlight'], 12)} calls in flight")
    if "maxSteps" in p:
        details.append(f"limit {_json(p['maxSteps'], 12)} steps")
    if "toolName" in p:
        details.append(f"tool {_name(p['toolName'])}")
    if details:
        out += f" ({', '.join(details)})"
    message = p.get("message")
    if isinstance(message, str) and message:
        out += f": {_quote(message)}"
    return out


def outcome_text(terminal: Any) -> str:
    """How the run ended, in words, from its terminal metadata payload (None: no end marker)."""
    if not isinstance(terminal, dict):
        return "no end marker (still recording, or stopped without one)"
    if terminal.get("event") == "run_completed":
        return "ended: run completed"
    reason = terminal.get("reason")
    return "ended: run failed" + (f" ({one_line(reason, 40)})" if isinstance(reason, str) else "")


# -- text helpers ---------------------------------------------------------------------


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs become one space), cut to ``limit`` with "…",
    with lone surrogates written as ``\\udXXX`` so that any terminal can print it."""
    flat = _WHITESPACE.sub(" ", text).strip()
    if len(flat) > limit:
        flat = flat[: max(limit - 1, 0)].rstrip() + "…"
    return flat.encode("utf-8", "backslashreplace").decode("utf-8")


def _quote(text: str, limit: int = _TEXT_LIMIT) -> str:
    return f'"{one_line(text, limit)}"'


def _name(name: Any) -> str:
    return one_line(name, 40) if isinstance(name, str) and name else "?"


def _json(value: Any, limit: int) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except RecursionError:
        text = "(nested too deep to show)"
    except (TypeError, ValueError):
        text = repr(value)
    return one_line(text, limit)


def tokens_text(counts: dict[str, int] | tuple[int, int, int, int]) -> str:
    """``1,200 in (1,000 cached) / 80 out (12 reasoning)``."""
    given_in, given_out, cached, reasoning = (
        counts if isinstance(counts, tuple) else (counts["input"], counts["output"], counts["cachedInput"], counts["reasoning"])
    )
    out = f"{given_in:,} in"
    if cached:
        out += f" ({cached:,} cached)"
    out += f" / {given_out:,} out"
    if reasoning:
        out += f" ({reasoning:,} reasoning)"
    return out
