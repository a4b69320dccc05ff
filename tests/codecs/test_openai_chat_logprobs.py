"""Chat completions' token ``logprobs``: kept on the answer as ``tokenLogprobs`` (not compared), served back whole and streamed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from blackbox_mitm.codecs import openai_chat
from blackbox_mitm.codecs.base import CallIds
from blackbox_mitm.codecs.sse import parse_sse
from blackbox_mitm.errors import BlackboxUnsupportedError

CREATED_MS = 1_764_580_000_123
LOGPROBS = [
    {
        "token": "Hel",
        "logprob": -0.01,
        "bytes": [72, 101, 108],
        "top_logprobs": [{"token": "Hel", "logprob": -0.01, "bytes": [72, 101, 108]}],
    },
    {"token": "lo", "logprob": -0.2, "bytes": [108, 111], "top_logprobs": [{"token": "lo", "logprob": -0.2, "bytes": [108, 111]}]},
]


def body(value: Any) -> bytes:
    return json.dumps(value).encode()


def _completion(message: dict[str, Any], logprobs: Any) -> dict[str, Any]:
    choice = {"index": 0, "message": {"role": "assistant", **message}, "logprobs": logprobs, "finish_reason": "stop"}
    return {"id": "chatcmpl-native", "object": "chat.completion", "created": 1, "model": "gpt-4.1", "choices": [choice]}


def _decode(message: dict[str, Any], logprobs: Any) -> tuple[Any, dict[str, Any]]:
    ids = CallIds()
    request = openai_chat.decode_request(body({"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}], "logprobs": True}), ids)
    out: dict[str, Any] = dict(openai_chat.decode_response(body(_completion(message, logprobs)), ids, request))
    return request, out


def test_logprobs_are_kept_on_the_answer_and_served_back_whole() -> None:
    request, out = _decode({"content": "Hello"}, {"content": LOGPROBS, "refusal": None})
    assert out == {"type": "final_answer", "text": "Hello", "tokenLogprobs": LOGPROBS}
    served = openai_chat.encode_response(out, request=request, ids=CallIds(), created_ms=CREATED_MS)
    assert served["choices"][0]["logprobs"] == {"content": LOGPROBS, "refusal": None}


def test_a_refusals_logprobs_are_served_on_the_refusal() -> None:
    request, out = _decode({"content": None, "refusal": "Hello"}, {"content": None, "refusal": LOGPROBS})
    assert out["tokenLogprobs"] == LOGPROBS
    served = openai_chat.encode_response(out, request=request, ids=CallIds(), created_ms=CREATED_MS)
    assert served["choices"][0]["logprobs"] == {"content": None, "refusal": LOGPROBS}


def test_a_stream_serves_one_chunk_per_recorded_token_and_adds_up_to_the_same_answer() -> None:
    request, out = _decode({"content": "Hello"}, {"content": LOGPROBS, "refusal": None})
    events = parse_sse(openai_chat.encode_stream(out, request=request, ids=CallIds(), created_ms=CREATED_MS))
    chunks = [json.loads(e.data) for e in events if e.data != "[DONE]"]
    with_lp = [c["choices"][0] for c in chunks if c["choices"][0]["logprobs"]]
    assert [(c["delta"]["content"], c["logprobs"]["content"]) for c in with_lp] == [("Hel", [LOGPROBS[0]]), ("lo", [LOGPROBS[1]])]
    again = openai_chat.decode_response(openai_chat.aggregate_stream(events), CallIds(), request)
    assert again == out


def test_logprobs_that_do_not_spell_the_text_ride_on_the_first_piece() -> None:
    request, out = _decode({"content": "Goodbye"}, {"content": LOGPROBS, "refusal": None})
    events = parse_sse(openai_chat.encode_stream(out, request=request, ids=CallIds(), created_ms=CREATED_MS))
    again = openai_chat.decode_response(openai_chat.aggregate_stream(events), CallIds(), request)
    assert again == out


def test_no_or_empty_logprobs_keep_the_answer_as_before() -> None:
    assert _decode({"content": "Hi"}, None)[1] == {"type": "final_answer", "text": "Hi"}
    assert _decode({"content": "Hi"}, {"content": [], "refusal": None})[1] == {"type": "final_answer", "text": "Hi"}


def test_malformed_logprobs_name_the_field() -> None:
    with pytest.raises(BlackboxUnsupportedError, match=r"choices\[0\]\.logprobs"):
        _decode({"content": "Hi"}, {"content": "nope"})
