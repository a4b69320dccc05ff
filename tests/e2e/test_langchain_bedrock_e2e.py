"""End to end: LangChain's ``ChatBedrockConverse`` (langchain-aws) with a tool round, through a real proxy.

The agent is ``examples/langchain_converse_agent.py``: ``ChatBedrockConverse``
with a bound ``get_weather`` tool, signing with SigV4 from fake AWS keys and
sending Converse / ConverseStream to ``bedrock-runtime.us-east-1.amazonaws.com``;
``--map-remote`` sends that host to the fake cloud on 127.0.0.1. Record -> the
cassette holds no key, signature, region or tool-use id -> three strict offline
replays (the fake gone, no AWS keys) print the same answer -> a changed prompt fails.
Converse and ConverseStream are two runs of one agent session (tests/e2e/several_runs.py), recorded once
for the module; each variant's test checks its own run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES
from once import shared
from several_runs import Session, calls_per_run, outputs, record_session, several

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

AGENT = EXAMPLES / "langchain_converse_agent.py"
QUESTION = "What's the weather in Paris and Lyon?"
ANSWER = "Paris: cloudy, 18°C. Lyon: rain, 15°C."
MODEL = "us.anthropic.claude-sonnet-4-6-v1:0"
ACCESS_KEY = "AKIAZ7QK3MXP4TBN2WLE"  # the shape of an AWS access key id; never a real one
SECRET_KEY = "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"
REGION = {"AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
AWS = {**REGION, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
REMOTE = r"|https://bedrock-runtime\.us-east-1\.amazonaws\.com|"


STREAMS = [False, True]


@pytest.fixture(scope="module")
def conversed(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> Session:
    def make(folder: Path) -> Session:
        # no AWS keys in the replays: boto3 uses the placeholder Bedrock API key
        cassette = folder / "run.json"

        def agent(question: str) -> list[str]:
            return several(AGENT, [[question, "--model", MODEL, *(["--stream"] if stream else [])] for stream in STREAMS])

        return record_session(cassette, confdir, REMOTE, agent, QUESTION, record_env=AWS, replay_env=REGION)

    return shared(tmp_path_factory, "langchain-converse", make)  # once a test session (tests/once.py)


@pytest.mark.parametrize("stream", STREAMS, ids=["converse", "converse-stream"])
def test_langchain_chat_bedrock_converse_with_a_tool_round_records_and_replays_offline(stream: bool, conversed: Session) -> None:
    run = STREAMS.index(stream)
    cassette, rec = conversed.cassette, conversed.rec
    assert len(conversed.calls) == 2 * len(STREAMS)
    assert calls_per_run(load_trace(cassette)) == [2] * len(STREAMS)  # two calls a run
    calls = conversed.calls[2 * run : 2 * run + 2]  # this run's two calls
    assert outputs(rec.stdout)[run].strip() == ANSWER
    assert all(r["path"].endswith("/converse-stream" if stream else "/converse") for r in calls)
    assert all(r["headers"]["authorization"].startswith("AWS4-HMAC-SHA256") for r in calls)  # signed for real
    assert "toolConfig" in calls[0]["body"] and "toolResult" in str(calls[1]["body"]["messages"])  # LangChain's own tool round
    raw = cassette.read_bytes()
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    for banned in (ACCESS_KEY, SECRET_KEY, "AWS4-HMAC", "Signature", "x-amz", "us-east-1", "amazonaws", "tooluse_"):
        assert banned.encode() not in raw, banned
    types = [s.type for s in trace.steps]
    first = [i for i, t in enumerate(types) if t == "model_input"][2 * run]  # this run's first call
    assert types[first : first + 6] == ["model_input", "model_output", "tool_call", "tool_result", "tool_call", "tool_result"]
    assert trace.steps[first].payload["model"] == MODEL

    for rep in conversed.replays:
        assert rep.returncode == 0, rep.stderr
        assert rep.stdout == rec.stdout
        assert f"{2 * len(STREAMS)} of {2 * len(STREAMS)} model calls served from the recording, no divergence" in rep.stderr
    assert conversed.changed.returncode != 0
    assert "differs" in conversed.changed.stderr
