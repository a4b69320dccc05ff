"""The neutral step payloads as types, and their readers: the spec's ``toolCallsOf()``, terminal events.

The types are the spec's ("Step Types", "Model output shapes", "Structured
Transcript", "Terminal Metadata Payloads"): ``ModelInput`` (messages of
``MessagePart``s, tool definitions, ``systemPrompt`` / ``model`` / ``params``),
``ModelOutput`` (a final answer, tool calls, or the built-in loop's single tool
call), ``ToolCall`` and ``ToolResult`` (the steps, and the parts of a message),
and ``Metadata`` (terminal events and run markers). They are ``TypedDict``s: a
payload is plain JSON data, and the types say which keys it has. Codecs build
them, the matcher compares them, verify checks cassettes against them.

``model_output`` has two tool-call shapes — the built-in loop's single
``{"type": "tool_call", ...}`` and recorders' ``{"type": "tool_calls", "calls": [...]}``;
readers go through ``tool_calls_of`` and never branch on the shape themselves.
``order_tool_results`` puts a parallel round's tool results in call order (the
recorder and the matcher both apply it).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "OUTPUT_TYPES",
    "TERMINAL_EVENTS",
    "FinalAnswer",
    "MediaPart",
    "Message",
    "MessagePart",
    "Metadata",
    "ModelInput",
    "ModelOutput",
    "ReasoningPart",
    "SingleToolCall",
    "TextPart",
    "Tokens",
    "ToolCall",
    "ToolCalls",
    "ToolDefinition",
    "ToolResult",
    "ToolResultPart",
    "ToolUsePart",
    "data_url",
    "is_terminal",
    "joined_parts",
    "json_kind",
    "media_kind",
    "media_part",
    "order_tool_results",
    "output_text",
    "reasoning_of",
    "tokens",
    "tokens_of",
    "tool_calls_of",
    "tool_definition",
]


# --- model_input ---------------------------------------------------------------------


class TextPart(TypedDict):
    type: Literal["text"]
    text: str


class ToolUsePart(TypedDict):
    type: Literal["tool_use"]
    toolCallId: str
    toolName: str
    toolInput: Any  # JSON


class ToolResult(TypedDict):
    """A ``tool_result`` step: ``result`` (JSON, kept as the agent sent it) or ``error``."""

    toolCallId: str
    toolName: str
    result: NotRequired[Any]
    error: NotRequired[Any]


class ToolResultPart(ToolResult):
    """A tool result in a message: the step's fields, and ``type``."""

    type: Literal["tool_result"]


MediaKind = Literal["image", "document", "audio", "video"]


class MediaPart(TypedDict):
    """Blackbox's extension: an image, document, audio or video in a message or tool result, content-addressed.

    Inline bytes are ``mediaType`` and the ``sha256`` (hex) and ``size`` of the
    decoded bytes (the bytes themselves are not in the part); a reference the
    provider fetches is kept as sent: ``url`` or ``file`` (the provider's file id).
    ``name`` and ``detail`` are kept when sent (a file name, an image's detail level).
    """

    type: MediaKind
    mediaType: NotRequired[str]
    sha256: NotRequired[str]
    size: NotRequired[int]
    url: NotRequired[str]
    file: NotRequired[str]
    name: NotRequired[str]
    detail: NotRequired[str]


MessagePart = TextPart | ToolUsePart | ToolResultPart | MediaPart


def media_kind(media_type: str) -> MediaKind:
    """``image`` / ``audio`` / ``video`` by the media type's top level, else ``document`` (PDF, plain text, ...)."""
    top = media_type.partition("/")[0]
    if top == "image":
        return "image"
    if top == "audio":
        return "audio"
    if top == "video":
        return "video"
    return "document"


