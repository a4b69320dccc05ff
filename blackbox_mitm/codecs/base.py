"""What every provider codec shares: the decoded-request record and the run's call-id map.

A codec is a module with the same functions as its siblings (``openai_chat``,
``anthropic_messages``)::

    decode_request(body: bytes, ids: CallIds) -> DecodedRequest      # HTTP request -> model_input
    decode_response(body: bytes, ids: CallIds, request: DecodedRequest) -> dict   # -> model_output
    encode_response(output: dict, *, request: DecodedRequest, ids: CallIds, created_ms: int) -> dict
    encode_stream(output: dict, *, request: DecodedRequest, ids: CallIds, created_ms: int) -> bytes
    is_stream_end(event: SseEvent) -> bool              # the event after which a recorded stream is complete
    aggregate_stream(events: list[SseEvent]) -> bytes  # a recorded stream -> the equivalent JSON body
    encode_error(message: str, *, status: int = 400, error_type: str | None = None) -> ErrorResponse
    normalize_answer(answer: Any, ids: CallIds) -> dict | None  # a user-written answer (fork --response)
    rewrite_tool_result(body: bytes, ids: CallIds, call_id: str, text: str) -> bytes | None  # a fork's edit

Neutral payloads (spec: "Structured Transcript", "Model output shapes"):

* model_input: ``{"messages": [...], "tools": [...], "systemPrompt"?, "model"?, "params"?}``.
  A message is ``{"role", "content"}``; content is a string when the turn is
  text alone, else a list of parts — ``{"type": "text", "text"}``, ``{"type":
  "tool_use", "toolCallId", "toolName", "toolInput"}``, ``{"type": "tool_result",
  "toolCallId", "toolName", "result"}`` or ``{..., "error"}``. Adjacent text is
  joined (how text is split into blocks is not compared), thinking blocks are
  dropped. A tool definition is ``{"name", "description"?, "inputSchema"}``.
* model_output: ``{"type": "final_answer", "text"}`` or ``{"type": "tool_calls",
  "calls": [{"toolCallId", "toolName", "toolInput"}], "text"?}``, plus ``"stop"``
  only when the stop is not the shape's default: ``"length"`` (max tokens) or
  ``"refusal"`` (an OpenAI refusal; ``text`` is the refusal text). A final
  answer's default stop is the end of the turn, tool calls' is tool use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from blackbox_mitm.cassette.payloads import tool_calls_of
from blackbox_mitm.errors import BlackboxError

__all__ = ["STOP_LENGTH", "STOP_REFUSAL", "CallIds", "DecodedRequest", "ErrorResponse", "SseEvent"]

STOP_LENGTH = "length"
STOP_REFUSAL = "refusal"

_CALL_N = re.compile(r"^call-(\d+)$")


class StreamIncomplete(BlackboxError):
    """A recorded stream that is not a completed call: no final event, or an in-stream error.

    ``error`` holds the in-stream ``error`` object when there was one.
    """

    def __init__(self, message: str, *, error: dict[str, Any] | None = None) -> None:
        self.error = error
        super().__init__(message)


@dataclass(slots=True)
class SseEvent:
    """One server-sent event: its ``event:`` name (None when absent) and its joined ``data:``."""

    event: str | None
    data: str


@dataclass(slots=True)
class ErrorResponse:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(slots=True)
class DecodedRequest:
    """A provider request decoded into its neutral ``model_input`` payload.

    ``stream`` and ``include_usage`` say how the answer must be shaped;
    ``model`` is echoed in synthesized responses.
    """

    provider: str
    model_input: dict[str, Any]
    model: str | None = None
    stream: bool = False
    include_usage: bool = False
    extras: dict[str, Any] = field(default_factory=dict)

    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool_result part in the request's messages, in order."""
        out: list[dict[str, Any]] = []
        for message in self.model_input.get("messages", []):
            content = message.get("content")
            if isinstance(content, list):
                out.extend(p for p in content if isinstance(p, dict) and p.get("type") == "tool_result")
        return out


class CallIds:
    """The run-local map between provider tool-call ids and the cassette's ``call-N``.

    Provider ids never enter a cassette. Ids we serve in a replay are our own
    (``served_id``) and are registered here, so when the agent sends them back
    in its next request they map to the same ``call-N``.
    """

    def __init__(self) -> None:
        self._to_neutral: dict[str, str] = {}
        self._names: dict[str, str] = {}
        self._next = 0

    def assign(self, native: str | None, name: str | None = None) -> str:
        """A new call-N for a tool call the model just made (``native`` may be None)."""
        call_id = f"call-{self._next}"
        self._next += 1
        if native:
            self._to_neutral[native] = call_id
        if name is not None:
            self._names[call_id] = name
        return call_id

    def neutral(self, native: str, name: str | None = None) -> str:
        """The call-N for a provider id seen in a request; an id never seen gets the next one."""
        found = self._to_neutral.get(native)
        if found is None:
            m = _CALL_N.match(native)
            if m:  # the agent echoed a cassette id verbatim (served ids are never call-N, but be kind)
                self.register(native, name)
                return native
            found = self.assign(native, name)
        elif name is not None and found not in self._names:
            self._names[found] = name
        return found

    def lookup(self, native: str) -> str | None:
        """The call-N a provider id already maps to, without assigning one."""
        found = self._to_neutral.get(native)
        if found is None and _CALL_N.match(native):
            return native
        return found

    def register(self, call_id: str, name: str | None = None) -> None:
        """Note a call-N that exists in the run (from a cassette), so new ids never reuse it."""
        m = _CALL_N.match(call_id)
        if m:
            self._next = max(self._next, int(m.group(1)) + 1)
        if name is not None:
            self._names[call_id] = name

    def register_calls(self, output: Any) -> None:
        """Register every tool call of a recorded model_output (either shape)."""
        for call in tool_calls_of(output):
            self.register(str(call.get("toolCallId")), call.get("toolName"))

    def served_id(self, call_id: str, prefix: str) -> str:
        """The id a synthesized response gives ``call_id`` (``call_bb0``, ``toolu_bb0``...)."""
        m = _CALL_N.match(call_id)
        suffix = m.group(1) if m else re.sub(r"[^A-Za-z0-9]", "", call_id)
        served = f"{prefix}bb{suffix}"
        self._to_neutral[served] = call_id
        self.register(call_id)
        return served

    def name_of(self, call_id: str) -> str | None:
        return self._names.get(call_id)

    def next_index(self) -> int:
        return self._next
