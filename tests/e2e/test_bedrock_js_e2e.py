"""End to end: the JS Bedrock SDK (``@anthropic-ai/bedrock-sdk``, pinned) parsing what a replay answers.

The agent is ``tests/e2e/clients/bedrock-sdk/bedrock_agent.js``: a default
``new AnthropicBedrock()`` with a get_weather tool, signing with SigV4 from fake
AWS keys and calling ``bedrock-runtime.us-east-1.amazonaws.com`` (``--map-remote``
sends it to the fake cloud on 127.0.0.1). Recorded, then replayed strictly offline
with no AWS keys: the SDK parses the replayed JSON answers and, streamed, the AWS
event-stream framing Blackbox writes, and prints the same answer. A changed prompt fails.
Whole and streamed are two runs of one agent session (``--runs whole,stream``), recorded once for the
module; each variant's test checks its own run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT
from once import shared
from several_runs import Session, calls_per_run, outputs, record_session

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

CLIENT = ROOT / "tests" / "e2e" / "clients" / "bedrock-sdk"
AGENT = ["node", str(CLIENT / "bedrock_agent.js")]
QUESTION = "What's the weather in Paris and Lyon?"
ANSWER = "Paris: cloudy, 18°C. Lyon: rain, 15°C."
ACCESS_KEY = "AKIAZ7QK3MXP4TBN2WLE"  # the shape of an AWS access key id; never a real one
SECRET_KEY = "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"
REGION = {"AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
AWS = {**REGION, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
REMOTE = r"|https://bedrock-runtime\.us-east-1\.amazonaws\.com|"

if shutil.which("node") is None or not (CLIENT / "node_modules" / "@anthropic-ai" / "bedrock-sdk").is_dir():
    pytest.fail("the pinned @anthropic-ai/bedrock-sdk is not installed: run scripts/setup-bedrock-sdk", pytrace=False)


STREAMS = [False, True]
RUNS = ["--runs", ",".join("stream" if stream else "whole" for stream in STREAMS)]  # both variants, one agent session


@pytest.fixture(scope="module")
def invoked(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> Session:
    def make(folder: Path) -> Session:
        # no AWS keys in the replays (the replay's placeholder Bedrock API key)
        cassette = folder / "run.json"
        return record_session(cassette, confdir, REMOTE, lambda q: [*AGENT, q, *RUNS], QUESTION, record_env=AWS, replay_env=REGION)

    return shared(tmp_path_factory, "bedrock-js", make)  # once a test session (tests/once.py)


@pytest.mark.parametrize("stream", STREAMS, ids=["invoke", "invoke-with-response-stream"])
def test_the_js_bedrock_sdk_records_and_parses_a_strict_offline_replay(stream: bool, invoked: Session) -> None:
    run = STREAMS.index(stream)
    cassette, rec = invoked.cassette, invoked.rec
    assert len(invoked.calls) == 2 * len(STREAMS)
    assert calls_per_run(load_trace(cassette)) == [2] * len(STREAMS)  # two calls a run
    calls = invoked.calls[2 * run : 2 * run + 2]  # this run's two calls
    assert outputs(rec.stdout)[run].strip() == ANSWER
    op = "/invoke-with-response-stream" if stream else "/invoke"
    assert all(r["path"].endswith(op) for r in calls)
    assert all(r["headers"]["authorization"].startswith("AWS4-HMAC-SHA256") for r in calls)  # the SDK signed for real
    raw = cassette.read_bytes()
    assert verify_trace(load_trace(cassette)) == []
    for banned in (ACCESS_KEY, SECRET_KEY, "AWS4-HMAC", "Signature", "x-amz", "us-east-1", "amazonaws", "bedrock-2023-05-31", "toolu_"):
        assert banned.encode() not in raw, banned

    for rep in invoked.replays:
        assert rep.returncode == 0, rep.stderr
        assert rep.stdout == rec.stdout
        assert f"{2 * len(STREAMS)} of {2 * len(STREAMS)} model calls served from the recording, no divergence" in rep.stderr
    assert invoked.changed.returncode != 0
    assert "differs" in invoked.changed.stderr
