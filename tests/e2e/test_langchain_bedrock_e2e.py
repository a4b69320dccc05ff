"""End to end: LangChain's ``ChatBedrockConverse`` (langchain-aws) with a tool round, through a real proxy.

The agent is ``examples/langchain_converse_agent.py``: ``ChatBedrockConverse``
with a bound ``get_weather`` tool, signing with SigV4 from fake AWS keys and
sending Converse / ConverseStream to ``bedrock-runtime.us-east-1.amazonaws.com``;
``--map-remote`` sends that host to the fake cloud on 127.0.0.1. Record -> the
cassette holds no key, signature, region or tool-use id -> three strict offline
replays (the fake gone, no AWS keys) print the same answer -> a changed prompt fails.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, blackbox
from fake_clouds import FakeClouds

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

AGENT = [sys.executable, str(EXAMPLES / "langchain_converse_agent.py")]
QUESTION = "What's the weather in Paris and Lyon?"
ANSWER = "Paris: cloudy, 18°C. Lyon: rain, 15°C."
MODEL = "us.anthropic.claude-sonnet-4-6-v1:0"
ACCESS_KEY = "AKIAZ7QK3MXP4TBN2WLE"  # the shape of an AWS access key id; never a real one
SECRET_KEY = "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"
REGION = {"AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
AWS = {**REGION, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
REMOTE = r"|https://bedrock-runtime\.us-east-1\.amazonaws\.com|"


@pytest.mark.parametrize("stream", [False, True], ids=["converse", "converse-stream"])
def test_langchain_chat_bedrock_converse_with_a_tool_round_records_and_replays_offline(stream: bool, tmp_path: Path, confdir: Path) -> None:
    cassette = tmp_path / "run.json"
    flags = ["--model", MODEL, *(["--stream"] if stream else [])]
    with FakeClouds() as fake:
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), "--map-remote", REMOTE + fake.url,
                       "--", *AGENT, QUESTION, *flags, env=AWS)  # fmt: skip
        assert rec.returncode == 0, rec.stderr
        calls = [r for r in fake.requests if "/model/" in r["path"]]
    assert rec.stdout.strip() == ANSWER
    assert len(calls) == 2 and all(r["path"].endswith("/converse-stream" if stream else "/converse") for r in calls)
    assert all(r["headers"]["authorization"].startswith("AWS4-HMAC-SHA256") for r in calls)  # signed for real
    assert "toolConfig" in calls[0]["body"] and "toolResult" in str(calls[1]["body"]["messages"])  # LangChain's own tool round
    raw = cassette.read_bytes()
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    for banned in (ACCESS_KEY, SECRET_KEY, "AWS4-HMAC", "Signature", "x-amz", "us-east-1", "amazonaws", "tooluse_"):
        assert banned.encode() not in raw, banned
    types = [s.type for s in trace.steps]
    assert types[:6] == ["model_input", "model_output", "tool_call", "tool_result", "tool_call", "tool_result"]
    assert trace.steps[0].payload["model"] == MODEL

    for _ in range(3):  # no AWS keys: boto3 uses the placeholder Bedrock API key, and the fake is gone
        rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *AGENT, QUESTION, *flags, env=REGION)
        assert rep.returncode == 0, rep.stderr
        assert rep.stdout == rec.stdout
        assert "2 of 2 model calls served from the recording, no divergence" in rep.stderr
    changed = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *AGENT, "What's the weather in Paris and Oslo?", *flags,
                       env=REGION)  # fmt: skip
    assert changed.returncode != 0
    assert "differs" in changed.stderr