def media_part(
    kind: MediaKind | None,
    media_type: str | None = None,
    data: str | bytes | None = None,
    *,
    url: str | None = None,
    file: str | None = None,
    name: str | None = None,
    detail: str | None = None,
) -> MediaPart:
    """A neutral media part: base64 ``data`` (or raw bytes) become their digest; ``url`` / ``file`` are kept.

    Raises ValueError when ``data`` is not base64 (the codec names the field).
    """
    chosen = kind or media_kind(media_type or "")
    out: MediaPart = {"type": chosen}
    if media_type:
        out["mediaType"] = media_type
    if data is not None:
        raw = data if isinstance(data, bytes) else _b64decode(data)
        out["sha256"] = hashlib.sha256(raw).hexdigest()
        out["size"] = len(raw)
    if url is not None:
        out["url"] = url
    if file is not None:
        out["file"] = file
    if name is not None:
        out["name"] = name
    if detail is not None:
        out["detail"] = detail
    return out


def _b64decode(data: str) -> bytes:
    """Base64, standard or URL-safe (the SDKs send either); ValueError when it is neither."""
    altchars = b"-_" if ("-" in data or "_" in data) else None
    return base64.b64decode(data, altchars=altchars, validate=True)


def data_url(url: str) -> tuple[str, str] | None:
    """(media type, base64 data) of a ``data:<type>;base64,<data>`` URL; None for any other URL."""
    if not url.startswith("data:"):
        return None
    head, sep, data = url[5:].partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    return head[: -len(";base64")] or "application/octet-stream", data


def joined_parts(parts: list[Any]) -> Any:
    """Content of text and media parts: a string when it is text alone (adjacent text joined), else the parts."""
    out: list[Any] = []
    for part in parts:
        if part.get("type") == "text" and out and out[-1].get("type") == "text":
            out[-1] = {"type": "text", "text": out[-1]["text"] + part["text"]}
        elif part.get("type") != "text" or part.get("text"):
            out.append(part)
    if all(p.get("type") == "text" for p in out):
        return "".join(p["text"] for p in out)
    return out


class Message(TypedDict):
    role: str  # "user" | "assistant" | "system" (as sent)
    content: str | list[MessagePart]


class ToolDefinition(TypedDict):
    name: str
    description: NotRequired[str]
    inputSchema: Any  # JSON Schema, as sent
    strict: NotRequired[bool]  # Blackbox's extension: present (true) only when the tool asked for strict schema adherence


def tool_definition(name: str, schema: Any, description: Any = None, *, strict: bool = False) -> ToolDefinition:
    """A tool definition, its keys in the spec's order; ``description`` None: the tool has none.

    ``strict``: the wire's ``strict: true``. It is written only when true, so a tool
    without it (or with ``strict: false``) is the same payload, and hash, as before
    the field existed.
    """
    out: ToolDefinition = {"name": name, "inputSchema": schema}
    if description is not None:
        out = {"name": name, "description": description, "inputSchema": schema}
    if strict:
        out["strict"] = True
    return out


class ModelInput(TypedDict):
    messages: list[Message]
    tools: list[ToolDefinition]
    systemPrompt: NotRequired[str]
    model: NotRequired[str]
    params: NotRequired[dict[str, Any]]  # neutral control name -> its JSON value


# --- model_output ----------------------------------------------------------------------


class ToolCall(TypedDict):
    """A ``tool_call`` step, and one call of a ``tool_calls`` model_output."""

    toolCallId: str
    toolName: str
    toolInput: Any  # JSON


class Tokens(TypedDict):
    """Blackbox's extension: an answer's token counts, in neutral names (see docs/cassette.md).

    ``input`` counts every input token (cached ones included), ``output`` every
    output token (reasoning included); ``cachedInput`` and ``reasoning`` are the
    parts of those, present only when not zero.
    """

    input: int
    output: int
    cachedInput: NotRequired[int]
    reasoning: NotRequired[int]


