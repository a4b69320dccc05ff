"""The fake provider's own tests: the real `openai` and `anthropic` SDKs pointed straight at it (no proxy)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))

from fake_provider import FakeProvider  # noqa: E402

OPENAI_TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
]
ANTHROPIC_TOOLS: list[Any] = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
MODEL_A = "claude-sonnet-4-6"


@pytest.fixture
def weather() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


def oai(provider: FakeProvider, **kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{provider.url}/v1", api_key="sk-test", **kwargs)


def ant(provider: FakeProvider, **kwargs: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=provider.url, api_key="sk-ant-test", **kwargs)


def user(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


def raw_post(provider: FakeProvider, path: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """A plain HTTP request, to see the bytes the SDKs hide (SSE framing, content encoding)."""
    conn = http.client.HTTPConnection("127.0.0.1", provider.port, timeout=10)
    try:
        conn.request("POST", path, body=json.dumps(body), headers={"content-type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def sse_data(body: bytes) -> list[str]:
    return [line[len("data: ") :] for line in body.decode().split("\n") if line.startswith("data: ")]


# ---------------------------------------------------------------- scripts


def test_script_answers_in_order_across_providers_and_records_requests() -> None:
    with FakeProvider([{"text": "first"}, {"text": "second"}]) as provider:
        first = oai(provider).chat.completions.create(model="gpt-4.1", messages=user("one"))
        second = ant(provider).messages.create(model=MODEL_A, max_tokens=64, messages=user("two"))
    assert first.choices[0].message.content == "first"
    assert first.choices[0].finish_reason == "stop"
    assert first.id.startswith("chatcmpl-") and first.object == "chat.completion" and first.system_fingerprint
    assert first.usage is not None and first.usage.total_tokens > 0
    assert [b.text for b in second.content if b.type == "text"] == ["second"]
    assert second.id.startswith("msg_") and second.stop_reason == "end_turn" and second.stop_sequence is None

    req = provider.requests[0]
    assert (req["method"], req["path"], req["provider"]) == ("POST", "/v1/chat/completions", "openai")
    assert req["headers"]["authorization"] == "Bearer sk-test"
    assert req["body"]["messages"] == user("one")
    assert provider.requests[1]["path"] == "/v1/messages"
    assert provider.requests[1]["headers"]["anthropic-version"]
    assert provider.requests[1]["body"]["max_tokens"] == 64


def test_scripted_tool_calls_with_narration_have_random_ids() -> None:
    call: dict[str, Any] = {
        "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_weather", "arguments": {"city": "Lyon"}}]
    }
    script = [call | {"text": "Checking."}, call, call]
    with FakeProvider(script) as provider:
        a: Any = oai(provider).chat.completions.create(model="gpt-4.1", messages=user("x"), tools=OPENAI_TOOLS).choices[0]
        b: Any = oai(provider).chat.completions.create(model="gpt-4.1", messages=user("x"), tools=OPENAI_TOOLS).choices[0]
        c = ant(provider).messages.create(model=MODEL_A, max_tokens=64, messages=user("x"), tools=ANTHROPIC_TOOLS)
    assert a.finish_reason == "tool_calls" and a.message.content == "Checking."
    assert [(t.function.name, json.loads(t.function.arguments)) for t in a.message.tool_calls or []] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Lyon"}),
    ]
    assert b.message.content is None
    ids = [t.id for t in (a.message.tool_calls or []) + (b.message.tool_calls or [])]
    assert all(i.startswith("call_") for i in ids) and len(set(ids)) == 4
    assert c.stop_reason == "tool_use"
    assert [(u.name, u.input) for u in c.content if u.type == "tool_use"] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Lyon"}),
    ]
    assert all(u.id.startswith("toolu_") for u in c.content if u.type == "tool_use")


def test_stop_length_and_refusal() -> None:
    script = [
        {"text": "cut", "stop": "length"},
        {"text": "cut", "stop": "length"},
        {"text": "I can't help.", "stop": "refusal"},
        {"text": "No.", "stop": "refusal"},
    ]
    with FakeProvider(script) as provider:
        length_o = oai(provider).chat.completions.create(model="gpt-4.1", messages=user("x")).choices[0]
        length_a = ant(provider).messages.create(model=MODEL_A, max_tokens=1, messages=user("x"))
        refusal_o = oai(provider).chat.completions.create(model="gpt-4.1", messages=user("x")).choices[0]
        refusal_a = ant(provider).messages.create(model=MODEL_A, max_tokens=64, messages=user("x"))
    assert length_o.finish_reason == "length" and length_o.message.content == "cut"
    assert length_a.stop_reason == "max_tokens"
    assert refusal_o.message.content is None and refusal_o.message.refusal == "I can't help."
    assert refusal_a.stop_reason == "refusal"


def test_raw_body_is_returned_exactly() -> None:
    raw = {
        "id": "chatcmpl-fixed",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4.1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "content_filter"}],
    }
    with FakeProvider([{"raw": raw}]) as provider:
        resp = oai(provider).chat.completions.with_raw_response.create(model="gpt-4.1", messages=user("x"))
    assert resp.http_response.json() == raw
    assert resp.parse().choices[0].finish_reason == "content_filter"


def test_raw_events_are_framed_the_providers_way() -> None:
    events: list[Any] = [{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}]
    with FakeProvider([{"raw_events": events}]) as provider:
        status, headers, body = raw_post(provider, "/v1/messages", {"model": "m", "max_tokens": 1, "messages": user("x"), "stream": True})
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    assert body.decode() == 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'


# ---------------------------------------------------------------- errors, retries, 404


def test_errors_are_retried_by_the_sdk_then_the_script_moves_on() -> None:
    with FakeProvider([{"status": 429, "times": 2}, {"text": "finally"}, {"status": 529}, {"text": "again"}]) as provider:
        answer = oai(provider).chat.completions.create(model="gpt-4.1", messages=user("x"))
        message = ant(provider).messages.create(model=MODEL_A, max_tokens=64, messages=user("x"))
    assert answer.choices[0].message.content == "finally"
    assert [b.text for b in message.content if b.type == "text"] == ["again"]
    retry_counts = [r["headers"]["x-stainless-retry-count"] for r in provider.requests]
    assert retry_counts == ["0", "1", "2", "0", "1"]


def test_error_shapes_and_request_ids() -> None:
    with FakeProvider([{"status": 429}, {"status": 400, "message": "bad field"}, {"status": 529}]) as provider:
        with pytest.raises(openai.RateLimitError) as rate:
            oai(provider, max_retries=0).chat.completions.create(model="gpt-4.1", messages=user("x"))
        with pytest.raises(openai.BadRequestError) as bad:
            oai(provider).chat.completions.create(model="gpt-4.1", messages=user("x"))  # 400: never retried
        with pytest.raises(anthropic.OverloadedError) as overloaded:
            ant(provider, max_retries=0).messages.create(model=MODEL_A, max_tokens=64, messages=user("x"))
    assert rate.value.code == "rate_limit_exceeded" and rate.value.type == "requests"
    assert rate.value.request_id and rate.value.request_id.startswith("req_")
    assert bad.value.message == "Error code: 400 - bad field"
    body: Any = overloaded.value.body
    assert body == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": body["request_id"]}
    assert body["request_id"].startswith("req_")
    assert overloaded.value.request_id and overloaded.value.request_id.startswith("req_")
    assert len(provider.requests) == 3


def test_past_the_end_of_the_script_is_a_clear_non_retried_500() -> None:
    with FakeProvider([{"text": "only"}]) as provider:
        oai(provider).chat.completions.create(model="gpt-4.1", messages=user("x"))
        with pytest.raises(openai.InternalServerError, match="script is used up"):
            oai(provider).chat.completions.create(model="gpt-4.1", messages=user("x"))
    assert len(provider.requests) == 2


def test_other_paths_get_404_in_the_providers_shape_and_are_recorded() -> None:
    with FakeProvider([{"text": "kept for the model call"}]) as provider:
        with pytest.raises(openai.NotFoundError) as missing:
            oai(provider).models.list()
        status, headers, body = raw_post(provider, "/v1/messages/count_tokens?beta=true", {"x": 1}, {"anthropic-version": "2023-06-01"})
        status2, _, body2 = raw_post(provider, "/api/claude_code/settings", {}, {"x-api-key": "k"})
        answer = oai(provider).chat.completions.create(model="gpt-4.1", messages=user("x"))
    assert missing.value.status_code == 404 and missing.value.code == "unknown_url"
    assert status == 404 and json.loads(body)["type"] == "error" and json.loads(body)["error"]["type"] == "not_found_error"
    assert headers["request-id"].startswith("req_")
    assert status2 == 404 and json.loads(body2)["error"]["type"] == "not_found_error"
    assert answer.choices[0].message.content == "kept for the model call"
    assert [(r["method"], r["path"], r["provider"]) for r in provider.requests[:3]] == [
        ("GET", "/v1/models", None),
        ("POST", "/v1/messages/count_tokens?beta=true", None),
        ("POST", "/api/claude_code/settings", None),
    ]


def test_invalid_requests_get_400_without_consuming_the_script() -> None:
    with FakeProvider([{"text": "ok"}]) as provider:
        status, _, body = raw_post(provider, "/v1/messages", {"model": "m", "messages": user("x")})
        answer = ant(provider).messages.create(model=MODEL_A, max_tokens=8, messages=user("x"))
    assert status == 400 and json.loads(body)["error"] == {"type": "invalid_request_error", "message": "max_tokens: Field required"}
    assert answer.content[0].type == "text" and answer.content[0].text == "ok"


# ---------------------------------------------------------------- the rule-based weather model


def test_weather_model_single_call_then_summary_openai(weather: FakeProvider) -> None:
    client = oai(weather)
    messages: list[Any] = user("What's the weather in Paris?")
    first: Any = client.chat.completions.create(model="gpt-4.1", messages=messages, tools=OPENAI_TOOLS).choices[0].message
    assert first.content is None
    assert [(t.function.name, json.loads(t.function.arguments)) for t in first.tool_calls or []] == [("get_weather", {"city": "Paris"})]
    call = (first.tool_calls or [])[0]
    messages += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call.id, "type": "function", "function": {"name": "get_weather", "arguments": call.function.arguments}}],
        },
        {"role": "tool", "tool_call_id": call.id, "content": '{"forecast":"cloudy","celsius":18}'},
    ]
    final = client.chat.completions.create(model="gpt-4.1", messages=messages, tools=OPENAI_TOOLS).choices[0]
    assert final.message.content == "Paris: cloudy, 18°C." and final.finish_reason == "stop"


def test_weather_model_parallel_calls_in_order_of_mention_anthropic(weather: FakeProvider) -> None:
    client = ant(weather)
    messages: list[Any] = user("Compare Lyon with paris and TOKYO please")
    first = client.messages.create(model=MODEL_A, max_tokens=256, messages=messages, tools=ANTHROPIC_TOOLS)
    assert first.content[0].type == "text" and first.content[0].text == "Let me check the weather."
    uses = [b for b in first.content if b.type == "tool_use"]
    assert [u.input for u in uses] == [{"city": "Lyon"}, {"city": "Paris"}, {"city": "Tokyo"}]
    results = {"Lyon": {"forecast": "rain", "celsius": 15}, "Paris": {"forecast": "sun", "celsius": 24}, "Tokyo": {"error": "no data"}}
    messages += [
        {
            "role": "assistant",
            "content": [b.model_dump(exclude_none=True, include={"type", "text", "id", "name", "input"}) for b in first.content],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": u.id, "content": json.dumps(results[str(u.input["city"])])} for u in uses],
        },
    ]
    final = client.messages.create(model=MODEL_A, max_tokens=256, messages=messages, tools=ANTHROPIC_TOOLS)
    assert final.stop_reason == "end_turn"
    assert final.content[0].type == "text" and final.content[0].text == "Lyon: rain, 15°C. Paris: sun, 24°C. Tokyo: no data."


def test_weather_model_forked_result_changes_the_answer(weather: FakeProvider) -> None:
    def final_for(result: str) -> str | None:
        messages = [
            *user("Weather in Paris?"),
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": result},
        ]
        return oai(weather).chat.completions.create(model="gpt-4.1", messages=messages, tools=OPENAI_TOOLS).choices[0].message.content

    assert final_for('{"forecast":"cloudy","celsius":18}') == "Paris: cloudy, 18°C."
    assert final_for('{"forecast": "sun", "celsius": 24}') == "Paris: sun, 24°C."


def test_weather_model_echoes_without_tools_or_cities(weather: FakeProvider) -> None:
    plain = oai(weather).chat.completions.create(model="gpt-4.1", messages=user("Weather in Paris?")).choices[0].message
    no_city = ant(weather).messages.create(model=MODEL_A, max_tokens=64, messages=user("Hello there"), tools=ANTHROPIC_TOOLS)
    assert plain.content == "Echo: Weather in Paris?" and not plain.tool_calls
    assert no_city.content[0].type == "text" and no_city.content[0].text == "Echo: Hello there"


# ---------------------------------------------------------------- streaming


def test_openai_stream_helper_accumulates_text_and_tool_calls(weather: FakeProvider) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    both = {
        "text": "Let me look.",
        "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_weather", "arguments": {"city": "Lyon"}}],
    }
    with FakeProvider([{"text": text}, both]) as provider:
        client = oai(provider)
        with client.chat.completions.stream(model="gpt-4.1", messages=user("x"), stream_options={"include_usage": True}) as stream:
            deltas = [e.delta for e in stream if e.type == "content.delta"]
            final = stream.get_final_completion()
        with client.chat.completions.stream(model="gpt-4.1", messages=user("x"), tools=OPENAI_TOOLS) as stream:
            arg_deltas = [e for e in stream if e.type == "tool_calls.function.arguments.delta"]
            tools_final = stream.get_final_completion()
    assert len(deltas) > 1 and "".join(deltas) == text
    assert final.choices[0].message.content == text and final.usage is not None and final.usage.total_tokens > 0
    message = tools_final.choices[0].message
    assert message.content == "Let me look." and tools_final.choices[0].finish_reason == "tool_calls"
    calls = message.tool_calls or []
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Lyon"}),
    ]
    assert all(c.id.startswith("call_") and c.id.count("call_") == 1 for c in calls)  # id sent once per call
    assert len(arg_deltas) >= 4  # arguments arrive in 2+ fragments per call


def test_openai_sse_bytes() -> None:
    answer = {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
    body = {"model": "gpt-4.1", "messages": user("x"), "stream": True}
    with FakeProvider([answer, answer]) as provider:
        _, headers, plain = raw_post(provider, "/v1/chat/completions", body)
        _, _, with_usage = raw_post(
            provider, "/v1/chat/completions", body | {"stream_options": {"include_usage": True, "include_obfuscation": False}}
        )
    assert headers["content-type"].startswith("text/event-stream") and headers["transfer-encoding"] == "chunked"
    assert b"event:" not in plain and plain.endswith(b"data: [DONE]\n\n")
    chunks = [json.loads(d) for d in sse_data(plain)[:-1]]
    assert len({c["id"] for c in chunks}) == 1 and all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant" and all("role" not in c["choices"][0]["delta"] for c in chunks[1:])
    tool_deltas = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks if "tool_calls" in c["choices"][0]["delta"]]
    assert "id" in tool_deltas[0] and all("id" not in d and "name" not in d.get("function", {}) for d in tool_deltas[1:])
    assert len(tool_deltas) >= 3 and json.loads("".join(d["function"]["arguments"] for d in tool_deltas)) == {"city": "Paris"}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls" and "usage" not in chunks[-1]
    usage_chunks = [json.loads(d) for d in sse_data(with_usage)[:-1]]
    assert usage_chunks[-1]["choices"] == [] and usage_chunks[-1]["usage"]["total_tokens"] > 0
    assert all(c["usage"] is None and "obfuscation" not in c for c in usage_chunks[:-1])


def test_anthropic_stream_helper_and_sse_bytes() -> None:
    answer = {"text": "Checking both cities now.", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
    with FakeProvider([answer, answer]) as provider:
        with ant(provider).messages.stream(model=MODEL_A, max_tokens=64, messages=user("x"), tools=ANTHROPIC_TOOLS) as stream:
            texts = list(stream.text_stream)
            final = stream.get_final_message()
        _, _, body = raw_post(provider, "/v1/messages", {"model": MODEL_A, "max_tokens": 64, "messages": user("x"), "stream": True})
    assert len(texts) > 1 and "".join(texts) == "Checking both cities now."
    assert final.stop_reason == "tool_use"
    assert [(b.type, getattr(b, "input", None)) for b in final.content] == [("text", None), ("tool_use", {"city": "Paris"})]
    frames = [f for f in body.decode().split("\n\n") if f]
    names = [f.split("\n")[0].removeprefix("event: ") for f in frames]
    assert all(f.startswith("event: ") for f in frames)
    assert names[0] == "message_start" and names[1] == "ping" and names[-2:] == ["message_delta", "message_stop"]
    json_parts = [json.loads(f.split("\n")[1][6:])["delta"]["partial_json"] for f in frames if "input_json_delta" in f]
    assert len([p for p in json_parts if p]) >= 2 and json.loads("".join(json_parts)) == {"city": "Paris"}


def test_gzip_streams_are_compressed_incrementally_and_sdks_decode_them() -> None:
    body = {"model": "gpt-4.1", "messages": user("x"), "stream": True}
    with FakeProvider(
        [{"text": "zipped words here"}, {"text": "plain"}, {"text": "sdk sees this"}, {"text": "and this"}], gzip_streams=True
    ) as provider:
        _, headers, zipped = raw_post(provider, "/v1/chat/completions", body, {"accept-encoding": "gzip"})
        _, plain_headers, plain = raw_post(provider, "/v1/chat/completions", body, {"accept-encoding": "identity"})
        with oai(provider).chat.completions.stream(model="gpt-4.1", messages=user("x")) as stream:
            oai_text = stream.get_final_completion().choices[0].message.content
        with ant(provider).messages.stream(model=MODEL_A, max_tokens=64, messages=user("x")) as astream:
            ant_text = astream.get_final_text()
    assert headers["content-encoding"] == "gzip" and zipped[:2] == b"\x1f\x8b"
    decoded = zlib.decompressobj(wbits=47).decompress(zipped).decode()
    assert decoded.endswith("data: [DONE]\n\n") and "zipped" in decoded
    assert "content-encoding" not in plain_headers and plain.endswith(b"data: [DONE]\n\n")
    assert oai_text == "sdk sees this" and ant_text == "and this"
    assert "gzip" in provider.requests[2]["headers"]["accept-encoding"]


def test_stream_cut_drops_the_connection_mid_stream() -> None:
    with FakeProvider([{"stream_cut": True, "text": "one two three four five six"}]) as provider:
        client = oai(provider, max_retries=0)
        received = []
        with pytest.raises(openai.APIConnectionError):
            for chunk in client.chat.completions.create(model="gpt-4.1", messages=user("x"), stream=True):
                received += [c.delta.content for c in chunk.choices if c.delta.content]
    assert received and "".join(received) != "one two three four five six"


def test_delay_ms_and_stream_delay() -> None:
    with FakeProvider([{"text": "slow", "delay_ms": 300}, {"text": "a b c d e f"}], stream_delay_ms=50) as provider:
        start = time.monotonic()
        oai(provider).chat.completions.create(model="gpt-4.1", messages=user("x"))
        assert time.monotonic() - start >= 0.3
        start = time.monotonic()
        with oai(provider).chat.completions.stream(model="gpt-4.1", messages=user("x")) as stream:
            stream.get_final_completion()
        assert time.monotonic() - start >= 0.2  # 6 events, 50 ms apart


# ---------------------------------------------------------------- connections, lifecycle, CLI


def test_connections_are_counted(weather: FakeProvider) -> None:
    assert weather.connections == 0
    client = oai(weather)
    client.chat.completions.create(model="gpt-4.1", messages=user("a"))
    client.chat.completions.create(model="gpt-4.1", messages=user("b"))
    assert weather.connections == 1  # keep-alive: one connection, two requests
    oai(weather).chat.completions.create(model="gpt-4.1", messages=user("c"))
    assert weather.connections == 2 and len(weather.requests) == 3


def test_stop_closes_the_listener_and_pooled_connections() -> None:
    provider = FakeProvider([{"text": "a"}, {"text": "never"}]).start()
    client = oai(provider, max_retries=0)
    client.chat.completions.create(model="gpt-4.1", messages=user("x"))
    provider.stop()
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="gpt-4.1", messages=user("x"))
    assert len(provider.requests) == 1


def test_cli_serves_a_script_logs_requests_and_stops_on_sigterm(tmp_path: Path) -> None:
    script, log = tmp_path / "script.json", tmp_path / "requests.jsonl"
    script.write_text(json.dumps([{"text": "from the CLI"}]))
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "fake_provider.py"), "--script", str(script), "--log", str(log)],
        stdout=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("fake provider listening on http://127.0.0.1:")
        url = line.rsplit(" ", 1)[1]
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-test")
        assert client.chat.completions.create(model="gpt-4.1", messages=user("hi")).choices[0].message.content == "from the CLI"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0  # a bound for a hang, not a timing
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(logged) == 1 and logged[0]["body"]["messages"] == user("hi") and logged[0]["path"] == "/v1/chat/completions"
