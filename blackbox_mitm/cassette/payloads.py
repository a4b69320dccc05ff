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

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, TypedDict

from blackbox_mitm.cassette.extensions import (
    CompactionPart,
    CompactionTriggerPart,
    MediaKind,
    MediaPart,
    ReasoningPart,
    RefusalPart,
    Tokens,
    compaction_of,
    data_url,
    joined_parts,
    media_kind,
    media_part,
    reasoning_of,
    tokens,
    tokens_of,
)
from blackbox_mitm.cassette.records import FileSeal, JSONObject
from blackbox_mitm.cassette.server_parts import (
    AnswerPart,
    Caller,
    Container,
    ServerToolCallPart,
    ServerToolResultPart,
    answer_parts_of,
    builtin_tool,
)

__all__ = [
    "OUTPUT_TYPES",
    "TERMINAL_EVENTS",
    "AnswerPart",
    "CompactionPart",
    "CompactionTriggerPart",
    "Container",
    "FinalAnswer",
    "JSONObject",
    "MediaKind",
    "MediaPart",
    "Message",
    "MessagePart",
    "Metadata",
    "ModelInput",
    "ModelOutput",
    "ReasoningPart",
    "RefusalPart",
    "ServerToolCallPart",
    "ServerToolResultPart",
    "SingleToolCall",
    "TextPart",
    "Tokens",
    "ToolCall",
    "ToolCalls",
    "ToolDefinition",
    "ToolResult",
    "ToolResultPart",
    "ToolUsePart",
    "answer_parts_of",
    "builtin_tool",
    "compaction_of",
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
    caller: NotRequired[Caller]


class ToolResult(TypedDict):
    """A ``tool_result`` step: ``result`` (JSON, kept as the agent sent it) or ``error``."""

    toolCallId: str
    toolName: str
    result: NotRequired[Any]
    error: NotRequired[Any]


class ToolResultPart(ToolResult):
    """A tool result in a message: the step's fields, and ``type``."""

    type: Literal["tool_result"]


MessagePart = (
    TextPart
    | ToolUsePart
    | ToolResultPart
    | MediaPart
    | ServerToolCallPart
    | ServerToolResultPart
    | CompactionTriggerPart
    | CompactionPart
    | RefusalPart
)


class Message(TypedDict):
    role: str  # "user" | "assistant" | "system" (as sent)
    content: str | list[MessagePart]


class ToolDefinition(TypedDict):
    name: str
    description: NotRequired[str]
    inputSchema: NotRequired[Any]  # JSON Schema, as sent (every tool the agent defines has one; a provider-defined tool, builtin, has none)
    strict: NotRequired[bool]  # Blackbox's extension: present (true) only when the tool asked for strict schema adherence
    builtin: NotRequired[
        JSONObject
    ]  # Blackbox's extension: a provider-defined tool (server_parts), the provider's object; no inputSchema then


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
    systemMedia: NotRequired[list[MediaPart]]  # Blackbox's extension: the system prompt's media (a Gemini systemInstruction's)
    model: NotRequired[str]
    params: NotRequired[JSONObject]  # neutral control name -> its JSON value (as the agent sent it)


# --- model_output ----------------------------------------------------------------------


class ToolCall(TypedDict):
    """A ``tool_call`` step, and one call of a ``tool_calls`` model_output."""

    toolCallId: str
    toolName: str
    toolInput: Any  # JSON
    caller: NotRequired[Caller]  # a call the provider's code made (programmatic tool calling)


class FinalAnswer(TypedDict):
    type: Literal["final_answer"]
    text: str
    stop: NotRequired[str]  # "length" or "refusal"; absent for the end of the turn
    tokens: NotRequired[Tokens]
    reasoning: NotRequired[list[ReasoningPart]]
    parts: NotRequired[list[AnswerPart]]  # server-side tools (server_parts): the answer's blocks in order
    container: NotRequired[Container]
    serverToolUse: NotRequired[dict[str, int]]
    grounding: NotRequired[Any]
    content: NotRequired[list[Any]]  # Blackbox's extension: the answer's text and media parts in order, when it has media
    compaction: NotRequired[CompactionPart]


class ToolCalls(TypedDict):
    type: Literal["tool_calls"]
    calls: list[ToolCall]
    text: NotRequired[str]  # what the model wrote beside the calls
    stop: NotRequired[str]  # "length"; absent for tool use
    tokens: NotRequired[Tokens]
    reasoning: NotRequired[list[ReasoningPart]]
    parts: NotRequired[list[AnswerPart]]  # server-side tools (server_parts): the answer's blocks in order
    container: NotRequired[Container]
    serverToolUse: NotRequired[dict[str, int]]
    grounding: NotRequired[Any]
    content: NotRequired[list[Any]]  # Blackbox's extension: the answer's text and media parts in order, when it has media
    compaction: NotRequired[CompactionPart]


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
    parts: NotRequired[list[AnswerPart]]  # server-side tools (server_parts): the answer's blocks in order
    container: NotRequired[Container]
    serverToolUse: NotRequired[dict[str, int]]
    grounding: NotRequired[Any]
    content: NotRequired[list[Any]]  # Blackbox's extension: the answer's text and media parts in order, when it has media
    compaction: NotRequired[CompactionPart]


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
    exchanges: NotRequired[FileSeal]  # the terminal event's seal of the run's other HTTP exchanges (cassette/exchanges.py)
    exchangesLost: NotRequired[str]
    media: NotRequired[FileSeal]  # the terminal event's seal of the run's media (cassette/media.py)
    mediaLost: NotRequired[str]


TERMINAL_EVENTS = ("run_completed", "run_failed")


def tool_calls_of(output: Any) -> list[JSONObject]:
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


# ``(dict, Mapping)``: a dict passes the first, exact check; the ABC check alone costs several times more, on every part.


def _content_parts(message: Any) -> list[Any] | None:
    if not isinstance(message, (dict, Mapping)):
        return None
    content = message.get("content")
    return content if isinstance(content, list) else None


def _is_part(part: Any, kind: str) -> bool:
    return isinstance(part, (dict, Mapping)) and part.get("type") == kind


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
    changed: dict[int, JSONObject] = {}  # messages as found
    for index, message in enumerate(messages):
        parts = _content_parts(message)
        if parts is None:
            continue
        uses = [_call_id(p) for p in parts if _is_part(p, "tool_use")]
        if uses and message.get("role") == "assistant":  # a message with parts is a Mapping (_content_parts)
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
