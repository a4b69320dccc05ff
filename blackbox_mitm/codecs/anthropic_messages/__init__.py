"""The Anthropic Messages codec: ``POST /v1/messages`` bodies <-> the cassette's neutral payloads.

The package every codec has (see ``docs/adding-a-provider.md``): this module
holds its facts and which requests it answers, ``request`` reads requests,
``response`` reads and writes answers, ``stream`` writes and reads streams,
``fields`` the wire readers they share. Plain Python, no mitmproxy. What is
Anthropic-specific, and the choices the spec leaves open, is written down here:

Requests (``decode_request``)
    * ``system`` (a string or text blocks, joined with "") is the ``systemPrompt``;
      another block there, or in a ``role: "system"`` message, is refused: the
      API takes text only.
    * A message keeps its role as sent (``user``, ``assistant``, ``system``).
      Its blocks keep their order; adjacent text is joined, empty text is
      dropped (a replay drops empty text blocks, so the agent's next history
      cannot hold them), thinking blocks are dropped. A turn left with text
      alone is a plain string, a turn left with nothing is ``""``. Text after
      a tool_use in the history stays where it was sent: nothing is moved, so
      nothing the model saw is lost (such responses are refused, so only an
      agent that builds its own history sends it).
    * A tool_result's ``toolName`` comes from its tool_use in the same history,
      else from the run's ``CallIds``, else it is ``""``. Its content is kept
      as sent when a string, text blocks are joined into one string, and an
      absent content is ``""`` (the model sees an empty result either way).
    * Typed tools (``web_search_20250305``, ``code_execution_…``, ``bash_…``) are
      provider-defined tool definitions (``builtin``); ``server_tool_use`` and
      ``*_tool_result`` blocks in the history are server-tool parts
      (``server_tools``). The MCP connector's ``mcp_servers`` are definitions
      ``mcp_server:<name>`` (without ``authorization_token``), an ``mcp_toolset``
      is ``mcp_toolset:<server name>``, and ``mcp_tool_use`` / ``mcp_tool_result``
      are server-tool parts with ``serverName``. A ``tool_use`` the provider's
      code made (programmatic tool calling) keeps its ``caller`` (the server
      tool's call-N); a ``direct`` caller is dropped, as if absent.
    * Images and documents are media parts (``request.media_of``); a document's
      ``context`` and enabled ``citations`` are kept, and a content-list source
      is a document part holding its text and images as neutral parts.
    * Request controls that are ``null`` are treated as absent. Citations and
      ``cache_control`` on history text blocks, and every field the spec does not
      compare, are dropped.

Responses (``decode_response``, ``aggregate_stream``)
    Refusals are checked in this order, so a response breaking several rules
    names the most useful one: block types (unknown blocks),
    then ``stop_reason`` (``pause_turn``, a paused server-tool turn, is
    recorded as the neutral stop ``"pause"``), then ``stop_details``, then the layout of text and
    tool calls (several text blocks, text after a tool call, a ``stop_reason``
    that does not fit the content). An answer with server-tool blocks or
    citations is kept block by block (``parts``, see ``server_tools``), so its
    text may come in several blocks, around the calls. A stream is
    rebuilt into the Message it stands for and goes through the same checks;
    unknown delta types are ignored, as the SDK ignores them.

Fork edits (``rewrite_tool_result``)
    The replacement text becomes the tool_result's content and ``is_error`` is
    removed: a replacement is a result, never an error.

Synthesized answers (``encode_response``, ``encode_stream``, ``encode_error``)
    Ids are our own (``msg_bb…``, ``toolu_bb<N>``, ``req_bb…``) and derived from
    the content, so the same answer is the same bytes. The OpenAI-only
    ``"stop": "refusal"`` is written as ``stop_reason: "refusal"``.
"""

from __future__ import annotations

from blackbox_mitm.codecs.common.refusals import Refusal, RefusalTable

__all__ = [
    "CREDENTIAL_HEADERS",
    "CREDENTIAL_QUERY",
    "DEFAULT_HOSTS",
    "ID_PREFIXES",
    "KEY_ENV_VARS",
    "NAME",
    "PARAMS",
    "PROVIDER",
    "REFUSALS",
    "RESPONSE_KEYS",
    "aggregate_stream",
    "decode_request",
    "decode_response",
    "encode_error",
    "encode_response",
    "encode_stream",
    "encode_stream_error",
    "is_stream_end",
    "matches",
    "normalize_answer",
    "rewrite_tool_result",
    "speaks_for",
]

