"""The addon and the clouds, without sockets: host patterns, a Bedrock call recorded without its signature,
a replayed Bedrock stream in AWS's framing, and the clouds' token endpoints refused offline by name."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest
from botocore.eventstream import EventStreamBuffer
from mitmproxy import http
from mitmproxy.addons.proxyserver import Proxyserver
from mitmproxy.test import taddons, tflow, tutils

from blackbox_mitm.proxy.addon import BlackboxAddon

BODY = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]}
ARN = "arn%3Aaws%3Abedrock%3Aeu-west-3%3A123456789012%3Ainference-profile%2Feu.anthropic.claude-sonnet-4-6-v1%3A0"
MESSAGE = {
    "id": "msg_bdrk_01XyZ",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [{"type": "text", "text": "Hello."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 2},
}
SIGV4 = (
    "AWS4-HMAC-SHA256 Credential=AKIAZ7QK3MXP4TBN2WLE/20260101/eu-west-3/bedrock/aws4_request, "
    "SignedHeaders=content-type;host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
)


def _flow(host: str, path: str, body: object = BODY, method: str = "POST") -> http.HTTPFlow:
    req = tutils.treq(host=host, port=443, scheme=b"https", method=method.encode(), path=path.encode(), content=orjson.dumps(body))
    req.headers["content-type"] = "application/json"
    req.headers["authorization"] = SIGV4
    req.headers["x-amz-date"] = "20260101T000000Z"
    req.headers["x-amz-security-token"] = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQDx"
    return tflow.tflow(req=req)


async def _record(cassette: Path) -> None:
    addon = BlackboxAddon()
    with taddons.context(addon, Proxyserver()) as tctx:
        tctx.configure(addon, blackbox_mode="record", blackbox_cassette=str(cassette))
        f = _flow("bedrock-runtime.eu-west-3.amazonaws.com", f"/model/{ARN}/invoke")
        addon.requestheaders(f)
        addon.request(f)
        assert f.response is None  # a Bedrock host (matched by pattern): forwarded and recorded
        f.response = http.Response.make(200, orjson.dumps(MESSAGE), {"content-type": "application/json"})
        await addon.response(f)
        assert f.response.status_code == 200
        addon.done()


def test_a_bedrock_call_is_recorded_without_signature_region_account_or_arn(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    asyncio.run(_record(cassette))
    raw = cassette.read_bytes()
    assert b"eu.anthropic.claude-sonnet-4-6-v1:0" in raw  # the model: the profile id
    for native in (b"AKIA", b"Signature", b"IQoJb3", b"20260101", b"eu-west-3", b"123456789012", b"arn", b"msg_bdrk", b"bedrock-2023"):
        assert native not in raw, native


async def _replay(cassette: Path) -> None:
    addon = BlackboxAddon()
    with taddons.context(addon, Proxyserver()) as tctx:
        tctx.configure(addon, blackbox_mode="replay", blackbox_cassette=str(cassette))
        stream = _flow("bedrock-runtime.eu-west-3.amazonaws.com", f"/model/{ARN}/invoke-with-response-stream")
        addon.requestheaders(stream)
        addon.request(stream)
        assert stream.response is not None and stream.response.status_code == 400  # recorded whole, asked streamed: params differ
        assert stream.response.headers["x-amzn-errortype"].startswith("ValidationException")

        whole = _flow("bedrock-runtime.eu-west-3.amazonaws.com", f"/model/{ARN}/invoke")
        addon.requestheaders(whole)
        addon.request(whole)
        assert whole.response is not None and whole.response.status_code == 200
        body = orjson.loads(whole.response.content or b"")
        assert body["content"] == [{"type": "text", "text": "Hello."}]
        assert body["model"].startswith("arn:aws:bedrock:eu-west-3")  # echoes what the agent sent

        for host, path in (
            ("sts.amazonaws.com", "/"),
            ("sts.us-east-1.amazonaws.com", "/"),
            ("oauth2.googleapis.com", "/token"),
            ("login.microsoftonline.com", "/tenant/oauth2/v2.0/token"),
            ("169.254.169.254", "/latest/api/token"),
        ):
            token = _flow(host, path, body={}, method="PUT" if host[0].isdigit() else "POST")
            addon.requestheaders(token)
            addon.request(token)
            assert token.response is not None and token.response.status_code == 502, host
            assert f"blackbox replay is offline: {host} was not contacted".encode() in (token.response.content or b"")


def test_an_offline_replay_answers_bedrock_and_refuses_the_token_endpoints_by_name(tmp_path: Path) -> None:
    async def both() -> None:  # in one running loop, as mitmproxy runs its hooks (a divergence is logged through it)
        await _record(tmp_path / "run.json")
        await _replay(tmp_path / "run.json")

    asyncio.run(both())


@pytest.mark.parametrize(
    ("host", "intercepted"),
    [
        ("bedrock-runtime.ap-southeast-2.amazonaws.com", True),
        ("bedrock-runtime-fips.us-gov-west-1.amazonaws.com", True),
        ("us-central1-aiplatform.googleapis.com", True),
        ("aiplatform.googleapis.com", True),
        ("my-resource.openai.azure.com", True),
        ("my-resource.cognitiveservices.azure.com", True),
        ("bedrock-runtime.us-east-1.amazonaws.com.attacker.example", False),
        ("evil-aiplatform.googleapis.com.example", False),
        ("openai.azure.com", False),
    ],
)
def test_cloud_hosts_are_matched_by_pattern(host: str, intercepted: bool) -> None:
    from blackbox_mitm.codecs import default_hosts, host_matches

    assert host_matches(host, default_hosts()) is intercepted


def test_a_replayed_bedrock_stream_is_framed_for_botocore(tmp_path: Path) -> None:
    from blackbox_mitm.codecs import CallIds, bedrock
    from blackbox_mitm.session.engine import Session
    from blackbox_mitm.session.plan import RunPlan

    session = Session(RunPlan(), run_id="r")
    request = bedrock.decode_request(orjson.dumps(BODY), CallIds(), path="/model/m/invoke-with-response-stream")
    answer = session._answer(bedrock, request, {"type": "final_answer", "text": "Hello."}, 0)
    assert answer.headers["content-type"] == "application/vnd.amazon.eventstream"
    buffer = EventStreamBuffer()
    buffer.add_data(answer.body)
    assert [m.headers[":event-type"] for m in buffer][-1] == "chunk"