class ReasoningPart(TypedDict):
    """Blackbox's extension: what the model thought before answering, kept to be served back (never compared).

    ``thinking``: visible thinking (``text``: Anthropic thinking, a Gemini thought)
    or a summary of it (``summary``: the Responses API's summary texts), with the
    provider's opaque ``signature`` (Anthropic's signature, the Responses API's
    ``encrypted_content``, Gemini's ``thoughtSignature``) that it checks when the
    turn is sent back. ``redacted_thinking``: Anthropic's encrypted ``data``.
    A Gemini signature that came on the answer's text or a call has no text and
    says where (``on``), so a replay puts it back there.
    """

    type: Literal["thinking", "redacted_thinking"]
    text: NotRequired[str]
    summary: NotRequired[list[str]]
    signature: NotRequired[str]
    data: NotRequired[str]
    on: NotRequired[str]  # Gemini: a signature that came on the answer's "text" or on a function "call", not on a thought


class FinalAnswer(TypedDict):
    type: Literal["final_answer"]
    text: str
    stop: NotRequired[str]  # "length" or "refusal"; absent for the end of the turn
    tokens: NotRequired[Tokens]
    reasoning: NotRequired[list[ReasoningPart]]


class ToolCalls(TypedDict):
    type: Literal["tool_calls"]
    calls: list[ToolCall]
    text: NotRequired[str]  # what the model wrote beside the calls
    stop: NotRequired[str]  # "length"; absent for tool use
    tokens: NotRequired[Tokens]
    reasoning: NotRequired[list[ReasoningPart]]


class SingleToolCall(TypedDict):
    """The built-in agent loop's shape: one call, inline (never written by a codec)."""

    type: Literal["tool_call"]
    toolCallId: str
    toolName: str
    toolInput: Any
    text: NotRequired[str]
    stop: NotRequired[str]
    tokens: NotRequired[Tokens]
    reasoning: NotRequired[list[ReasoningPart]]


ModelOutput = FinalAnswer | ToolCalls | SingleToolCall
#: The ``type`` of each ModelOutput shape (what verify accepts).
OUTPUT_TYPES: tuple[str, ...] = ("final_answer", "tool_calls", "tool_call")


# --- metadata ------------------------------------------------------------------------------


class Metadata(TypedDict):
    """A ``metadata`` step: a terminal event (``run_completed`` / ``run_failed``) or a run-level marker."""

    event: str
    status: NotRequired[str]  # "success" | "error"
    result: NotRequired[str]  # run_completed: the final answer text
    reason: NotRequired[str]  # run_failed: agent_error, process_exit, calls_in_flight, max_steps_exceeded, ...
    message: NotRequired[str]
    exitCode: NotRequired[int]
    inFlight: NotRequired[int]
    maxSteps: NotRequired[int]


TERMINAL_EVENTS = ("run_completed", "run_failed")


def tool_calls_of(output: Any) -> list[dict[str, Any]]:
    """Every tool call a model_output payload requested, in order (empty for a final answer).

    A reader of any payload, a cassette's included (not yet verified): the calls are
    the dicts found, not ``ToolCall``s the types vouch for.
    """
    if not isinstance(output, dict):
        return []
    kind = output.get("type")
    if kind == "tool_call":
        return [{"toolCallId": output.get("toolCallId"), "toolName": output.get("toolName"), "toolInput": output.get("toolInput")}]
    if kind == "tool_calls":
        calls = output.get("calls")
        return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
    return []


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def tokens(given_input: Any, given_output: Any, cached_input: Any = 0, reasoning: Any = 0) -> Tokens | None:
    """Neutral token counts from a provider's numbers (anything not a positive integer is 0); None when all are 0.

    None keeps an answer without counts (or with zero usage, what a replay reported
    before counts were recorded) the payload, and hash, it always was.
    """
    counts = [_count(v) for v in (given_input, given_output, cached_input, reasoning)]
    if not any(counts):
        return None
    out: Tokens = {"input": counts[0], "output": counts[1]}
    if counts[2]:
        out["cachedInput"] = counts[2]
    if counts[3]:
        out["reasoning"] = counts[3]
    return out


def tokens_of(output: Any) -> tuple[int, int, int, int]:
    """(input, output, cached input, reasoning) of a model_output: zeros when it has no ``tokens``."""
    t = output.get("tokens") if isinstance(output, dict) else None
    if not isinstance(t, dict):
        return 0, 0, 0, 0
    return _count(t.get("input")), _count(t.get("output")), _count(t.get("cachedInput")), _count(t.get("reasoning"))


