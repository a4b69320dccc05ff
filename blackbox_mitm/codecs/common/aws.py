"""The AWS transport facts both Bedrock codecs share (InvokeModel in ``bedrock``, Converse in ``bedrock_converse``).

One Bedrock runtime host serves both APIs, signed the same way (SigV4 or a
Bedrock API key) by the same SDKs, so where they are sent, which headers and
query parameters carry credentials, which variables hold keys, how a stream is
framed and where the SDKs fetch credentials are stated once, here; each codec's
package names them as its own facts (``DEFAULT_HOSTS = aws.DEFAULT_HOSTS``...),
so the registry and the contract see every codec alike. Plain Python.
"""

from __future__ import annotations

from blackbox_mitm.codecs.common import eventstream

__all__ = ["CREDENTIAL_HEADERS", "CREDENTIAL_QUERY", "DEFAULT_HOSTS", "KEY_ENV_VARS", "STREAM_CONTENT_TYPE", "TOKEN_HOSTS"]

DEFAULT_HOSTS: tuple[str, ...] = ("bedrock-runtime.*.amazonaws.com", "bedrock-runtime-fips.*.amazonaws.com")
CREDENTIAL_HEADERS: tuple[str, ...] = ("authorization", "x-amz-security-token", "x-amz-date", "x-amz-content-sha256")
CREDENTIAL_QUERY: tuple[str, ...] = ("x-amz-signature", "x-amz-credential", "x-amz-security-token")
# The first is the one a replay sets a placeholder in: with a Bedrock API key, the SDKs sign nothing and ask no
# credential endpoint (boto3, AnthropicBedrock, Claude Code all read it).
KEY_ENV_VARS: tuple[str, ...] = ("AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
STREAM_CONTENT_TYPE = eventstream.CONTENT_TYPE  # AWS's binary event stream
# Where AWS SDKs get credentials: never kept as exchanges (their answers are credentials), refused offline.
TOKEN_HOSTS: tuple[str, ...] = (
    "sts.amazonaws.com",
    "sts.*.amazonaws.com",
    "portal.sso.*.amazonaws.com",
    "oidc.*.amazonaws.com",
    "169.254.169.254",  # the instance metadata service (EC2, ECS, and Azure's too)
    "169.254.170.2",  # ECS task credentials
)
