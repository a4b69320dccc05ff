"""A refusal names the offending value, not only the field (and both fields where there are two)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from blackbox_mitm.codecs import anthropic_messages, openai_chat
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.errors import BlackboxUnsupportedError

OPENAI_REQUEST = DecodedRequest("openai", {"messages": [], "tools": []})
ANTHROPIC_REQUEST = DecodedRequest("anthropic", {"messages": [], "tools": []})


def _chat_response(finish: str, **message: Any) -> bytes:
    msg = {"role": "assistant", "content": "ok", **message}
    return json.dumps(
        {"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message": msg, "finish_reason": finish}]}
    ).encode()


def _message(stop: str) -> bytes:
    return json.dumps(
        {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "ok"}], "stop_reason": stop}
    ).encode()


@pytest.mark.parametrize("finish", ["content_filter", "function_call", "weird_new_reason"])
def test_an_openai_finish_reason_is_named(finish: str) -> None:
    with pytest.raises(BlackboxUnsupportedError) as err:
        openai_chat.decode_response(_chat_response(finish), CallIds(), OPENAI_REQUEST)
    assert err.value.field == "choices[0].finish_reason"
    assert f'(it was "{finish}")' in str(err.value)


@pytest.mark.parametrize("stop", ["stop_sequence", "model_context_window_exceeded", "compaction", "refusal"])
def test_an_anthropic_stop_reason_is_named(stop: str) -> None:
    with pytest.raises(BlackboxUnsupportedError) as err:
        anthropic_messages.decode_response(_message(stop), CallIds(), ANTHROPIC_REQUEST)
    assert err.value.field == "stop_reason"
    assert f'(it was "{stop}")' in str(err.value)


def test_both_token_limits_are_named_with_their_values() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 100, "max_completion_tokens": 200}
    with pytest.raises(BlackboxUnsupportedError) as err:
        openai_chat.decode_request(json.dumps(body).encode(), CallIds())
    message = str(err.value)
    assert '"max_tokens": 100' in message and '"max_completion_tokens": 200' in message


def test_a_long_value_is_shortened() -> None:
    with pytest.raises(BlackboxUnsupportedError) as err:
        openai_chat.decode_response(_chat_response("x" * 500), CallIds(), OPENAI_REQUEST)
    assert err.value.value is not None and len(err.value.value) <= 80 and err.value.value.endswith("…")
