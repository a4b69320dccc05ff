"""The refused fields, as data: every row of the limitations page, for both providers.

A codec never writes a refusal's reason itself: it calls ``refuse(row_id, field)``
with the JSON path of the offending field, and the reason comes from this table.
The tests read the same table (one parametrized case per row), so a row added
here without a codec check, or a check without a row, fails the suite.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NoReturn

from blackbox_mitm.errors import BlackboxUnsupportedError

__all__ = ["REFUSALS", "Refusal", "quote_value", "refuse", "register_rows", "row"]


@dataclass(frozen=True, slots=True)
class Refusal:
    id: str
    provider: str  # "openai" | "anthropic" | "both"
    side: str  # "request" | "response" | "path"
    what: str  # the limitations page's wording
    reason: str


# One row per line: this is a table.
# fmt: off
REFUSALS: tuple[Refusal, ...] = (
    # --- Not supported yet ---------------------------------------------------------
    Refusal("openai.image_content", "openai", "request", "non-text content (images, files, audio input) in messages", "non-text content is not supported yet: only text is recorded"),
    Refusal("anthropic.image_content", "anthropic", "request", "non-text content (images, documents) in messages or tool results", "non-text content is not supported yet: only text is recorded"),
    Refusal("anthropic.server_tool", "anthropic", "request", "server-side tools (web search, code execution, ...)", "server-side tools are not supported yet: their results are produced by the provider and could not be replayed"),
    Refusal("anthropic.server_tool_response", "anthropic", "response", "server-side tool blocks in a response", "server-side tool use is not supported yet: it could not be replayed"),
    Refusal("openai.custom_tool", "openai", "request", "OpenAI custom tools (type: custom)", "custom tools are not supported yet: use function tools"),
    Refusal("openai.custom_tool_call", "openai", "response", "a custom tool call in a response or the history", "custom tools are not supported yet: use function tools"),
    Refusal("openai.n", "openai", "request", "several choices per request (n > 1)", "several choices per request are not supported: a replay returns one"),
    Refusal("openai.choices", "openai", "response", "a response with more than one choice", "several choices per request are not supported: a replay returns one"),
    # --- Refused request and response fields ---------------------------------------
    Refusal("openai.audio", "openai", "request", "the audio request field", "audio output is not recorded"),
    Refusal("openai.audio_response", "openai", "response", "audio in a response or in the history", "audio output is not recorded"),
    Refusal("openai.functions", "openai", "request", "the legacy functions / function_call request fields", "use tools"),
    Refusal("openai.function_call_message", "openai", "response", "a function_call in a response or the history", "use tools"),
    Refusal("openai.message_name", "openai", "request", "a message name (messages[i].name)", "not recorded; two requests differing only in name would match"),
    Refusal("openai.strict_tool", "openai", "request", "strict: true on a function tool", "not recorded (strict: false, the default, records like leaving it out)"),
    Refusal("openai.content_filter", "openai", "response", 'a response with finish_reason: "content_filter"', "it would replay as a normal stop"),
    Refusal("anthropic.strict_tool", "anthropic", "request", "strict: true on a tool", "not recorded (strict: false records like leaving it out)"),
    Refusal("anthropic.stop_sequence", "anthropic", "response", 'a response with stop_reason: "stop_sequence"', "the matched sequence is not recorded; it would replay as end_turn"),
    Refusal("anthropic.context_window", "anthropic", "response", 'a response with stop_reason: "model_context_window_exceeded"', "it would replay as max_tokens"),
    Refusal("anthropic.text_blocks", "anthropic", "response", "a response with more than one text block, or text after a tool call", "a replay returns one text block before the tool calls"),
    Refusal("openai.tool_calls_finish", "openai", "response", "tool calls with a finish_reason other than tool_calls or length", "it would replay as tool_calls (the API sends stop when tool_choice names a function)"),
    Refusal("openai.null_content", "openai", "response", 'a final answer with null content, or tool calls with "" content', "a replay gives a final answer string content and tool calls null"),
    Refusal("openai.refusal_mixed", "openai", "response", "a refusal together with content, tool calls or a finish_reason other than stop", "a replay returns a refusal alone"),
    Refusal("openai.refusal_history", "openai", "request", "a refusal in the history", "in the history it would be recorded as text"),
    Refusal("anthropic.refusal", "anthropic", "response", "a refusal together with tool calls; and, while the API sends stop_details with refusals, any refusal", "not recorded"),
    Refusal("openai.logprobs_response", "openai", "response", "logprobs or annotations in a response", "not recorded"),
    Refusal("openai.web_search_options", "openai", "request", "the web_search_options request field", "not recorded"),
    Refusal("openai.content_and_refusal", "openai", "response", "a response with both content and a refusal", "only one of them is recorded"),
    Refusal("openai.both_max_tokens", "openai", "request", "both max_tokens and max_completion_tokens in one request", "they are recorded as one value"),
    Refusal("openai.tool_arguments", "openai", "response", "tool-call arguments that are not a JSON text, in a response or the history", "arguments are recorded parsed, as JSON; a replay could not give this text back"),
    Refusal("openai.finish_reason", "openai", "response", "a final answer whose finish_reason is not stop or length (missing, tool_calls without a tool call, or a value Blackbox does not know)", "a replay gives stop or length, so it would replay with another finish_reason"),
    Refusal("anthropic.citations", "anthropic", "response", "text citations, stop_details or a container in a response", "not recorded"),
    Refusal("anthropic.pause_turn", "anthropic", "response", 'a response with stop_reason: "pause_turn" (a paused server-tool turn), or a stop_reason Blackbox does not know', "a replay only gives end_turn, tool_use or max_tokens"),
    Refusal("anthropic.tool_use_stop", "anthropic", "response", 'tool calls with a stop_reason other than tool_use or max_tokens, or stop_reason: "tool_use" without a tool call', "a replay gives tool_use exactly when there are tool calls, so it would replay with another stop_reason"),
    Refusal("anthropic.unknown_block", "anthropic", "response", "a response content block of a type Blackbox does not record (for example a beta compaction block)", "not recorded: a replay could not give it back"),
)
# fmt: on

_BY_ID = {r.id: r for r in REFUSALS}
_UNSET: Any = object()
_VALUE_CHARS = 80


def register_rows(rows: tuple[Refusal, ...]) -> None:
    """Add a codec's own rows (a codec module calls this at import with its ``REFUSALS``)."""
    for r in rows:
        known = _BY_ID.setdefault(r.id, r)
        if known is not r and known != r:
            raise ValueError(f"refusal row {r.id!r} is defined twice")


def row(row_id: str) -> Refusal:
    return _BY_ID[row_id]


def quote_value(value: Any) -> str:
    """A refused value as JSON, shortened: what the message names besides the field."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 1] + "…"


def refuse(row_id: str, field: str, *, value: Any = _UNSET) -> NoReturn:
    """Raise the BlackboxUnsupportedError of table row ``row_id`` for ``field`` (a JSON path).

    ``value``, when given, is named in the message: ``finish_reason: … (it was "content_filter")``.
    """
    r = _BY_ID[row_id]
    shown = None if value is _UNSET else quote_value(value)
    raise BlackboxUnsupportedError(field, r.reason, provider=None if r.provider == "both" else r.provider, value=shown)
