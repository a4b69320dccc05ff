"""The OpenAI Responses API codec: ``POST …/responses`` bodies <-> the cassette's neutral payloads.

The package every codec has (see ``docs/adding-a-provider.md``): this module
holds its facts and which requests it answers, ``request`` reads requests,
``response`` reads and writes answers, ``stream`` writes and reads streams,
``fields`` the items, tools and response store they share, ``websocket`` the
WebSocket transport. Plain Python, no mitmproxy. Decisions the spec leaves open:

* ``instructions`` then the leading ``system``/``developer`` messages, joined with
  a blank line, are the ``systemPrompt``. Request controls take the chat codec's
  neutral names (``max_output_tokens`` is ``maxTokens``, ``reasoning.effort`` is
  ``reasoningEffort``, ``text.format`` is ``responseFormat``, ``text.verbosity`` is
  ``verbosity``); ``store``, ``metadata``, ``include``, ``prompt_cache_key``,
  ``service_tier``, ``truncation``, ``stream_options``, item ids and statuses, an
  assistant message's ``phase`` and every other field are not compared.
* ``strict`` on a function tool is recorded as the neutral ``"strict": true``
  when the tool is strict, which in this API is the default: ``strict: true``,
  ``null`` or absent. ``strict: false`` (what Codex sends on every function
  tool) records no field, like a chat-completions tool without ``strict``.
* ``previous_response_id``: the request's items are appended to the stored
  conversation of that response (this run's, recorded or served by us), so
  ``model_input`` holds the whole conversation, exactly as if the client had sent
  every item. An id this run never saw, ``conversation`` and a stored ``prompt``
  are refused: their history is on OpenAI's side.
* Responses: one ``message`` (one ``output_text`` or ``refusal`` part) before any
  ``function_call`` / ``custom_tool_call`` items; ``reasoning`` items are dropped;
  ``status: "incomplete"`` for ``max_output_tokens`` is a length stop; a ``compaction``
  item (Codex's compaction, the ``compaction`` module) is the answer's ``compaction``. Anything a
  replay could not give back is refused (``REFUSALS``).
* A body this codec cannot read (not JSON, an item that is not an object, an
  unknown role or item type, a call without a ``call_id``) is a
  ``BlackboxUnsupportedError`` naming the field, like a refusal.
"""

from __future__ import annotations

from typing import Any

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
    "WEBSOCKET",
    "aggregate_stream",
    "decode_request",
    "decode_response",
    "encode_error",
    "encode_response",
    "encode_stream",
    "encode_stream_error",
    "forward_body",
    "is_stream_end",
    "matches",
    "normalize_answer",
    "rewrite_tool_result",
    "speaks_for",
]

NAME = "openai-responses"
PROVIDER = "openai"
# Azure OpenAI: a resource's own host (deployments, and the /openai/v1/ paths).
DEFAULT_HOSTS: tuple[str, ...] = ("api.openai.com", "*.openai.azure.com", "*.cognitiveservices.azure.com", "*.services.ai.azure.com")
CREDENTIAL_HEADERS: tuple[str, ...] = ("authorization", "api-key")
CREDENTIAL_QUERY: tuple[str, ...] = ()
# The first is where a replay sets its placeholder: AzureOpenAI will not start without it (OPENAI_API_KEY gets
# one from the chat codec).
KEY_ENV_VARS: tuple[str, ...] = ("AZURE_OPENAI_API_KEY", "OPENAI_API_KEY", "CODEX_API_KEY")
ID_PREFIXES: tuple[str, ...] = ("resp_", "msg_", "fc_", "ctc_", "call_", "rs_", "cmp_")
RESPONSE_KEYS: tuple[str, ...] = (
    "previous_response_id",
    "call_id",
    "incomplete_details",
    "encrypted_content",
    "sequence_number",
    "created_at",
    "output_text",
    "input_tokens_details",
    "output_tokens_details",
)
# Request controls that are compared: wire name (a dot for a nested field) -> the chat codec's neutral name.
PARAMS: tuple[tuple[str, str], ...] = (
    ("max_output_tokens", "maxTokens"),
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("tool_choice", "toolChoice"),
    ("text.format", "responseFormat"),
    ("parallel_tool_calls", "parallelToolCalls"),
    ("reasoning.effort", "reasoningEffort"),
    ("top_logprobs", "topLogprobs"),
    ("text.verbosity", "verbosity"),
    ("stream", "stream"),
)
ECHO_KEYS = (
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "parallel_tool_calls",
    "previous_response_id",
    "prompt_cache_key",
    "reasoning",
    "safety_identifier",
    "store",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "truncation",
    "user",
)
SYSTEM_JOINER = "\n\n"
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
TEXT_FORMAT: dict[str, Any] = {"type": "text"}
FRAGMENT = 64

