"""The "Blackbox" content view of mitmweb: a model-call flow shows its neutral step; refusals and replays say so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mitmproxy import contentviews, http
from mitmproxy.addons import script
from mitmproxy.test import taddons, tflow

from blackbox_mitm.codecs import CallIds, codec_named
from blackbox_mitm.proxy.contentview import BlackboxContentview, register

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


def _fixture(provider: str, name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / provider / f"{name}.json").read_text(encoding="utf-8"))
    return loaded


def _flow(
    path: str, request: dict[str, Any], body: bytes | None = None, *, status: int = 200, ctype: str = "application/json"
) -> http.HTTPFlow:
    flow = tflow.tflow(resp=body is not None)
    flow.request.method = "POST"
    flow.request.host = "api.openai.com" if "chat" in path else "api.anthropic.com"
    flow.request.path = path
    flow.request.headers["content-type"] = "application/json"
    flow.request.content = json.dumps(request).encode()
    if body is not None:
        assert flow.response is not None
        flow.response.status_code = status
        flow.response.headers["content-type"] = ctype
        flow.response.content = body
    return flow


def _shown(flow: http.HTTPFlow, message: http.Message) -> contentviews.ContentviewResult:
    """What mitmweb shows for ``message`` when nobody picked a view ("auto")."""
    with taddons.context():
        register()
        return contentviews.prettify_message(message, flow)


def _json_below_comments(text: str) -> Any:
    return json.loads("\n".join(line for line in text.splitlines() if not line.startswith("#")))


def test_a_recorded_call_shows_its_model_input_and_model_output() -> None:
    fx = _fixture("openai", "tool_round")
    flow = _flow("/v1/chat/completions", fx["request"], json.dumps(fx["response"]).encode())
    ids = CallIds()
    codec = codec_named("openai")
    decoded = codec.decode_request(json.dumps(fx["request"]).encode(), ids)
    expected_output = codec.decode_response(json.dumps(fx["response"]).encode(), ids, decoded)

    shown = _shown(flow, flow.request)
    assert shown.view_name == "Blackbox"  # chosen over the JSON view for a model call
    assert shown.text.startswith("# Blackbox · openai model call\n# model_input: the request as the cassette holds it\n")
    assert _json_below_comments(shown.text) == decoded.model_input
    assert _json_below_comments(shown.text)["systemPrompt"] == "You are a weather bot."

    answer = _shown(flow, flow.response)  # type: ignore[arg-type]
    assert answer.view_name == "Blackbox"
    assert "# the provider's answer\n# model_output: the answer as the cassette holds it" in answer.text
    assert _json_below_comments(answer.text) == expected_output
    assert "chatcmpl-" not in answer.text and "usage" not in answer.text  # the neutral step, not the provider's envelope


def test_a_streamed_answer_is_shown_put_together() -> None:
    fx = _fixture("openai", "stream_tool_calls")
    request = {**fx["request"], "stream": True}
    flow = _flow("/v1/chat/completions", request, fx["stream"].encode(), ctype="text/event-stream")
    answer = _shown(flow, flow.response)  # type: ignore[arg-type]
    assert "streamed: its events put together" in answer.text
    output = _json_below_comments(answer.text)
    assert output["type"] == "tool_calls" and [c["toolCallId"] for c in output["calls"]] == ["call-0", "call-1"]


def test_an_answer_replayed_from_the_cassette_is_marked() -> None:
    fx = _fixture("openai", "plain_text")
    codec = codec_named("openai")
    recorded = {"type": "final_answer", "text": "Paris: sun, 24 °C."}
    decoded = codec.decode_request(json.dumps(fx["request"]).encode(), CallIds())
    body = json.dumps(codec.encode_response(recorded, request=decoded, ids=CallIds(), created_ms=1_796_000_000_000)).encode()
    flow = _flow("/v1/chat/completions", fx["request"], body)
    flow.is_replay = "response"  # as the addon marks the answers it synthesizes in replay
    answer = _shown(flow, flow.response)  # type: ignore[arg-type]
    assert "# answered by Blackbox from the cassette (replay)" in answer.text
    assert _json_below_comments(answer.text) == recorded


def test_a_refused_request_shows_the_refusal() -> None:
    fx = _fixture("openai", "plain_text")
    request = {**fx["request"], "n": 2}  # several choices per request: refused (limitations page)
    err = codec_named("openai").encode_error(
        "BlackboxUnsupportedError: n: several choices per request are not supported: a replay returns one"
    )
    flow = _flow("/v1/chat/completions", request, err.body, status=err.status)
    shown = _shown(flow, flow.request)
    assert "# REFUSED: Blackbox does not record this request" in shown.text
    assert "BlackboxUnsupportedError: n" in shown.text and "several choices" in shown.text
    assert "# REFUSED" in _shown(flow, flow.response).text  # type: ignore[arg-type]


def test_a_replay_divergence_answered_by_blackbox_shows_its_message() -> None:
    fx = _fixture("openai", "plain_text")
    message = "the agent diverged from recorded run weather-1 at step 0:\n  message 0 (user): content differs at character 22"
    err = codec_named("openai").encode_error(message, error_type="replay_divergence", status=400)
    flow = _flow("/v1/chat/completions", fx["request"], err.body, status=400)
    text = _shown(flow, flow.response).text  # type: ignore[arg-type]
    assert text.startswith("# Blackbox · openai model call\n# REFUSED by Blackbox (HTTP 400): nothing was recorded for this call\n")
    assert "content differs at character 22" in text


def test_a_provider_error_is_passed_on_not_recorded() -> None:
    fx = _fixture("openai", "plain_text")
    body = json.dumps({"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}).encode()
    flow = _flow("/v1/chat/completions", fx["request"], body, status=429)
    text = _shown(flow, flow.response).text  # type: ignore[arg-type]
    assert "# the provider answered HTTP 429: passed to the agent, not recorded\n# Rate limit reached" in text


def test_other_flows_keep_mitmproxys_views() -> None:
    flow = tflow.tflow(resp=True)
    flow.request.method = "POST"
    flow.request.path = "/v1/embeddings"
    flow.request.headers["content-type"] = "application/json"
    flow.request.content = b'{"input": "x"}'
    shown = _shown(flow, flow.request)
    assert shown.view_name != "Blackbox"
    with pytest.raises(ValueError, match="not a model call"):
        BlackboxContentview().prettify(b"{}", contentviews.Metadata(flow=flow, http_message=flow.request))


def test_the_addon_script_registers_the_view() -> None:
    contentviews.registry._by_name.pop("blackbox", None)
    with taddons.context() as tctx:
        loaded = script.load_script(str(ROOT / "addon" / "blackbox_addon.py"))
        assert loaded is not None
        tctx.master.addons.add(*loaded.addons)
    assert isinstance(contentviews.registry["blackbox"], BlackboxContentview)
