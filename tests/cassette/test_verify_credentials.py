"""`verify` flags credentials in every scheme a request carries one in, and leaves look-alike prose alone."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from cassette_builders import weather_trace

from blackbox_mitm.cassette import Trace
from blackbox_mitm.cassette.verify import Problem
from blackbox_mitm.codecs.verified import verify_trace

KEY = "Zk3vT9bLm2Rk7pWz4Nd8HsYc1JfGa6Ue"  # 32 characters of a key's randomness
BASIC = base64.b64encode(b"deploy-bot:hunter2-but-longer").decode()


def _tool_result(result: Any) -> Trace:
    trace = weather_trace()
    trace.append("tool_result", {"toolCallId": "call-0", "toolName": "http", "result": result}, timestamp=trace.steps[-1].timestamp + 1)
    return trace


def _credentials(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.code == "credential"]


@pytest.mark.parametrize(
    ("result", "where", "shown"),
    [
        ({"headers": {"Authorization": f"Token {KEY}"}}, "payload.result.headers.Authorization", "token Zk3v…"),
        ({"headers": {"authorization": f"token {KEY}"}}, "payload.result.headers.authorization", "token Zk3v…"),
        ({"headers": {"Authorization": f"Basic {BASIC}"}}, "payload.result.headers.Authorization", "basic ZGVw…"),
        ({"log": f"curl -H 'x-goog-api-key: {KEY}' https://example.test"}, "payload.result.log", "api-key Zk3v…"),
        ({"log": f'{{"x-api-key": "{KEY}"}}'}, "payload.result.log", "api-key Zk3v…"),
        ({"url": f"https://generativelanguage.googleapis.com/v1/models?key={KEY}"}, "payload.result.url", "key Zk3v…"),
        ({"url": f"https://api.example.test/v1/chat?model=m&api_key={KEY}"}, "payload.result.url", "key Zk3v…"),
        (f"GET /v1?alt=sse&key={KEY} HTTP/1.1", "payload.result", "key Zk3v…"),
    ],
    ids=["Token", "token", "Basic", "x-goog-api-key", "x-api-key in JSON text", "?key=", "&api_key=", "request line"],
)
def test_a_credential_in_another_scheme_is_flagged(result: Any, where: str, shown: str) -> None:
    problems = _credentials(verify_trace(_tool_result(result)))
    assert [p.where for p in problems] == [where]
    assert shown in problems[0].reason
    assert KEY not in problems[0].reason and BASIC not in problems[0].reason  # never quoted whole


@pytest.mark.parametrize(
    "text",
    [
        "the token count is 12345 and the token limit 4096",
        "Token usage: 1532 input tokens",
        "Basic understanding of the API is assumed.",
        "basic dGVzdA== is base64 of a word without a colon",
        "config = dict(key=value_from_the_environment_here)",
        "d[key=lambda x: x]; sorted(items, key=operator.itemgetter(1))",
        "send the x-api-key header with your key",
        "https://example.test/search?key=short",
        "https://example.test/search?key=aaaaaaaaaaaaaaaaaaaaaaaa",
    ],
)
def test_look_alike_text_is_not_a_credential(text: str) -> None:
    assert _credentials(verify_trace(_tool_result({"text": text}))) == []


def test_a_credential_in_a_message_text_is_flagged() -> None:
    trace = weather_trace()
    content = f"my key is in this URL: https://x.test/v1?key={KEY}"
    trace.append("model_input", {"messages": [{"role": "user", "content": content}], "tools": []}, timestamp=trace.steps[-1].timestamp + 1)
    problems = _credentials(verify_trace(trace))
    assert [p.where for p in problems] == ["payload.messages[0].content"]
