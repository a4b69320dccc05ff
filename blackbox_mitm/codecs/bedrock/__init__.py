"""Amazon Bedrock's InvokeModel for Anthropic models: a transport of the Anthropic Messages codec.

``POST https://bedrock-runtime.{region}.amazonaws.com/model/{modelId}/invoke`` and
``…/invoke-with-response-stream``, as the ``anthropic`` package's ``AnthropicBedrock``,
``@anthropic-ai/bedrock-sdk`` and Claude Code (``CLAUDE_CODE_USE_BEDROCK=1``) send
them. The body is a Messages body with ``anthropic_version: "bedrock-2023-05-31"``
and without ``model`` / ``stream``: those are in the path. So the neutral steps are
the Anthropic codec's, exactly — a run recorded on Bedrock replays for the same
agent pointed at Anthropic's API (same model string), and the other way round.

Decisions (see ``docs/clouds.md``):

* The neutral ``model`` is the path's model id, percent-decoded; when it is an ARN
  (``arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-…``)
  it is the id after the resource type (``us.anthropic.claude-…``): no partition,
  region or account enters a cassette. A replay echoes the path's id as sent.
* A streamed call (``invoke-with-response-stream``) records ``params.stream: true``,
  as the same call on Anthropic's API does.
* ``anthropic_version`` is the transport's, not the model's: not recorded.
  ``anthropic_beta`` (the body's list of beta flags) is dropped like the
  ``anthropic-beta`` header on Anthropic's API.
* A stream is AWS's binary event stream (``common/eventstream.py``): each ``chunk``
  event's payload is ``{"bytes": base64(an Anthropic stream event)}``. The parser
  hands the Anthropic events themselves to the rest of the package; an
  ``exception`` message is an Anthropic ``error`` event.
* Errors are Bedrock's: ``{"message": …}`` with ``x-amzn-ErrorType``, which boto3
  and the Anthropic SDKs read.
* Credentials are never recorded: the SigV4 ``Authorization`` header (its
  ``Credential=AKIA…`` and ``Signature=``), ``X-Amz-Security-Token``,
  ``X-Amz-Date`` and a Bedrock API key (``Authorization: Bearer``). A replay checks
  no signature.
"""

from __future__ import annotations

import re

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

NAME = "bedrock"
PROVIDER = "bedrock"
DEFAULT_HOSTS = aws.DEFAULT_HOSTS  # the AWS transport's facts, shared with bedrock_converse (common/aws.py)
CREDENTIAL_HEADERS = aws.CREDENTIAL_HEADERS
CREDENTIAL_QUERY = aws.CREDENTIAL_QUERY
KEY_ENV_VARS = aws.KEY_ENV_VARS
ID_PREFIXES: tuple[str, ...] = ("toolu_", "msg_")
RESPONSE_KEYS: tuple[str, ...] = ("amazon-bedrock-invocationMetrics", "invocationMetrics", "inputTokenCount", "outputTokenCount")
PARAMS: tuple[tuple[str, str], ...] = ()  # the Anthropic codec's (the body is a Messages body)
STREAM_CONTENT_TYPE = aws.STREAM_CONTENT_TYPE
TOKEN_HOSTS = aws.TOKEN_HOSTS
PATH = re.compile(r"^(?:/[^?#]*)?/model/(?P<model>[^/]+)/(?P<op>invoke|invoke-with-response-stream)/?$")
BEDROCK_ONLY = ("anthropic_version", "anthropic_beta")

# fmt: off
REFUSALS = RefusalTable(PROVIDER, (
    Refusal("bedrock.not_anthropic", "bedrock", "request", "an InvokeModel body that is not an Anthropic Messages body (Titan, Llama, Mistral... native formats)", "only Anthropic models are recorded over InvokeModel; use the Converse API for other models"),
), reads="a Bedrock InvokeModel body")
# fmt: on


# --- which requests ------------------------------------------------------------------


def matches(method: str, path: str, query: str) -> bool:
    """``POST /model/{modelId}/invoke`` and ``…/invoke-with-response-stream``."""
    return method == "POST" and PATH.match(path) is not None


def speaks_for(path: str) -> bool:
    """Bedrock runtime's other endpoints (``/model/{id}/count-tokens``, ``/async-invoke``, ``/guardrail/…``)."""
    return path.startswith(("/model/", "/async-invoke", "/guardrail/"))


# The parts read the facts above: imported after them.
from blackbox_mitm.codecs.bedrock.request import decode_request, rewrite_tool_result  # noqa: E402
from blackbox_mitm.codecs.bedrock.response import decode_response, encode_error, encode_response, normalize_answer  # noqa: E402
from blackbox_mitm.codecs.bedrock.stream import aggregate_stream, encode_stream, encode_stream_error, is_stream_end, stream_parser  # noqa: E402
