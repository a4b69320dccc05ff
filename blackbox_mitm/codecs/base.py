"""The codec contract: what every provider codec is, and the records they share.

A codec is a package (``openai_chat``, ``anthropic_messages``, ...; one layout,
``docs/adding-a-provider.md``) that satisfies ``Codec`` below, and the capability
sub-protocols its API has (``ChainingCodec``, ``websocket_base.WebSocketCapable``);
mypy checks each registered package against them (``codecs/__init__``).
Everything the rest of the package knows about a provider — its hosts, its
credential headers and key variables, its id prefixes and response keys (for
``verify``), its request controls, its refusals — it asks the registered codecs.

Neutral payloads (spec: "Structured Transcript", "Model output shapes"; typed as
``cassette.payloads.ModelInput`` / ``ModelOutput``):

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
  ``"refusal"`` (an OpenAI refusal; ``text`` is the refusal text) or ``"pause"``
  (Anthropic's ``pause_turn``: a server-tool turn the provider paused). A final
  answer's default stop is the end of the turn, tool calls' is tool use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from blackbox_mitm.cassette.payloads import ModelInput, ModelOutput, ToolResultPart, tool_calls_of
from blackbox_mitm.errors import StreamIncomplete

if TYPE_CHECKING:
    from blackbox_mitm.codecs.common.refusals import RefusalTable

__all__ = [
    "STOP_LENGTH",
    "STOP_PAUSE",
    "STOP_REFUSAL",
    "CallIds",
    "ChainingCodec",
    "Codec",
    "DecodedRequest",
    "ErrorResponse",
    "FramedStreamCodec",
    "SseEvent",
    "StreamIncomplete",
    "StreamParser",
    "StreamingCodec",
    "TurnFoldingCodec",
]

STOP_LENGTH = "length"
STOP_REFUSAL = "refusal"
STOP_PAUSE = "pause"  # the provider paused a long server-tool turn; the agent sends it back to continue (Anthropic pause_turn)

_CALL_N = re.compile(r"^call-(\d+)$")


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

    provider: str  # the NAME of the codec that decoded it
    model_input: ModelInput
    model: str | None = None
    stream: bool = False
    include_usage: bool = False
    # The bytes its media parts (and its answer's) carried, by digest: the session collects them (cassette/media.py).
    media: dict[str, tuple[str, bytes]] = field(default_factory=dict)

    def tool_results(self) -> list[ToolResultPart]:
        """Every tool_result part in the request's messages, in order."""
        out: list[ToolResultPart] = []
        for message in self.model_input.get("messages", []):
            content = message.get("content")
            for part in content if isinstance(content, list) else []:
                if part["type"] == "tool_result":
                    out.append(part)
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
        self._state: dict[str, dict[str, Any]] = {}

    def codec_state(self, name: str) -> dict[str, Any]:
        """A per-run dict the codec ``name`` keeps its own state in (e.g. response ids -> history)."""
        return self._state.setdefault(name, {})

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

    def known(self) -> Mapping[str, str]:
        """Every provider id (seen or served) mapped so far -> its call-N, read-only (session/echoed_ids.py)."""
        return MappingProxyType(self._to_neutral)

    def next_index(self) -> int:
        return self._next