# One row per line: this is a table (docs/gen_refusals.py prints it).
# fmt: off
REFUSALS = RefusalTable(PROVIDER, (
    Refusal("openai.responses.local_tool", PROVIDER, "request", "the built-in local_shell, shell, apply_patch and tool_search tools and their call items", "not supported yet: use function or custom tools"),
    Refusal("openai.responses.background", PROVIDER, "request", "background: true", "a background response is fetched later from OpenAI's storage: a replay could not serve it"),
    Refusal("openai.responses.conversation", PROVIDER, "request", "the conversation field", "the conversation is stored on OpenAI's side: its history cannot be known"),
    Refusal("openai.responses.previous_response_id", PROVIDER, "request", "a previous_response_id this run has not seen", "the history it continues is stored on OpenAI's side and cannot be known: record the conversation from its first call"),
    Refusal("openai.responses.prompt", PROVIDER, "request", "a stored prompt (the prompt field)", "the prompt is stored on OpenAI's side: its text cannot be known"),
    Refusal("openai.responses.item_reference", PROVIDER, "request", "an item_reference input item", "the item is stored on OpenAI's side: its content cannot be known"),
    Refusal("openai.responses.non_text", PROVIDER, "request", "input parts (input_image, input_file, input_audio) in an assistant message", "the API does not accept them: an assistant message's content is output_text and refusal parts (in user, system and developer messages and tool outputs they are recorded)"),
    Refusal("openai.responses.tool_arguments", PROVIDER, "response", "function-call arguments that are not a JSON text, in a response or the history", "arguments are recorded parsed, as JSON; a replay could not give this text back"),
    Refusal("openai.responses.refusal_mixed", PROVIDER, "response", "a refusal together with text, tool calls or a length stop", "a replay returns a refusal alone"),
    Refusal("openai.responses.output_layout", PROVIDER, "response", "more than one message, or a message with more than one content part, or a message after a tool call, in one response", "a replay returns one message with one part, before the tool calls"),
    Refusal("openai.responses.status", PROVIDER, "response", "a response whose status is not completed, or incomplete for a reason other than max_output_tokens, or that carries an error", "a replay gives completed, or incomplete for max_output_tokens (a length stop)"),
    Refusal("openai.responses.unknown_item", PROVIDER, "response", "an output item of a type Blackbox does not record", "not recorded: a replay could not give it back"),
), reads="a Responses API body")
# fmt: on


# --- which requests ------------------------------------------------------------------


def matches(method: str, path: str, query: str = "") -> bool:
    """``POST …/responses`` (``/v1/responses``, Codex's ``/backend-api/codex/responses``)."""
    return method.upper() == "POST" and path.rstrip("/").endswith("/responses")


def speaks_for(path: str) -> bool:
    """The Responses API's other paths: ``/v1/responses/{id}``, ``…/input_items``, ``/v1/conversations``."""
    p = path.split("?", 1)[0].rstrip("/")
    return p.endswith("/responses") or "/responses/" in p or "/conversations" in p


# The parts read the facts above: imported after them.
from blackbox_mitm.codecs.openai_responses import websocket  # noqa: E402
from blackbox_mitm.codecs.openai_responses.request import decode_request, forward_body, rewrite_tool_result  # noqa: E402
from blackbox_mitm.codecs.openai_responses.response import decode_response, encode_error, encode_response, normalize_answer  # noqa: E402
from blackbox_mitm.codecs.openai_responses.stream import aggregate_stream, encode_stream, encode_stream_error, is_stream_end  # noqa: E402

# The WebSocket transport's companion (``wss://…/v1/responses``): each response.create message is one call.
WEBSOCKET = websocket
