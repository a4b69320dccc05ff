"""Amazon Bedrock's Converse API: ``POST /model/{modelId}/converse`` and ``converse-stream`` <-> the neutral payloads.

Bedrock's own message format, for every model Bedrock serves, as boto3's
``bedrock-runtime`` client (``converse`` / ``converse_stream``), LangChain's
``ChatBedrockConverse``, LiteLLM and Strands Agents send it. Its own package
(the layout of ``docs/adding-a-provider.md``); the path and the errors are
Bedrock's (``codecs/bedrock``), the stream is AWS's binary event stream
(``common/eventstream.py``) whose events are named by ``:event-type``.

Requests (``decode_request``)
    * ``system`` text blocks, joined with "", are the ``systemPrompt``;
      ``cachePoint`` blocks (here and in messages and tools) are dropped.
    * A message's ``text`` blocks are text; ``toolUse`` is a tool_use part,
      ``toolResult`` a tool_result (its ``text`` blocks joined, a ``json`` block
      as compact JSON text; ``status: "error"`` makes it an error);
      ``reasoningContent`` is dropped like thinking; images, documents, video
      and guard content are refused.
    * ``toolConfig.tools[].toolSpec`` are the tools (``inputSchema.json``);
      ``toolConfig.toolChoice``, ``inferenceConfig``'s ``maxTokens``,
      ``temperature``, ``topP``, ``stopSequences`` and
      ``additionalModelRequestFields`` are the compared controls (under their
      own names); ``guardrailConfig`` and ``promptVariables`` are refused,
      ``requestMetadata`` and ``performanceConfig`` are not compared.
    * The model is the path's, as ``codecs/bedrock`` reads it (an ARN reduced to
      its id); ``converse-stream`` records ``params.stream: true``.

Responses (``decode_response``, ``aggregate_stream``)
    ``output.message.content``: text blocks before the first toolUse are joined;
    text after a tool call is refused; ``stopReason`` ``end_turn`` /
    ``tool_use`` / ``max_tokens`` are recorded, every other one refused. A
    stream (messageStart, contentBlockStart/Delta/Stop, messageStop, metadata)
    is added up into that response; ``metadata`` is its last event.

Synthesized answers: ``toolUseId`` is ``tooluse_bb<N>``, usage is the recorded token counts (0 when none), metrics 0.
"""

from __future__ import annotations

from blackbox_mitm.codecs.common import aws
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
    "STREAM_CONTENT_TYPE",
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
    "stream_parser",
]

NAME = "bedrock-converse"
PROVIDER = "bedrock-converse"
DEFAULT_HOSTS = aws.DEFAULT_HOSTS  # the AWS transport's facts, shared with bedrock (common/aws.py)
CREDENTIAL_HEADERS = aws.CREDENTIAL_HEADERS
CREDENTIAL_QUERY = aws.CREDENTIAL_QUERY
KEY_ENV_VARS = aws.KEY_ENV_VARS
ID_PREFIXES: tuple[str, ...] = ("tooluse_",)
RESPONSE_KEYS: tuple[str, ...] = ("stopReason", "inputTokens", "outputTokens", "totalTokens", "latencyMs", "toolUseId")
STREAM_CONTENT_TYPE = aws.STREAM_CONTENT_TYPE
INFERENCE = ("maxTokens", "temperature", "topP", "stopSequences")
PARAMS: tuple[tuple[str, str], ...] = (
    *((name, name) for name in INFERENCE),
    ("toolChoice", "toolChoice"),
    ("additionalModelRequestFields", "additionalModelRequestFields"),
)
OPS = ("converse", "converse-stream")

# fmt: off
REFUSALS = RefusalTable(PROVIDER, (
    Refusal("bedrock-converse.media", "bedrock-converse", "request", "image, document, video or guardContent blocks in messages, system or tool results", "non-text content is not supported yet: only text is recorded"),
    Refusal("bedrock-converse.guardrail", "bedrock-converse", "request", "guardrailConfig (a guardrail applied to the call)", "a guardrail's interventions are produced by the provider and could not be replayed"),
    Refusal("bedrock-converse.prompt_variables", "bedrock-converse", "request", "promptVariables (a Prompt Management prompt as the model)", "the prompt is held by the provider: what the model saw is not in the request"),
    Refusal("bedrock-converse.stop_reason", "bedrock-converse", "response", "a stopReason other than end_turn, tool_use or max_tokens (stop_sequence, guardrail_intervened, content_filtered, ...)", "a replay only gives end_turn, tool_use or max_tokens"),
    Refusal("bedrock-converse.text_after_tool", "bedrock-converse", "response", "text after a toolUse block in a response", "a replay returns the text before the tool calls"),
    Refusal("bedrock-converse.tool_use_stop", "bedrock-converse", "response", 'toolUse blocks with a stopReason other than tool_use or max_tokens, or stopReason: "tool_use" without one', "a replay gives tool_use exactly when there are tool calls"),
    Refusal("bedrock-converse.unknown_block", "bedrock-converse", "response", "a response content block Blackbox does not record (citations, images, ...)", "not recorded: a replay could not give it back"),
), reads="a Bedrock Converse body")
# fmt: on


# --- which requests ------------------------------------------------------------------


def matches(method: str, path: str, query: str) -> bool:
    """``POST /model/{modelId}/converse`` and ``…/converse-stream``."""
    parts = path.rstrip("/").rsplit("/", 3)
    return method == "POST" and len(parts) == 4 and parts[1] == "model" and parts[3] in OPS


def speaks_for(path: str) -> bool:
    """Bedrock runtime's other endpoints (``/model/{id}/count-tokens``, ``/guardrail/…``)."""
    return path.startswith(("/model/", "/guardrail/"))


# The parts read the facts above: imported after them.
from blackbox_mitm.codecs.bedrock_converse.request import decode_request, rewrite_tool_result  # noqa: E402
from blackbox_mitm.codecs.bedrock_converse.response import decode_response, encode_error, encode_response, normalize_answer  # noqa: E402
from blackbox_mitm.codecs.bedrock_converse.stream import aggregate_stream, encode_stream, encode_stream_error, is_stream_end, stream_parser  # noqa: E402