class StreamingCodec(Protocol):
    """The streaming part of the contract: synthesized SSE bodies, and recorded streams added up.

    Every registered API streams, so ``Codec`` includes it; the stream recorder
    (``session/stream.py``) needs nothing more than this.
    """

    def encode_stream(self, output: Mapping[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> bytes: ...

    def is_stream_end(self, event: SseEvent) -> bool: ...

    def aggregate_stream(self, events: list[SseEvent]) -> dict[str, Any]:
        """A recorded stream as the whole-response object it adds up to; ``StreamIncomplete`` if it never completed."""
        ...

    def encode_stream_error(self, message: str) -> bytes:
        """The provider's in-stream error event: sent instead of a final event that must be refused."""
        ...


class Codec(StreamingCodec, Protocol):
    """One provider API: its facts, and its requests and answers to and from neutral payloads.

    A codec package satisfies it as it is: constants in capitals, functions at
    the package's top level. Every function may raise ``BlackboxUnsupportedError`` (a
    refused or unreadable field, named as a JSON path) and nothing else on bad input.
    """

    # -- facts ------------------------------------------------------------------------
    @property
    def NAME(self) -> str:  # the registry key: "openai", "anthropic", ...
        ...

    @property
    def PROVIDER(self) -> str:  # the provider family, for the refusal table and error shapes
        ...

    @property
    def DEFAULT_HOSTS(self) -> tuple[str, ...]:  # intercepted unless the user names others
        ...

    @property
    def CREDENTIAL_HEADERS(self) -> tuple[str, ...]:  # lower-case request headers that carry a key
        ...

    @property
    def CREDENTIAL_QUERY(self) -> tuple[str, ...]:  # query parameters that carry a key
        ...

    @property
    def KEY_ENV_VARS(self) -> tuple[str, ...]:  # where its clients read a key (a replay sets a placeholder)
        ...

    @property
    def ID_PREFIXES(self) -> tuple[str, ...]:  # provider-native ids, never in a cassette
        ...

    @property
    def RESPONSE_KEYS(self) -> tuple[str, ...]:  # provider response fields, never in a neutral payload
        ...

    @property
    def PARAMS(self) -> tuple[tuple[str, str], ...]:  # request control (wire name) -> neutral ``params`` name
        ...

    @property
    def REFUSALS(self) -> RefusalTable:  # its rows of the refusal table, and the errors raised from them
        ...

    # -- which requests -------------------------------------------------------------
    def matches(self, method: str, path: str, query: str) -> bool:
        """A model call this codec answers (``path`` without its query)."""
        ...

    def speaks_for(self, path: str) -> bool:
        """A path of this provider's API that is not a model call (for the shape of an error)."""
        ...

    # -- requests and answers ---------------------------------------------------------
    def decode_request(self, body: bytes, ids: CallIds, *, path: str = "", query: str = "") -> DecodedRequest: ...

    def decode_response(self, body: bytes | Mapping[str, Any], ids: CallIds, request: DecodedRequest) -> ModelOutput: ...

    def encode_response(self, output: Mapping[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> dict[str, Any]: ...

    def encode_error(self, message: str, *, status: int = 400, error_type: str | None = None) -> ErrorResponse: ...

    def normalize_answer(self, answer: Any, ids: CallIds) -> ModelOutput | None: ...

    def rewrite_tool_result(self, body: bytes, ids: CallIds, call_id: str, text: str) -> bytes | None: ...


# -- capabilities: sub-protocols a codec satisfies only when its API has them ------------------
# Asked with isinstance (runtime-checkable: every member is looked up), which narrows the type for
# mypy too; the registry (``codecs/__init__``) states which codecs have which, and mypy checks it.
# (``websocket_base.WebSocketCapable`` is the other one: it lives beside the companion protocol.)


@runtime_checkable
class ChainingCodec(Codec, Protocol):
    """An API that keeps a conversation on the provider's side (the Responses API's ``previous_response_id``)."""

    def forward_body(self, body: bytes, ids: CallIds) -> bytes | None:
        """The body to send upstream instead, when it continues a response a replay served (None: as sent)."""
        ...


@runtime_checkable
class TurnFoldingCodec(Codec, Protocol):
    """An API whose clients may send one turn as several adjacent messages (google-genai's streamed chat history)."""

    ONE_TURN_ROLES: tuple[str, ...]  # the neutral roles whose adjacent messages are compared as one (matcher.turns)


class StreamParser(Protocol):
    """An incremental stream parser (``sse.SseParser``, ``common.eventstream.EventStreamParser``)."""

    def feed_blocks(self, chunk: bytes) -> list[tuple[bytes, SseEvent | None]]:
        """Each event completed so far as (its bytes on the wire, its event or None)."""
        ...

    def rest(self) -> bytes: ...


@runtime_checkable
class FramedStreamCodec(Codec, Protocol):
    """An API whose streams are not server-sent events (Bedrock's binary ``application/vnd.amazon.eventstream``).

    Its events still reach the rest of the package as ``SseEvent`` (a name and a
    text payload); only the bytes on the wire differ.
    """

    @property
    def STREAM_CONTENT_TYPE(self) -> str:  # the content-type of its streamed answers
        ...

    def stream_parser(self) -> StreamParser: ...
