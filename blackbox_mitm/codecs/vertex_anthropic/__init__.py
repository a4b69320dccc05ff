"""Google Vertex AI's rawPredict for Anthropic models: a transport of the Anthropic Messages codec.

``POST https://{region}-aiplatform.googleapis.com/v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:rawPredict``
and ``:streamRawPredict`` (also the ``global`` host ``aiplatform.googleapis.com``),
as the ``anthropic`` package's ``AnthropicVertex``, ``@anthropic-ai/vertex-sdk``
and Claude Code (``CLAUDE_CODE_USE_VERTEX=1``) send them. The body is a Messages
body with ``anthropic_version: "vertex-2023-10-16"`` and no ``model`` (it is in
the path); it keeps ``stream``, and a stream is Anthropic's own SSE. So the
neutral steps are the Anthropic codec's, exactly.

Decisions (see ``docs/clouds.md``):

* The neutral ``model`` is the path's model (``claude-sonnet-4@20250514``),
  percent-decoded; the project and the location are not recorded. A replay
  echoes the model as sent.
* ``anthropic_version`` is the transport's: not recorded.
* Errors are the Anthropic shape (what rawPredict passes on from the model).
* The Google OAuth bearer token (``Authorization: Bearer ya29.…``) is never
  recorded; a replay needs none (``CLAUDE_CODE_SKIP_VERTEX_AUTH=1``, or any token).
"""

from __future__ import annotations

import re

from blackbox_mitm.codecs.common.refusals import RefusalTable

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

NAME = "vertex-anthropic"
PROVIDER = "vertex"
# The regional hosts, the global one, and the multi-region ones (aiplatform.us.rep.googleapis.com).
DEFAULT_HOSTS: tuple[str, ...] = ("*-aiplatform.googleapis.com", "aiplatform.googleapis.com", "aiplatform.*.rep.googleapis.com")
# Where Google auth libraries get tokens: never kept as exchanges (their answers are credentials), refused offline.
TOKEN_HOSTS: tuple[str, ...] = (
    "oauth2.googleapis.com",
    "accounts.google.com",
    "sts.googleapis.com",
    "metadata.google.internal",
    "iamcredentials.googleapis.com",
)
CREDENTIAL_HEADERS: tuple[str, ...] = ("authorization",)
CREDENTIAL_QUERY: tuple[str, ...] = ("access_token",)
# gcloud's access-token variable first (a replay's placeholder goes there, harmlessly); never a placeholder
# in GOOGLE_APPLICATION_CREDENTIALS, which names a file.
KEY_ENV_VARS: tuple[str, ...] = ("CLOUDSDK_AUTH_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS")
ID_PREFIXES: tuple[str, ...] = ("toolu_", "msg_")
RESPONSE_KEYS: tuple[str, ...] = ("usage", "stop_reason")
PARAMS: tuple[tuple[str, str], ...] = ()  # the Anthropic codec's (the body is a Messages body)
PATH = re.compile(r"^(?:/[^?#]*)?/publishers/anthropic/models/(?P<model>[^/:]+):(?P<op>rawPredict|streamRawPredict)/?$")
VERTEX_ONLY = ("anthropic_version",)
REFUSALS = RefusalTable(PROVIDER, (), reads="a Vertex AI rawPredict body")


# --- which requests ------------------------------------------------------------------


def matches(method: str, path: str, query: str) -> bool:
    """``POST …/publishers/anthropic/models/{m}:rawPredict`` / ``:streamRawPredict`` (not ``count-tokens``)."""
    m = PATH.match(path)
    return method == "POST" and m is not None and m.group("model") != "count-tokens"


def speaks_for(path: str) -> bool:
    """Vertex's other Anthropic endpoints (``models/count-tokens:rawPredict``)."""
    return "/publishers/anthropic/" in path


# The parts read the facts above: imported after them.
from blackbox_mitm.codecs.vertex_anthropic.request import decode_request, rewrite_tool_result  # noqa: E402
from blackbox_mitm.codecs.vertex_anthropic.response import decode_response, encode_error, encode_response, normalize_answer  # noqa: E402
from blackbox_mitm.codecs.vertex_anthropic.stream import aggregate_stream, encode_stream, encode_stream_error, is_stream_end  # noqa: E402
