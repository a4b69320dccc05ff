"""The OpenAI chat-completions codec: ``POST …/chat/completions`` bodies <-> the cassette's neutral payloads.

The package every codec has (see ``docs/adding-a-provider.md``): this module
holds its facts and which requests it answers, ``request`` reads requests,
``response`` reads and writes answers, ``stream`` writes and reads streams,
``fields`` the wire readers they share. Decisions the spec leaves open:

* The leading ``system``/``developer`` messages become ``systemPrompt``, joined
  with ``SYSTEM_JOINER`` (a blank line, ``"\\n\\n"``); a system or developer
  message after the first other message stays in ``messages`` as role
  ``"system"``. Text parts are joined with ``""`` everywhere.
* Consecutive ``tool`` messages become one user turn of ``tool_result`` parts.
  A result's ``toolName`` comes from the assistant tool call with its id in the
  same request, else from the run's ``CallIds``, else it is ``""``.
* A tool without ``parameters`` gets ``inputSchema`` ``{"type": "object",
  "properties": {}}``, what the API says an absent schema means.
* A request field or param that is ``null`` counts as absent. ``refusal: ""``
  (in a response, a stream or the history) counts as no refusal, and empty
  ``content`` beside a refusal is not "content and a refusal". ``content: ""``
  beside tool calls is the answer's ``text: ""`` and is served back as ``""``.
* An assistant message's refusal in the history (its ``refusal``, or ``refusal``
  content parts) is a ``{"type": "refusal", "text"}`` part after its text (compared).
  Non-text parts in system, developer and assistant messages are refused: the API
  does not accept them there.
* A function tool's ``strict: true`` is the neutral ``"strict": true`` (compared);
  ``false`` or absent records no field.
* Refusals name the offending field as a JSON path. When the kind of an object
  is what is refused (a custom tool, an image part), the path ends in ``.type``;
  both ``max_tokens`` and ``max_completion_tokens`` name ``max_completion_tokens``.
* A body that is not a chat-completions body this codec can read (not JSON, a
  message that is not an object, an unknown role, a tool call without an id) is
  a ``BlackboxUnsupportedError`` naming the field, like a refusal; the API would
  reject most of them with a 400.
* Synthesized responses: id ``chatcmpl-bb<hash of the answer and its time>``,
  ``annotations: []``, zero usage with zeroed details, no ``system_fingerprint``
  nor ``service_tier``. Streams send text in fragments of ``FRAGMENT`` code
  points and ``"usage": null`` on every chunk only when usage was asked for.
* Audio output (``modalities: ["text", "audio"]``, ``audio: {voice, format}``):
  ``audio.py`` (the transcript is the answer's text, the bytes are in the run's
  media, the provider's ``audio_…`` id is mapped and served as our own).
* ``aggregate_stream`` merges deltas the way the SDK's accumulator does, so a
  recorded stream is refused exactly when the same answer sent whole would be.
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

NAME = "openai"
PROVIDER = "openai"
# Azure OpenAI: a resource's own host (deployments, and the /openai/v1/ paths).
DEFAULT_HOSTS: tuple[str, ...] = ("api.openai.com", "*.openai.azure.com", "*.cognitiveservices.azure.com", "*.services.ai.azure.com")
# Where Azure identity libraries get Entra ID tokens: never kept as exchanges, refused offline.
TOKEN_HOSTS: tuple[str, ...] = ("login.microsoftonline.com", "login.windows.net", "login.microsoft.com")
CREDENTIAL_HEADERS: tuple[str, ...] = ("authorization", "api-key")  # api-key: Azure OpenAI
CREDENTIAL_QUERY: tuple[str, ...] = ("api-key", "api_key")
KEY_ENV_VARS: tuple[str, ...] = ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "OPENROUTER_API_KEY")
ID_PREFIXES: tuple[str, ...] = ("call_", "chatcmpl-", "resp_")
RESPONSE_KEYS: tuple[str, ...] = (
    "usage",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "prompt_tokens_details",
    "completion_tokens_details",
    "finish_reason",
    "system_fingerprint",
    "service_tier",
    "choices",
    "created",
    "logprobs",
    "tool_calls",
    "tool_call_id",
)
PATH_SUFFIXES: tuple[str, ...] = ("/chat/completions",)
# Paths of OpenAI's API that are not chat completions, for the shape of an error.
_API_PATHS: tuple[str, ...] = ("/completions", "/embeddings", "/models", "/v1/traces", "/moderations", "/files", "/audio")

SYSTEM_JOINER = "\n\n"
FRAGMENT = 64
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

# Request controls that are compared, wire name -> neutral name, in the spec's order.
PARAMS: tuple[tuple[str, str], ...] = (
    ("max_tokens", "maxTokens"),
    ("max_completion_tokens", "maxTokens"),
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("tool_choice", "toolChoice"),
    ("response_format", "responseFormat"),
    ("stop", "stop"),
    ("parallel_tool_calls", "parallelToolCalls"),
    ("seed", "seed"),
    ("reasoning_effort", "reasoningEffort"),
    ("presence_penalty", "presencePenalty"),
    ("frequency_penalty", "frequencyPenalty"),
    ("logit_bias", "logitBias"),
    ("logprobs", "logprobs"),
    ("top_logprobs", "topLogprobs"),
    ("verbosity", "verbosity"),
    ("prediction", "prediction"),
    ("modalities", "modalities"),
    ("audio", "audio"),  # audio output's voice and format (compared); the answer's audio is kept in the run's media
)


# One row per line: this is a table (docs/gen_refusals.py prints it).
# fmt: off
REFUSALS = RefusalTable(PROVIDER, (
    Refusal("openai.image_content", "openai", "request", "a content part of a type Blackbox does not read, in a user or tool message", "not recorded: only text, images, files and audio input are"),
    Refusal("openai.non_text_role", "openai", "request", "a non-text content part (image_url, input_audio, file) in a system, developer or assistant message", "the API does not accept it: system and developer messages take text parts, an assistant message text and refusal parts"),
    Refusal("openai.custom_tool", "openai", "request", "OpenAI custom tools (type: custom)", "custom tools are not supported yet: use function tools"),
    Refusal("openai.custom_tool_call", "openai", "response", "a custom tool call in a response or the history", "custom tools are not supported yet: use function tools"),
    Refusal("openai.n", "openai", "request", "several choices per request (n > 1)", "several choices per request are not supported: a replay returns one"),
    Refusal("openai.choices", "openai", "response", "a response with more than one choice", "several choices per request are not supported: a replay returns one"),
    Refusal("openai.audio_unknown_id", "openai", "request", "an assistant message's audio id (messages[i].audio.id) that no answer of this run carried", "a provider's audio id never enters the cassette: Blackbox knows only the audio ids of the answers it recorded or served in this run"),
    Refusal("openai.functions", "openai", "request", "the legacy functions / function_call request fields", "use tools"),
    Refusal("openai.function_call_message", "openai", "response", "a function_call in a response or the history", "use tools"),
    Refusal("openai.message_name", "openai", "request", "a message name (messages[i].name)", "not recorded; two requests differing only in name would match"),
    Refusal("openai.content_filter", "openai", "response", 'a response with finish_reason: "content_filter"', "it would replay as a normal stop"),
    Refusal("openai.azure_content_filter", "openai", "response", "Azure OpenAI content-filter results that flag something (filtered or detected: true); results that flag nothing are dropped", "a replay could not give the annotations back"),
    Refusal("openai.tool_calls_finish", "openai", "response", "tool calls with a finish_reason other than tool_calls or length", "it would replay as tool_calls (the API sends stop when tool_choice names a function)"),
    Refusal("openai.null_content", "openai", "response", "a final answer with null content", "a replay gives a final answer string content"),
    Refusal("openai.refusal_mixed", "openai", "response", "a refusal together with content, tool calls or a finish_reason other than stop", "a replay returns a refusal alone"),
    Refusal("openai.annotations_response", "openai", "response", "annotations (url_citation) in a response", "not recorded yet (logprobs are: kept with the answer, served back, not compared)"),
    Refusal("openai.web_search_options", "openai", "request", "the web_search_options request field", "not recorded"),
    Refusal("openai.content_and_refusal", "openai", "response", "a response with both content and a refusal", "only one of them is recorded"),
    Refusal("openai.both_max_tokens", "openai", "request", "both max_tokens and max_completion_tokens in one request", "they are recorded as one value"),
    Refusal("openai.tool_arguments", "openai", "response", "tool-call arguments that are not a JSON text, in a response or the history", "arguments are recorded parsed, as JSON; a replay could not give this text back"),
    Refusal("openai.finish_reason", "openai", "response", "a final answer whose finish_reason is not stop or length (missing, tool_calls without a tool call, or a value Blackbox does not know)", "a replay gives stop or length, so it would replay with another finish_reason"),
), reads="a chat.completions body")
# fmt: on


# --- which requests ------------------------------------------------------------------


def matches(method: str, path: str, query: str) -> bool:
    """``POST …/chat/completions`` (Azure's ``/openai/deployments/x/chat/completions`` too)."""
    return method == "POST" and path.rstrip("/").endswith(PATH_SUFFIXES)


def speaks_for(path: str) -> bool:
    p = path.rstrip("/")
    return "/chat/" in p or p.endswith(_API_PATHS) or "/v1/responses" in p


# The parts read the facts above: imported after them.
from blackbox_mitm.codecs.openai_chat.request import decode_request, forward_body, rewrite_tool_result  # noqa: E402
from blackbox_mitm.codecs.openai_chat.response import decode_response, encode_error, encode_response, normalize_answer  # noqa: E402
from blackbox_mitm.codecs.openai_chat.stream import aggregate_stream, encode_stream, encode_stream_error, is_stream_end  # noqa: E402
