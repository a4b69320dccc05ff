"""Bedrock's path: the model id out of ``/model/{modelId}/…`` (an ARN reduced to its id)."""

from __future__ import annotations

from urllib.parse import unquote

__all__ = ["model_id"]


def model_id(segment: str) -> tuple[str, str]:
    """(the neutral model name, the id as the agent sent it) for a percent-encoded path segment.

    ``arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-x``
    -> ``us.anthropic.claude-x``; a bare id is itself. No region, account or
    partition is kept.
    """
    sent = unquote(segment)
    if sent.startswith("arn:"):
        resource = sent.split(":", 5)[-1]  # "inference-profile/us.anthropic.claude-x", "foundation-model/..."
        return resource.rsplit("/", 1)[-1], sent
    return sent, sent