def reasoning_of(output: Any) -> list[dict[str, Any]]:
    """The reasoning parts a model_output carries, in order (empty when none were recorded)."""
    parts = output.get("reasoning") if isinstance(output, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def output_text(output: Any) -> str | None:
    """The text a model_output carries: the final answer, or the narration beside tool calls."""
    if isinstance(output, dict):
        text = output.get("text")
        if isinstance(text, str):
            return text
    return None


def is_terminal(payload: Any) -> bool:
    return isinstance(payload, dict) and payload.get("event") in TERMINAL_EVENTS


def json_kind(v: Any) -> str:
    """A JSON value's kind in words, for error messages: "a string", "an object", "null", ..."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, (list, tuple)):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


# --- tool results in call order ----------------------------------------------------------
# Tool results in call order: the spec's rule for a parallel tool round, applied to any provider's transcript.
#
# A parallel round is "one assistant turn holding every tool_use part …, then one
# user turn holding every tool_result part, in call order" (spec: Structured
# Transcript). An agent that runs its tools concurrently sends the results in
# the order they *finished*, which changes from run to run. ``order_tool_results``
# puts the tool_result parts of each user turn back in the order of the
# tool_use parts of the assistant turn they answer, so the recording stores them
# in call order and strict comparison compares them in that order.
#
# The rule, on a neutral model_input (``{"messages": [...]}``, parts as the
# codecs write them):
#
# * a turn's tool_result parts are sorted by the position of their ``toolCallId``
#   among the tool_use parts of the nearest earlier assistant turn that has any;
# * only the slots that hold tool_result parts are refilled: text and other parts
#   keep their places;
# * a result whose id that turn did not call keeps its relative place after the
#   ones it did (a stable sort); nothing is dropped or added.
#
# Pure and provider-neutral; the input is never modified, and a transcript that
# is already in call order is returned as the same object.


def _content_parts(message: Any) -> list[Any] | None:
    if not isinstance(message, Mapping):
        return None
    content = message.get("content")
    return content if isinstance(content, list) else None


def _is_part(part: Any, kind: str) -> bool:
    return isinstance(part, Mapping) and part.get("type") == kind


def _call_id(part: Mapping[str, Any]) -> str | None:
    call_id = part.get("toolCallId")
    return call_id if isinstance(call_id, str) else None


def _in_call_order(parts: list[Any], calls: Mapping[str | None, int]) -> list[Any] | None:
    """The parts with their tool_result slots refilled in call order; None when nothing moves."""
    slots = [i for i, p in enumerate(parts) if _is_part(p, "tool_result")]
    if len(slots) < 2:
        return None
    results = [parts[i] for i in slots]
    unknown = len(calls)
    ranked = sorted(results, key=lambda p: calls.get(_call_id(p), unknown))
    if all(a is b for a, b in zip(ranked, results, strict=True)):
        return None
    out = list(parts)
    for slot, part in zip(slots, ranked, strict=True):
        out[slot] = part
    return out


def order_tool_results(model_input: Mapping[str, Any]) -> Mapping[str, Any]:
    """``model_input`` with each turn's tool results in the order of the calls they answer (see the module docstring)."""
    messages = model_input.get("messages")
    if not isinstance(messages, Sequence) or isinstance(messages, str):
        return model_input
    calls: dict[str | None, int] = {}
    changed: dict[int, dict[str, Any]] = {}
    for index, message in enumerate(messages):
        parts = _content_parts(message)
        if parts is None:
            continue
        uses = [_call_id(p) for p in parts if _is_part(p, "tool_use")]
        if uses and isinstance(message, Mapping) and message.get("role") == "assistant":
            calls = {call_id: n for n, call_id in reversed(list(enumerate(uses))) if call_id is not None}
            continue
        ordered = _in_call_order(parts, calls)
        if ordered is not None:
            changed[index] = {**message, "content": ordered}
    if not changed:
        return model_input
    out = dict(model_input)
    out["messages"] = [changed.get(i, m) for i, m in enumerate(messages)]
    return out
