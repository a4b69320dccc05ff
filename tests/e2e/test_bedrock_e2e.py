"""End to end: Amazon Bedrock (InvokeModel) through a real proxy, against the fake cloud (examples/fake_clouds.py).

The agent is ``examples/anthropic_weather_agent.py --cloud bedrock``: a default
``anthropic.AnthropicBedrock()`` that signs every call with SigV4 (botocore) from
fake AWS keys and sends it to its default host, ``bedrock-runtime.us-east-1.amazonaws.com``;
``--map-remote`` sends that host to the fake on 127.0.0.1. Each case: record ->
the cassette holds no key, signature, region, account or ARN -> a strict offline
replay (the fake gone, no AWS keys) gives the same answer -> a changed prompt fails.
Then: the run recorded on Bedrock replays for the same agent pointed at Anthropic's
API, and the other way round.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, blackbox, remote_args
from fake_clouds import FakeClouds
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

AGENT = [sys.executable, str(EXAMPLES / "anthropic_weather_agent.py")]
QUESTION = "What's the weather in Paris and Lyon?"
ANSWER = "Paris: cloudy, 18°C. Lyon: rain, 15°C."
MODEL = "us.anthropic.claude-sonnet-4-6-v1:0"
ARN = f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/{MODEL}"
ACCESS_KEY = "AKIAZ7QK3MXP4TBN2WLE"  # the shape of an AWS access key id; never a real one
SECRET_KEY = "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"
AWS = {
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": ACCESS_KEY,
    "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
    "AWS_EC2_METADATA_DISABLED": "true",
}
REGION = {"AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1"}  # boto3 reads the second, the Anthropic SDK the first
BEDROCK_REMOTE = r"|https://bedrock-runtime\.us-east-1\.amazonaws\.com|"


def _record_bedrock(cassette: Path, confdir: Path, fake: FakeClouds, *agent_args: str) -> Any:
    return blackbox(
        "record", "-o", str(cassette), "--confdir", str(confdir), "--map-remote", BEDROCK_REMOTE + fake.url,
        "--", *AGENT, QUESTION, "--cloud", "bedrock", *agent_args, env=AWS,
    )  # fmt: skip


def _replay(cassette: Path, confdir: Path, *agent_args: str, question: str = QUESTION) -> Any:
    # No AWS keys: the replay sets a placeholder Bedrock API key (AWS_BEARER_TOKEN_BEDROCK), so nothing is signed.
    return blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *AGENT, question, *agent_args, env=REGION)


def _assert_neutral(cassette: Path) -> None:
    raw = cassette.read_bytes()
    assert verify_trace(load_trace(cassette)) == []
    for banned in (ACCESS_KEY, SECRET_KEY, "AWS4-HMAC", "Signature", "X-Amz", "x-amz", "123456789012", "us-east-1", "arn:", "amazonaws",
                   "bedrock-2023-05-31", "invocationMetrics", "toolu_", "msg_"):  # fmt: skip
        assert banned.encode() not in raw, banned


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "invoke-with-response-stream"])
@pytest.mark.parametrize("model", [MODEL, ARN], ids=["profile-id", "profile-arn"])
def test_anthropic_bedrock_records_replays_offline_and_a_changed_prompt_fails(
    stream: bool, model: str, tmp_path: Path, confdir: Path
) -> None:
    cassette = tmp_path / "run.json"
    flags = ["--model", model, *(["--stream"] if stream else [])]
    with FakeClouds() as fake:
        rec = _record_bedrock(cassette, confdir, fake, *flags)
        assert rec.returncode == 0, rec.stderr
        calls = [r for r in fake.requests if "/model/" in r["path"]]
        version = calls[0]["body"]["anthropic_version"]
    assert rec.stdout.strip() == ANSWER
    assert len(calls) == 2
    op = "invoke-with-response-stream" if stream else "invoke"
    assert all(r["path"].endswith("/" + op) for r in calls)
    assert all(r["headers"]["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/") for r in calls)  # signed for real
    _assert_neutral(cassette)
    assert version.encode() not in cassette.read_bytes()  # the transport's version is not the model's input
    trace = load_trace(cassette)
    inputs = [s.payload for s in trace.steps if s.type == "model_input"]
    assert [i["model"] for i in inputs] == [MODEL, MODEL]  # the profile id, out of the ARN
    assert all(i.get("params", {}).get("stream", False) is stream for i in inputs)

    for _ in range(3):
        rep = _replay(cassette, confdir, "--cloud", "bedrock", *flags)
        assert rep.returncode == 0, rep.stderr
        assert rep.stdout.strip() == ANSWER
        assert "2 of 2 model calls served" in rep.stderr

    changed = _replay(cassette, confdir, "--cloud", "bedrock", *flags, question="What's the weather in Paris and Oslo?")
    assert changed.returncode != 0
    assert "content differs at character 32" in changed.stderr


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_bedrock_recording_replays_for_the_agent_on_anthropics_api_and_back(stream: bool, tmp_path: Path, confdir: Path) -> None:
    flags = ["--model", MODEL, *(["--stream"] if stream else [])]
    on_bedrock, on_anthropic = tmp_path / "bedrock.json", tmp_path / "anthropic.json"
    with FakeClouds() as fake:
        assert _record_bedrock(on_bedrock, confdir, fake, "--model", ARN, *flags[2:]).returncode == 0
    with FakeProvider() as provider:
        rec = blackbox(
            "record", "-o", str(on_anthropic), "--confdir", str(confdir), *remote_args(provider.url), "--", *AGENT, QUESTION, *flags
        )
        assert rec.returncode == 0, rec.stderr

    # Strict replays, across clouds: the neutral steps are the same.
    to_anthropic = _replay(on_bedrock, confdir, "--cloud", "anthropic", *flags)
    assert to_anthropic.returncode == 0, to_anthropic.stderr
    assert to_anthropic.stdout.strip() == ANSWER
    to_bedrock = _replay(on_anthropic, confdir, "--cloud", "bedrock", *flags)
    assert to_bedrock.returncode == 0, to_bedrock.stderr
    assert to_bedrock.stdout.strip() == ANSWER
    steps = [
        [(s.type, s.payload) for s in load_trace(p).steps if s.type in ("model_input", "model_output", "tool_call", "tool_result")]
        for p in (on_bedrock, on_anthropic)
    ]
    assert steps[0] == steps[1]


# --- Converse ------------------------------------------------------------------------------

CONVERSE = [sys.executable, str(EXAMPLES / "converse_weather_agent.py")]


@pytest.mark.parametrize("stream", [False, True], ids=["converse", "converse-stream"])
def test_boto3_converse_with_a_tool_round_records_and_replays_offline(stream: bool, tmp_path: Path, confdir: Path) -> None:
    cassette = tmp_path / "run.json"
    flags = ["--model", ARN, *(["--stream"] if stream else [])]
    with FakeClouds() as fake:
        rec = blackbox(
            "record", "-o", str(cassette), "--confdir", str(confdir), "--map-remote", BEDROCK_REMOTE + fake.url,
            "--", *CONVERSE, QUESTION, *flags, env=AWS,
        )  # fmt: skip
        assert rec.returncode == 0, rec.stderr
        calls = [r for r in fake.requests if "/model/" in r["path"]]
    assert rec.stdout.strip() == ANSWER
    assert len(calls) == 2 and all(r["path"].endswith("/converse-stream" if stream else "/converse") for r in calls)
    assert all(r["headers"]["authorization"].startswith("AWS4-HMAC-SHA256") for r in calls)  # boto3 signed for real
    _assert_neutral(cassette)
    assert b"tooluse_" not in cassette.read_bytes()
    trace = load_trace(cassette)
    assert [s.type for s in trace.steps][:6] == ["model_input", "model_output", "tool_call", "tool_result", "tool_call", "tool_result"]
    assert trace.steps[0].payload["model"] == MODEL

    for _ in range(3):  # no AWS keys: boto3 uses the placeholder Bedrock API key, and the fake is gone
        rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *CONVERSE, QUESTION, *flags, env=REGION)
        assert rep.returncode == 0, rep.stderr
        assert rep.stdout == rec.stdout
    changed = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *CONVERSE, "What's the weather in Paris and Oslo?", *flags,
                       env=REGION)  # fmt: skip
    assert changed.returncode != 0
    assert "content differs at character 32" in changed.stderr