NAME = "anthropic"
PROVIDER = "anthropic"
DEFAULT_HOSTS: tuple[str, ...] = ("api.anthropic.com",)
CREDENTIAL_HEADERS: tuple[str, ...] = ("x-api-key", "authorization")
CREDENTIAL_QUERY: tuple[str, ...] = ()
KEY_ENV_VARS: tuple[str, ...] = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
ID_PREFIXES: tuple[str, ...] = ("toolu_", "srvtoolu_", "mcptoolu_", "msg_")
RESPONSE_KEYS: tuple[str, ...] = (
    "usage",
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "stop_reason",
    "stop_sequence",
    "stop_details",
    "tool_use_id",
)
PATH_SUFFIXES: tuple[str, ...] = ("/v1/messages",)

# Request controls the spec compares, native name -> neutral name.
PARAMS: tuple[tuple[str, str], ...] = (
    ("max_tokens", "maxTokens"),
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("top_k", "topK"),
    ("tool_choice", "toolChoice"),
    ("stop_sequences", "stopSequences"),
    ("output_config", "outputConfig"),
    ("thinking", "thinking"),
)

# One row per line: this is a table (docs/gen_refusals.py prints it).
# fmt: off
REFUSALS = RefusalTable(PROVIDER, (
    Refusal("anthropic.image_content", "anthropic", "request", "a content block Blackbox does not read in messages, tool results, a document's or a search result's content (a document inside a document, ...)", "not recorded: only text, tool use and results, images, documents (base64, plain text, URL, file and content-list sources), search results, container uploads, server-tool and MCP blocks and tool references are"),
    Refusal("anthropic.system_content", "anthropic", "request", "a block other than text in system (the top-level system, or a message with role system)", "the API does not accept it: system takes text blocks only"),
    Refusal("anthropic.stop_sequence", "anthropic", "response", 'a response with stop_reason: "stop_sequence"', "the matched sequence is not recorded; it would replay as end_turn"),
    Refusal("anthropic.context_window", "anthropic", "response", 'a response with stop_reason: "model_context_window_exceeded"', "it would replay as max_tokens"),
    Refusal("anthropic.text_blocks", "anthropic", "response", "a response with more than one text block, or text after a tool call", "a replay returns one text block before the tool calls"),
    Refusal("anthropic.refusal", "anthropic", "response", "a refusal together with tool calls; and, while the API sends stop_details with refusals, any refusal", "not recorded"),
    Refusal("anthropic.citations", "anthropic", "response", "stop_details in a response", "not recorded"),
    Refusal("anthropic.unknown_stop", "anthropic", "response", "a response with a stop_reason Blackbox does not know (a beta compaction stop, or none)", "a replay only gives end_turn, tool_use, max_tokens or pause_turn"),
    Refusal("anthropic.tool_use_stop", "anthropic", "response", 'tool calls with a stop_reason other than tool_use or max_tokens, or stop_reason: "tool_use" without a tool call', "a replay gives tool_use exactly when there are tool calls, so it would replay with another stop_reason"),
    Refusal("anthropic.unknown_block", "anthropic", "response", "a response content block of a type Blackbox does not record (for example a beta compaction block)", "not recorded: a replay could not give it back"),
), reads="a Messages body")
# fmt: on
THINKING = frozenset({"thinking", "redacted_thinking"})
SERVER_BLOCKS = frozenset({"server_tool_use", "mcp_tool_use", "container_upload"})
JSON_FRAGMENT = 64  # input_json_delta fragment length in synthesized streams
TEXT_FRAGMENT = 256  # text_delta length in synthesized streams


# --- which requests ------------------------------------------------------------------


def matches(method: str, path: str, query: str) -> bool:
    """``POST /v1/messages`` (Claude Code adds ``?beta=true``: the query is not looked at)."""
    return method == "POST" and path.rstrip("/").endswith(PATH_SUFFIXES)


def speaks_for(path: str) -> bool:
    """Anthropic's other endpoints (``/v1/messages/count_tokens``, ``/v1/models``) and Claude Code's own (``/api/…``)."""
    return "/messages" in path or "claude" in path or path.startswith("/api/")


# The parts read the facts above: imported after them.
from blackbox_mitm.codecs.anthropic_messages.request import decode_request, rewrite_tool_result  # noqa: E402
from blackbox_mitm.codecs.anthropic_messages.response import decode_response, encode_error, encode_response, normalize_answer  # noqa: E402
from blackbox_mitm.codecs.anthropic_messages.stream import aggregate_stream, encode_stream, encode_stream_error, is_stream_end  # noqa: E402
