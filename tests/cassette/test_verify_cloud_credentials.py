"""`verify` flags the clouds' credentials in data: AWS access key ids (AKIA…, ASIA…) and Google OAuth tokens (ya29.…)."""

from __future__ import annotations

import pytest
from cassette_builders import weather_trace

from blackbox_mitm.cassette import Trace
from blackbox_mitm.codecs.verified import verify_trace

ACCESS_KEY = "AKIAZ7QK3MXP4TBN2WLE"  # shapes of real credentials; never real ones
SESSION_KEY = "ASIAW4RT8YU2IO6PL3KJ"
OAUTH = "ya29.a0AfB_byC3kQ9xLm2Np7Rt4Vw8Yz1Bc5Df0Gh6Jk3Lm9Np2Qr"


def _tool_result(text: str) -> Trace:
    trace = weather_trace()
    trace.append("tool_result", {"toolCallId": "call-0", "toolName": "sh", "result": text}, timestamp=trace.steps[-1].timestamp + 1)
    return trace


@pytest.mark.parametrize(
    "text",
    [
        f"[default]\naws_access_key_id = {ACCESS_KEY}\n",
        f"AWS_ACCESS_KEY_ID={SESSION_KEY} aws s3 ls",
        f"Authorization: AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/20260101/us-east-1/bedrock/aws4_request",
        f'{{"access_token": "{OAUTH}", "expires_in": 3599}}',
    ],
    ids=["aws-config", "session-key", "sigv4-header", "oauth-token"],
)
def test_a_cloud_credential_in_data_is_flagged_and_never_quoted_whole(text: str) -> None:
    problems = [p for p in verify_trace(_tool_result(text)) if p.code == "credential"]
    assert [p.where for p in problems] == ["payload.result"]
    assert ACCESS_KEY not in problems[0].reason and OAUTH not in problems[0].reason


@pytest.mark.parametrize(
    "text",
    [
        "AKIA is how AWS access key ids begin",
        "AKIAIOSFODNNEXAMPLEEXAMPLE is longer than a key id",  # a run longer than 20: not a key id
        "ya29 is the prefix of a Google OAuth token",
        "the model is us.anthropic.claude-sonnet-4-6-v1:0",
    ],
)
def test_look_alikes_are_not_cloud_credentials(text: str) -> None:
    assert [p for p in verify_trace(_tool_result(text)) if p.code == "credential"] == []
