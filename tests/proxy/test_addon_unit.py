"""The addon without sockets: mitmproxy's taddons/tflow drive its hooks (fast; the e2e tests do it for real)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest
from mitmproxy import exceptions, http
from mitmproxy.addons.proxyserver import Proxyserver
from mitmproxy.test import taddons, tflow, tutils

from blackbox_mitm.cassette import journal_path, load_trace
from blackbox_mitm.proxy.addon import BlackboxAddon

REQUEST = {
    "model": "gpt-4.1",
    "messages": [{"role": "user", "content": "What's the weather in Paris?"}],
    "tools": [
        {
            "type": "function",
            "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
        }
    ],
}
RESPONSE = {
    "id": "chatcmpl-abc123",
    "object": "chat.completion",
    "created": 1730000000,
    "model": "gpt-4.1-2025-04-14",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Sunny.", "refusal": None}, "finish_reason": "stop", "logprobs": None}
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    "system_fingerprint": "fp_1",
}


def _flow(host: str = "api.openai.com", path: str = "/v1/chat/completions", body: object = REQUEST, method: str = "POST") -> http.HTTPFlow:
    req = tutils.treq(host=host, port=443, scheme=b"https", method=method.encode(), path=path.encode(), content=orjson.dumps(body))
    req.headers["content-type"] = "application/json"
    req.headers["authorization"] = "Bearer sk-test-not-a-real-key-000"
    return tflow.tflow(req=req)


def _record(tmp_path: Path) -> Path:
    return asyncio.run(_record_async(tmp_path))


async def _record_async(tmp_path: Path) -> Path:
    # Inside a running loop, as mitmproxy runs its hooks (its log handler needs the loop).
    cassette = tmp_path / "run.json"
    addon = BlackboxAddon()
    with taddons.context(addon, Proxyserver()) as tctx:
        tctx.configure(addon, blackbox_mode="record", blackbox_cassette=str(cassette))
        assert tctx.options.connection_strategy == "lazy"  # never dial upstream before the hook decides
        f = _flow()
        addon.requestheaders(f)
        addon.request(f)
        assert f.response is None  # forwarded upstream
        f.response = http.Response.make(200, orjson.dumps(RESPONSE), {"content-type": "application/json"})
        await addon.response(f)
        assert f.response.status_code == 200  # passed through untouched
        assert journal_path(cassette).exists() and not cassette.exists()
        addon.done()
    return cassette


def test_record_writes_neutral_steps_and_nothing_provider_native(tmp_path: Path) -> None:
    cassette = _record(tmp_path)
    trace = load_trace(cassette)
    assert [s.type for s in trace.steps] == ["model_input", "model_output", "metadata"]
    # The usage becomes the neutral token counts; the provider's usage object never enters the cassette.
    assert trace.steps[1].payload == {"type": "final_answer", "text": "Sunny.", "tokens": {"input": 5, "output": 2}}
    raw = cassette.read_bytes()
    for native in (b"chatcmpl-abc123", b"fp_1", b"usage", b"sk-test"):
        assert native not in raw
    assert not journal_path(cassette).exists()


def test_replay_answers_in_the_request_hook(tmp_path: Path) -> None:
    asyncio.run(_replay_answers(tmp_path))


async def _replay_answers(tmp_path: Path) -> None:
    cassette = await _record_async(tmp_path)
    addon = BlackboxAddon()
    with taddons.context(addon, Proxyserver()) as tctx:
        tctx.configure(addon, blackbox_mode="replay", blackbox_cassette=str(cassette))
        assert tctx.options.upstream_cert is False and tctx.options.connection_strategy == "lazy"
        f = _flow()
        addon.requestheaders(f)
        addon.request(f)
        assert f.response is not None and f.response.status_code == 200
        body = orjson.loads(f.response.content or b"")
        assert body["choices"][0]["message"]["content"] == "Sunny."
        assert body["model"] == "gpt-4.1" and body["usage"]["total_tokens"] == 7  # the recorded counts, served back

        again = _flow()
        addon.requestheaders(again)
        addon.request(again)
        assert again.response is not None and again.response.status_code == 400
        assert again.response.headers["x-should-retry"] == "false"
        assert b"overran its recording" in (again.response.content or b"")


def test_replay_is_offline_for_other_hosts_and_404s_non_model_endpoints(tmp_path: Path) -> None:
    asyncio.run(_replay_offline(tmp_path))


async def _replay_offline(tmp_path: Path) -> None:
    # Recorded and replayed in one running loop, as mitmproxy runs its hooks (a divergence is logged through its handler).
    cassette = await _record_async(tmp_path)
    addon = BlackboxAddon()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, blackbox_mode="replay", blackbox_cassette=str(cassette))
        other = _flow(host="example.com", path="/", method="GET")
        addon.requestheaders(other)
        addon.request(other)
        assert other.response is not None and other.response.status_code == 502
        assert b"offline" in (other.response.content or b"")

        settings = _flow(host="api.anthropic.com", path="/api/claude_code/settings", method="GET")
        addon.requestheaders(settings)
        addon.request(settings)
        assert settings.response is not None and settings.response.status_code == 404
        assert orjson.loads(settings.response.content or b"")["type"] == "error"  # Anthropic's error shape

        # The Responses API is a model call like any other: compared neutrally, so this one diverges.
        responses = _flow(path="/v1/responses", body={"model": "gpt-4.1", "input": "hi"})
        addon.requestheaders(responses)
        addon.request(responses)
        assert responses.response is not None and responses.response.status_code == 400
        assert orjson.loads(responses.response.content or b"")["error"]["type"] == "replay_divergence"


def test_record_passes_non_model_endpoints_and_refuses_unsupported_fields(tmp_path: Path) -> None:
    addon = BlackboxAddon()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, blackbox_mode="record", blackbox_cassette=str(tmp_path / "run.json"))
        traces = _flow(path="/v1/traces/ingest", body={"data": []})
        addon.requestheaders(traces)
        addon.request(traces)
        assert traces.response is None  # passed through, not a step

        refused = _flow(body={**REQUEST, "n": 2})
        addon.requestheaders(refused)
        addon.request(refused)
        assert refused.response is not None and refused.response.status_code == 400
        error = orjson.loads(refused.response.content or b"")["error"]
        assert error["message"].startswith("BlackboxUnsupportedError: n:")
        addon.done()
    assert [s.type for s in load_trace(tmp_path / "run.json").steps] == ["metadata"]


def test_map_remote_does_not_hide_the_provider_host(tmp_path: Path) -> None:
    """map_remote rewrites the destination in its request hook; the addon reads the host before that."""
    addon = BlackboxAddon()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, blackbox_mode="record", blackbox_cassette=str(tmp_path / "run.json"))
        f = _flow()
        addon.requestheaders(f)
        f.request.url = "http://127.0.0.1:9/v1/chat/completions"  # what map_remote does
        addon.request(f)
        assert "blackbox.ticket" in f.metadata
        addon.done()


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("blackbox_mode", "forward", "record, replay"),
        ("blackbox_match", "fuzzy", "strict or sequence"),
        ("blackbox_stream_delay_ms", -1, "0 or more"),
        ("blackbox_hosts", [], "at least one"),
    ],
)
def test_bad_options_say_what_is_allowed(option: str, value: object, says: str) -> None:
    addon = BlackboxAddon()
    with taddons.context(addon) as tctx, pytest.raises(exceptions.OptionsError, match=says):
        tctx.configure(addon, **{option: value})


def test_a_cassette_is_needed_and_must_load(tmp_path: Path) -> None:
    addon = BlackboxAddon()
    with taddons.context(addon) as tctx:
        with pytest.raises(exceptions.OptionsError, match="blackbox_cassette"):
            tctx.configure(addon, blackbox_mode="replay")
        bad = tmp_path / "bad.json"
        bad.write_text('{"version": 1, "id": "x", "createdAt": 0, "steps": []}')
        with pytest.raises(exceptions.OptionsError, match="re-record"):
            tctx.configure(addon, blackbox_mode="replay", blackbox_cassette=str(bad))
        existing = tmp_path / "existing.json"
        existing.write_text("{}")
        with pytest.raises(exceptions.OptionsError, match="already exists"):
            tctx.configure(addon, blackbox_mode="record", blackbox_cassette=str(existing))
        assert existing.read_text() == "{}"
