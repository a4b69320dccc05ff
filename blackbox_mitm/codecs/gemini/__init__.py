"""The Google Gemini codec: ``generateContent`` / ``streamGenerateContent`` <-> the cassette's neutral payloads.

The package every codec has (see ``docs/adding-a-provider.md``): this module
holds its facts and which requests it answers, ``request`` reads requests,
``response`` reads and writes answers, ``stream`` writes and reads streams,
``fields`` the readers of parts and field names they share. Plain Python, no
mitmproxy. Decisions the spec leaves open:

Requests (``decode_request``)
    * The path says the model and whether it streams:
      ``…/{v1beta|v1|v1alpha}/models/{model}:generateContent`` and
      ``:streamGenerateContent?alt=sse``. The query is read for ``alt`` only and
      is never stored (it may carry ``?key=``).
    * Structural field names are read in camelCase whatever the spelling: the
      API takes proto JSON's snake_case too, and google-genai sends some
      (``parameters_json_schema``); user data (args, schemas) is untouched.
    * Each ``contents[i]`` is one message (so a history keeps its positions):
      role ``model`` is ``assistant``, an absent role is ``user``, others stay as
      sent. Text parts are joined, empty text and thought parts (``thought:
      true``) are dropped, ``thoughtSignature`` is not kept (see the
      limitations page: a replay cannot give it back). ``executableCode`` and
      ``codeExecutionResult`` parts are server-side parts (``code_execution``).
    * Adjacent model contents are one turn (``ONE_TURN_ROLES``): google-genai's
      streamed chat sends an answer back as one content per chunk it got. Each
      stays its own message in the cassette; strict replay compares them joined
      (``matcher.turns``), and a function call's or code's place is counted from
      the turn's first content.
    * Function calls rarely carry an ``id``. A call without one is known by its
      place — (message index, its index among that turn's calls, its name) in
      its conversation (told apart by the text of the first message) —
      which ``decode_response`` and ``encode_response`` note in the run's codec
      state, so the call the model made at step k is the same ``call-N`` in
      every later history. A call with an id (the provider's, or ours in a
      replay) is known by it. A ``functionResponse`` is paired by its ``id``
      when that id is known, else with the first unanswered call of the same
      name in the latest model turn; its ``response`` object is the result,
      as sent (an ``error`` key stays inside it), and with media ``parts``
      ``{"response", "parts"}`` (``multimodal``).
    * ``systemInstruction`` text is the ``systemPrompt``, its media parts
      ``systemMedia`` (``multimodal``); function declarations
      of every ``tools[]`` entry are the tool definitions (``parameters`` or
      ``parametersJsonSchema``, whichever was sent; none is an empty object
      schema), a built-in tool a ``builtin`` one (``builtins``);
      ``toolConfig.functionCallingConfig`` is ``toolChoice``; the
      ``generationConfig`` controls of ``PARAMS`` and ``safetySettings`` are
      compared under neutral names. Other fields are not compared.
Responses (``decode_response``)
    Checked in this order: a blocked prompt, the number of candidates,
    ``finishReason`` (only STOP and MAX_TOKENS replay), citation/grounding/
    logprobs metadata, then the parts (non-text parts, text after a function
    call). Text parts are joined into one; thought parts are dropped.
Synthesized answers
    One candidate: the text part, then the function calls (each with our id
    ``gemini-bb<N>``; the first with the sentinel ``thoughtSignature`` Gemini 3
    accepts for history it did not produce, see ``response``), ``finishReason`` STOP (MAX_TOKENS for a ``length``
    stop; an OpenAI refusal is served as text with STOP), zero
    ``usageMetadata``, ``modelVersion`` the requested model, ``responseId``
    our own. Errors are Google's ``{"error": {code, message, status}}``.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from blackbox_mitm.codecs.common.refusals import Refusal, RefusalTable

__all__ = [
    "CREDENTIAL_HEADERS",
    "CREDENTIAL_QUERY",
    "DEFAULT_HOSTS",
    "ID_PREFIXES",
    "KEY_ENV_VARS",
    "NAME",
    "ONE_TURN_ROLES",
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

NAME = "gemini"
PROVIDER = "gemini"
DEFAULT_HOSTS: tuple[str, ...] = ("generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com")
CREDENTIAL_HEADERS: tuple[str, ...] = ("x-goog-api-key", "authorization")
CREDENTIAL_QUERY: tuple[str, ...] = ("key",)
KEY_ENV_VARS: tuple[str, ...] = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
# Gemini's own ids (responseId, functionCall.id) have no fixed prefix; the ids a replay serves do, and
# they never belong in a cassette either (they map back to call-N).
ID_PREFIXES: tuple[str, ...] = ("gemini-bb",)
RESPONSE_KEYS: tuple[str, ...] = (
    "candidates",
    "finishReason",
    "usageMetadata",
    "promptTokenCount",
    "candidatesTokenCount",
    "modelVersion",
    "responseId",
    "safetyRatings",
    "promptFeedback",
    "thoughtSignature",
)
# Request controls that are compared, wire name (a JSON path) -> neutral name.
PARAMS: tuple[tuple[str, str], ...] = (
    ("generationConfig.temperature", "temperature"),
    ("generationConfig.topP", "topP"),
    ("generationConfig.topK", "topK"),
    ("generationConfig.maxOutputTokens", "maxTokens"),
    ("generationConfig.stopSequences", "stopSequences"),
    ("generationConfig.responseMimeType", "responseMimeType"),
    ("generationConfig.responseSchema", "responseSchema"),
    ("generationConfig.responseJsonSchema", "responseJsonSchema"),
    ("generationConfig.seed", "seed"),
    ("generationConfig.presencePenalty", "presencePenalty"),
    ("generationConfig.frequencyPenalty", "frequencyPenalty"),
    ("generationConfig.thinkingConfig", "thinking"),
    ("generationConfig.responseLogprobs", "logprobs"),
    ("generationConfig.logprobs", "topLogprobs"),
    ("toolConfig.functionCallingConfig", "toolChoice"),
    ("toolConfig.retrievalConfig", "retrievalConfig"),  # the location googleMaps grounds on (builtins)
    ("safetySettings", "safetySettings"),
    ("generationConfig.responseModalities", "modalities"),  # TEXT, IMAGE, AUDIO: an image or speech answer is kept in the run's media
    ("generationConfig.speechConfig", "speechConfig"),  # the voice (compared): speech comes back as inlineData audio parts
    ("generationConfig.imageConfig", "imageConfig"),
)

# Vertex AI's Gemini paths put the project, location and publisher before the model (neither is recorded).
MODEL_PATH = re.compile(
    r"/(?:v1|v1beta|v1alpha|v1beta1)/(?:projects/[^/]+/locations/[^/]+/)?(?:publishers/google/)?"
    r"(?:models|tunedModels)/([^/:]+):(generateContent|streamGenerateContent)$"
)
CODE_ASSIST = re.compile(r"/v1internal:(?:generateContent|streamGenerateContent)$")
_API_PATH = re.compile(
    r"^(?:/upload)?/(?:v1beta|v1alpha|v1internal)(?:[/:]|$)|^/v1/(?:models|tunedModels|files|cachedContents|operations)/[^/]+:\w+$"
)
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
# Adjacent model contents are one turn: google-genai's streamed chat sends an answer back as one content per chunk
# it got, and a replay's chunks are not the provider's. Strict replay compares them joined (matcher/turns.py).
ONE_TURN_ROLES: tuple[str, ...] = ("assistant",)
FRAGMENT = 64

# One row per line: this is a table (docs/gen_refusals.py prints it).
# fmt: off
REFUSALS = RefusalTable(PROVIDER, (
    Refusal("gemini.code_assist", PROVIDER, "path", "Code Assist (Gemini CLI signed in with a Google account: cloudcode-pa.googleapis.com/v1internal)", "not supported: the signed-in CLI also needs Code Assist's setup calls and Google sign-in, which are not model calls; use GEMINI_API_KEY"),
    Refusal("gemini.stream_json", PROVIDER, "path", "streamGenerateContent without ?alt=sse (a streamed JSON array)", "only server-sent events are recorded: use alt=sse (the SDKs and Gemini CLI do)"),
    Refusal("gemini.candidate_count", PROVIDER, "request", "several candidates per request (generationConfig.candidateCount > 1)", "several candidates per request are not supported: a replay returns one"),
    Refusal("gemini.non_text", PROVIDER, "request", "Live API parts (toolCall, toolResponse) in contents; parts other than text and media in systemInstruction", "not recorded: server-side tool invocations are not read (contents' media, code-execution parts and a functionResponse's media parts are: docs/cassette.md)"),
    Refusal("gemini.builtin_tool", PROVIDER, "request", "built-in tools other than Google Search, enterprise web search, URL context, Google Maps, file search, code execution and computer use (mcpServers, retrieval, third-party search, ...)", "not recorded: they reach servers or stores Blackbox never sees, outside the answer"),
    Refusal("gemini.cached_content", PROVIDER, "request", "cachedContent (a prompt cached on the server)", "server-side state: the cached part of the prompt is not in the request, so it could be neither compared nor replayed"),
    Refusal("gemini.prompt_blocked", PROVIDER, "response", "a response whose prompt was blocked (promptFeedback.blockReason)", "it holds no answer a replay could give back"),
    Refusal("gemini.candidates", PROVIDER, "response", "a response with more than one candidate", "several candidates per request are not supported: a replay returns one"),
    Refusal("gemini.finish_reason", PROVIDER, "response", "a finishReason other than STOP or MAX_TOKENS (SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, MALFORMED_FUNCTION_CALL, OTHER, ...), or none", "a replay gives STOP or MAX_TOKENS, so it would replay as a normal stop"),
    Refusal("gemini.response_metadata", PROVIDER, "response", "logprobsResult on a candidate", "not recorded"),
    Refusal("gemini.non_text_response", PROVIDER, "response", "a Live API part in a response (toolCall, toolResponse)", "not recorded: a replay could not give it back (media and code-execution parts are: docs/cassette.md)"),
    Refusal("gemini.text_after_call", PROVIDER, "response", "text after a function call in a response", "a replay returns the text before the function calls"),
), reads="a Gemini generateContent body")
# fmt: on


# --- which requests ------------------------------------------------------------------


def matches(method: str, path: str, query: str) -> bool:
    """``POST …/models/{model}:generateContent`` or ``:streamGenerateContent`` (and Code Assist's, to refuse it)."""
    if method != "POST":
        return False
    bare = unquote(path)
    return bool(MODEL_PATH.search(bare) or CODE_ASSIST.search(bare))


def speaks_for(path: str) -> bool:
    """Gemini's other endpoints: ``/v1beta/…`` (models, files, countTokens, …), ``/v1/models/x:action``, Code Assist."""
    return bool(_API_PATH.search(unquote(path)))


# The parts read the facts above: imported after them.
from blackbox_mitm.codecs.gemini.request import decode_request, rewrite_tool_result  # noqa: E402
from blackbox_mitm.codecs.gemini.response import decode_response, encode_error, encode_response, normalize_answer  # noqa: E402
from blackbox_mitm.codecs.gemini.stream import aggregate_stream, encode_stream, encode_stream_error, is_stream_end  # noqa: E402
