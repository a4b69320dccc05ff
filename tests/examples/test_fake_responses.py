"""The fake Responses API (examples/fake_responses.py) speaks the wire format the real SDK reads, over real HTTP."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from fake_responses import FakeResponses, ResponsesModel
from openai.types.responses import ResponseInputItemParam

TOOLS: list[Any] = [
    {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeResponses]:
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with FakeResponses() as server:
        yield server


def client(fake: FakeResponses) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.url + "/v1", api_key="k", max_retries=0)


def test_the_weather_model_calls_in_parallel_then_summarises_a_chained_round(fake: FakeResponses) -> None:
    c = client(fake)
    first = c.responses.create(model="gpt-4.1", input="Weather in Paris and Lyon?", tools=TOOLS)
    calls = [i for i in first.output if i.type == "function_call"]
    assert [json.loads(i.arguments) for i in calls] == [{"city": "Paris"}, {"city": "Lyon"}]
    assert first.id.startswith("resp_") and all(i.call_id.startswith("call_") for i in calls)
    outputs: list[ResponseInputItemParam] = [
        {"type": "function_call_output", "call_id": i.call_id, "output": '{"forecast": "sun", "celsius": 20}'} for i in calls
    ]
    second = c.responses.create(model="gpt-4.1", previous_response_id=first.id, input=outputs, tools=TOOLS)
    assert second.output_text == "Paris: sun, 20°C. Lyon: sun, 20°C."
    assert second.usage is not None and second.usage.total_tokens > 0


def test_an_unknown_previous_response_id_is_the_apis_400(fake: FakeResponses) -> None:
    with pytest.raises(openai.BadRequestError, match="Previous response with id 'resp_nope' not found"):
        client(fake).responses.create(model="gpt-4.1", previous_response_id="resp_nope", input="hi")


def test_a_stream_is_the_full_event_sequence_with_obfuscation(fake: FakeResponses) -> None:
    with client(fake).responses.stream(model="gpt-4.1", input="hello there") as stream:
        events = list(stream)
        final = stream.get_final_response()
    assert final.output_text == "Echo: hello there"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert sum(e.type == "response.output_text.delta" for e in events) > 1
    raw = ResponsesModel().respond({"model": "m", "input": "hello there", "stream": True}).events
    assert all(e.get("obfuscation") for e in raw if e["type"].endswith(".delta"))  # the pad the API adds by default
    quiet = {"model": "m", "input": "hello there", "stream": True, "stream_options": {"include_obfuscation": False}}
    assert not any("obfuscation" in e for e in ResponsesModel().respond(quiet).events)


def test_custom_tools_get_custom_tool_calls_and_store_false_is_kept_only_per_connection() -> None:
    model = ResponsesModel([{"tool_calls": [{"name": "exec", "input": "ls"}]}, {"text": "done"}])
    body = {"model": "m", "store": False, "input": "list files", "tools": [{"type": "custom", "name": "exec"}]}
    socket_store: dict[str, Any] = {}
    reply = model.respond(body, connection_store=socket_store)
    [item] = reply.body["output"]
    assert (item["type"], item["input"]) == ("custom_tool_call", "ls") and item["id"].startswith("ctc_")
    assert reply.body["id"] in socket_store and reply.body["id"] not in model.store
    follow = {
        "model": "m",
        "previous_response_id": reply.body["id"],
        "input": [{"type": "custom_tool_call_output", "call_id": item["call_id"], "output": "a"}],
    }
    assert model.respond(follow).status == 400  # another connection cannot continue it
    assert model.respond(follow, connection_store=socket_store).body["output"][0]["content"][0]["text"] == "done"


def test_other_paths_are_the_apis_404(fake: FakeResponses) -> None:
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(urllib.request.Request(fake.url + "/v1/models"), timeout=60)
    assert err.value.code == 404 and "error" in json.loads(err.value.read())
