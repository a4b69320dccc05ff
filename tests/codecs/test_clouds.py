"""The clouds as transports of the existing codecs: Azure's content-filter results, Vertex's Gemini paths,
Bedrock's and Vertex's Anthropic bodies giving the steps Anthropic's API gives."""

from __future__ import annotations

import json
from typing import Any

import pytest

from blackbox_mitm.codecs import anthropic_messages, bedrock, codec_for, gemini, openai_chat, vertex_anthropic
from blackbox_mitm.codecs.base import CallIds, SseEvent
from blackbox_mitm.errors import BlackboxUnsupportedError

NOT_FILTERED = {"hate": {"filtered": False, "severity": "safe"}, "violence": {"filtered": False, "severity": "safe"}}
AZURE = {
    "id": "chatcmpl-9x",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4.1-2025-04-14",
    "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": NOT_FILTERED}],
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Sunny."}, "content_filter_results": NOT_FILTERED}
    ],
}
REQUEST = json.dumps({"model": "gpt-4.1", "messages": [{"role": "user", "content": "Weather?"}]}).encode()


def _decode(body: dict[str, Any]) -> Any:
    ids = CallIds()
    return openai_chat.decode_response(json.dumps(body).encode(), ids, openai_chat.decode_request(REQUEST, ids))


def test_azure_filter_results_that_flag_nothing_are_dropped() -> None:
    assert _decode(AZURE) == {"type": "final_answer", "text": "Sunny."}


@pytest.mark.parametrize("where", ["prompt", "choice"])
def test_azure_filter_results_that_flag_something_are_refused(where: str) -> None:
    flagged = json.loads(json.dumps(AZURE))
    target = (
        flagged["prompt_filter_results"][0]["content_filter_results"]
        if where == "prompt"
        else flagged["choices"][0]["content_filter_results"]
    )
    target["protected_material_text"] = {"filtered": False, "detected": True}
    with pytest.raises(BlackboxUnsupportedError, match="could not give the annotations back"):
        _decode(flagged)


def test_an_azure_stream_with_its_filter_only_chunks_adds_up_and_keeps_what_flags() -> None:
    head = {"choices": [], "created": 0, "id": "", "model": "", "object": "", "prompt_filter_results": AZURE["prompt_filter_results"]}
    delta = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Sunny."}, "finish_reason": None}]}  # fmt: skip
    stop = {**delta, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    flag = {**delta, "choices": [{"index": 0, "delta": {}, "finish_reason": None, "content_filter_results": {"self_harm": {"filtered": True, "severity": "high"}}}]}  # fmt: skip
    events = [SseEvent(None, json.dumps(c)) for c in (head, delta, stop)] + [SseEvent(None, "[DONE]")]
    ids = CallIds()
    request = openai_chat.decode_request(REQUEST, ids)
    assert openai_chat.decode_response(openai_chat.aggregate_stream(events), ids, request) == {"type": "final_answer", "text": "Sunny."}
    flagged = [*events[:2], SseEvent(None, json.dumps(flag)), *events[2:]]
    with pytest.raises(BlackboxUnsupportedError, match="filtered"):
        openai_chat.decode_response(openai_chat.aggregate_stream(flagged), ids, request)


@pytest.mark.parametrize(
    "path",
    [
        "/v1/projects/acme-417203/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent",
        "/v1beta1/projects/acme-417203/locations/global/publishers/google/models/gemini-2.5-flash:streamGenerateContent",
        "/v1beta1/publishers/google/models/gemini-2.5-flash:generateContent",
    ],
)
def test_vertex_gemini_paths_are_the_gemini_codec_and_keep_no_project_or_location(path: str) -> None:
    assert codec_for("POST", path) is gemini
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}).encode()
    decoded = gemini.decode_request(body, CallIds(), path=path, query="alt=sse")  # google-genai streams with alt=sse on Vertex too
    assert decoded.model_input["model"] == "gemini-2.5-flash"
    assert "acme" not in json.dumps(decoded.model_input) and "us-central1" not in json.dumps(decoded.model_input)


MESSAGES = {"max_tokens": 64, "system": "Be brief.", "messages": [{"role": "user", "content": "Hi"}], "temperature": 0}


@pytest.mark.parametrize("stream", [False, True])
def test_bedrock_and_vertex_bodies_give_the_steps_anthropics_api_gives(stream: bool) -> None:
    model = "claude-sonnet-4-6"
    on_anthropic = anthropic_messages.decode_request(json.dumps({**MESSAGES, "model": model, "stream": stream}).encode(), CallIds())
    op = "invoke-with-response-stream" if stream else "invoke"
    body = {**MESSAGES, "anthropic_version": "bedrock-2023-05-31", "anthropic_beta": ["context-1m-2025-08-07"]}
    on_bedrock = bedrock.decode_request(json.dumps(body).encode(), CallIds(), path=f"/model/{model}/{op}")
    vertex_path = f"/v1/projects/p/locations/us-east5/publishers/anthropic/models/{model}:{'streamRawPredict' if stream else 'rawPredict'}"
    body = {**MESSAGES, "anthropic_version": "vertex-2023-10-16", "stream": stream}
    on_vertex = vertex_anthropic.decode_request(json.dumps(body).encode(), CallIds(), path=vertex_path)
    assert on_bedrock.model_input == on_anthropic.model_input == on_vertex.model_input
    assert on_bedrock.stream is on_vertex.stream is stream
    assert codec_for("POST", f"/model/{model}/{op}") is bedrock and codec_for("POST", vertex_path) is vertex_anthropic


def test_vertex_count_tokens_is_not_a_model_call() -> None:
    assert codec_for("POST", "/v1/projects/p/locations/l/publishers/anthropic/models/count-tokens:rawPredict") is None


def test_a_non_anthropic_invoke_body_is_refused_by_name() -> None:
    with pytest.raises(BlackboxUnsupportedError, match="only Anthropic models"):
        bedrock.decode_request(
            b'{"inputText": "hi", "textGenerationConfig": {}}', CallIds(), path="/model/amazon.titan-text-express-v1/invoke"
        )
