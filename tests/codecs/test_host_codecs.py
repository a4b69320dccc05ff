"""The registry's one choosing function with the hosts a project names with their codec (``[tool.blackbox.hosts]``).

A named host's requests are its codec's model calls or none; every other host's
are chosen by path as before. ``host_spec`` reads ``HOST`` / ``HOST=CODEC`` and
refuses a codec name that is not one, listing the names.
"""

from __future__ import annotations

import pytest

from blackbox_mitm.codecs import (
    CODECS,
    REGISTERED,
    anthropic_messages,
    codec_for,
    codec_names,
    error_codec_for,
    gemini,
    host_spec,
    openai_chat,
    openai_responses,
)
from blackbox_mitm.errors import ConfigError

# One model-call path per codec, as its SDKs send them.
MODEL_PATHS = {
    "openai": ["/v1/chat/completions", "/chat/completions", "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"],
    "openai-responses": ["/v1/responses", "/backend-api/codex/responses"],
    "anthropic": ["/v1/messages", "/v1/messages?beta=true"],
    "gemini": ["/v1beta/models/gemini-2.5-flash:generateContent", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"],
    "bedrock": ["/model/us.anthropic.claude-sonnet-4-6-v1%3A0/invoke", "/model/x/invoke-with-response-stream"],
    "bedrock-converse": ["/model/us.anthropic.claude-sonnet-4-6-v1%3A0/converse", "/model/x/converse-stream"],
    "vertex-anthropic": ["/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-6@20260101:rawPredict"],
}
GATEWAY = {"llm.corp.example": "openai", "*.anthropic-gw.example": "anthropic", "eu.anthropic-gw.example": "gemini"}


def test_every_codec_has_sample_paths() -> None:
    assert set(MODEL_PATHS) == set(CODECS)


@pytest.mark.parametrize(("name", "path"), [(n, p) for n, paths in MODEL_PATHS.items() for p in paths])
def test_each_model_path_is_exactly_one_codecs(name: str, path: str) -> None:
    """The match sets do not overlap, so a named host's codec is also the one its path alone chooses (the engine's)."""
    bare, _, query = path.partition("?")
    assert [c.NAME for c in REGISTERED if c.matches("POST", bare, query)] == [name]
    chosen = codec_for("POST", path)
    assert chosen is CODECS[name]


def test_a_named_host_is_its_codec_or_no_model_call() -> None:
    assert codec_for("POST", "/v1/chat/completions", "llm.corp.example", GATEWAY) is openai_chat
    assert codec_for("POST", "/api/v1/chat/completions", "LLM.corp.example", GATEWAY) is openai_chat  # OpenRouter's prefix
    # The gateway speaks chat completions only: its /v1/messages and /v1/responses are not model calls of it.
    assert codec_for("POST", "/v1/messages", "llm.corp.example", GATEWAY) is None
    assert codec_for("POST", "/v1/responses", "llm.corp.example", GATEWAY) is None
    assert codec_for("GET", "/v1/chat/completions", "llm.corp.example", GATEWAY) is None


def test_other_hosts_and_no_table_choose_by_path() -> None:
    assert codec_for("POST", "/v1/messages", "api.anthropic.com", GATEWAY) is anthropic_messages
    assert codec_for("POST", "/v1/responses", "other.example", GATEWAY) is openai_responses
    assert codec_for("POST", "/v1/messages", "llm.corp.example", None) is anthropic_messages
    assert codec_for("POST", "/v1/messages", None, GATEWAY) is anthropic_messages


def test_patterns_and_a_hosts_own_name_before_a_pattern() -> None:
    assert codec_for("POST", "/v1/messages", "us.anthropic-gw.example", GATEWAY) is anthropic_messages
    assert codec_for("POST", "/v1/chat/completions", "us.anthropic-gw.example", GATEWAY) is None
    own = "/v1beta/models/gemini-2.5-flash:generateContent"
    assert codec_for("POST", own, "eu.anthropic-gw.example", GATEWAY) is gemini  # its own name wins over the pattern


def test_a_named_hosts_other_endpoints_get_its_error_shape() -> None:
    assert error_codec_for("/v1/models", "llm.corp.example", GATEWAY) is openai_chat
    assert error_codec_for("/v1/models", "us.anthropic-gw.example", GATEWAY) is anthropic_messages
    assert error_codec_for("/v1/messages/count_tokens", "api.anthropic.com", GATEWAY) is anthropic_messages  # by path


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("llm.corp.example", ("llm.corp.example", None)),
        (" LLM.Corp.Example = openai ", ("llm.corp.example", "openai")),
        ("*.corp.example=bedrock-converse", ("*.corp.example", "bedrock-converse")),
        ("localhost=openai", ("localhost", "openai")),
    ],
)
def test_host_specs(spec: str, expected: tuple[str, str | None]) -> None:
    assert host_spec(spec) == expected


def test_an_unknown_codec_is_a_config_error_listing_the_names() -> None:
    with pytest.raises(ConfigError) as info:
        host_spec("llm.corp.example=openai-chat")
    message = str(info.value)
    assert "llm.corp.example: unknown codec 'openai-chat'" in message
    assert "did you mean 'openai" in message
    assert message.endswith("the codecs are " + ", ".join(codec_names()))
    assert codec_names() == tuple(sorted(c.NAME for c in REGISTERED))
    with pytest.raises(ConfigError, match="unknown codec 'claude'; the codecs are anthropic, bedrock"):
        host_spec("gw.example", "claude")


@pytest.mark.parametrize("spec", ["=openai", "llm.corp.example=", "a=b=c"])
def test_a_spec_that_is_not_a_host_is_refused(spec: str) -> None:
    with pytest.raises(ConfigError, match="give HOST or HOST=CODEC"):
        host_spec(spec)
