"""End to end: Amazon Bedrock (InvokeModel) through a real proxy, against the fake cloud (examples/fake_clouds.py).

The agent is ``examples/anthropic_weather_agent.py --cloud bedrock``: a default
``anthropic.AnthropicBedrock()`` that signs every call with SigV4 (botocore) from
fake AWS keys and sends it to its default host, ``bedrock-runtime.us-east-1.amazonaws.com``;
``--map-remote`` sends that host to the fake on 127.0.0.1. Each case: record ->
the cassette holds no key, signature, region, account or ARN -> a strict offline
replay (the fake gone, no AWS keys) gives the same answer -> a changed prompt fails.
Then: the run recorded on Bedrock replays for the same agent pointed at Anthropic's
API, and the other way round. A capability's variants (model id or ARN, whole or streamed) are runs of
one agent session (tests/e2e/several_runs.py), recorded once for the module; each variant's test checks its own run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from conftest import EXAMPLES, blackbox, remote_args
from fake_provider import FakeProvider
from once import shared
from several_runs import Session, calls_per_run, outputs, record_session, several

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

AGENT = EXAMPLES / "anthropic_weather_agent.py"
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


def _replay(cassette: Path, confdir: Path, runs: list[list[str]]) -> Any:
    # No AWS keys: the replay sets a placeholder Bedrock API key (AWS_BEARER_TOKEN_BEDROCK), so nothing is signed.
    return blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *several(AGENT, runs), env=REGION)


def _assert_neutral(cassette: Path) -> None:
    raw = cassette.read_bytes()
    assert verify_trace(load_trace(cassette)) == []
    for banned in (ACCESS_KEY, SECRET_KEY, "AWS4-HMAC", "Signature", "X-Amz", "x-amz", "123456789012", "us-east-1", "arn:", "amazonaws",
                   "bedrock-2023-05-31", "invocationMetrics", "toolu_", "msg_"):  # fmt: skip
        assert banned.encode() not in raw, banned


# One agent session covers the four (model id, stream) variants, recorded once for the module, replayed three times;
# each variant's test checks its own run (its two calls, its steps, its answer). The changed prompt fails the first run
# (divergence is read from the neutral input, the same for a model id or an ARN, whole or streamed).
VARIANTS = [(model, stream) for model in (MODEL, ARN) for stream in (False, True)]


def _runs(cloud: str, variants: list[tuple[str, bool]], question: str = QUESTION) -> list[list[str]]:
    return [[question, "--cloud", cloud, "--model", model, *(["--stream"] if stream else [])] for model, stream in variants]


@pytest.fixture(scope="module")
def invoked(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> Session:
    def make(folder: Path) -> Session:
        # No AWS keys in the replays: they set a placeholder Bedrock API key (AWS_BEARER_TOKEN_BEDROCK), so nothing is signed.
        cassette = folder / "run.json"

        def agent(question: str) -> list[str]:
            return several(AGENT, _runs("bedrock", VARIANTS, question))

        return record_session(cassette, confdir, BEDROCK_REMOTE, agent, QUESTION, record_env=AWS, replay_env=REGION)

    return shared(tmp_path_factory, "bedrock-invoke", make)  # once a test session (tests/once.py)


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "invoke-with-response-stream"])
@pytest.mark.parametrize("model", [MODEL, ARN], ids=["profile-id", "profile-arn"])
def test_anthropic_bedrock_records_replays_offline_and_a_changed_prompt_fails(stream: bool, model: str, invoked: Session) -> None:
    run = VARIANTS.index((model, stream))
    cassette = invoked.cassette
    assert len(invoked.calls) == 2 * len(VARIANTS)
    assert calls_per_run(load_trace(invoked.cassette)) == [2] * len(VARIANTS)  # two calls a run
    calls = invoked.calls[2 * run : 2 * run + 2]  # this variant's two calls
    version = calls[0]["body"]["anthropic_version"]
    assert outputs(invoked.rec.stdout)[run].strip() == ANSWER
    op = "invoke-with-response-stream" if stream else "invoke"
    assert all(r["path"].endswith("/" + op) for r in calls)
    assert all(f"/model/{model}/" in unquote(r["path"]) for r in calls)  # this run's calls: its model id, as the agent gave it
    assert all(r["headers"]["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/") for r in calls)  # signed for real
    _assert_neutral(cassette)
    assert version.encode() not in cassette.read_bytes()  # the transport's version is not the model's input
    trace = load_trace(cassette)
    inputs = [s.payload for s in trace.steps if s.type == "model_input"][2 * run : 2 * run + 2]
    assert [i["model"] for i in inputs] == [MODEL, MODEL]  # the profile id, out of the ARN
    assert all(i.get("params", {}).get("stream", False) is stream for i in inputs)

    for rep in invoked.replays:
        assert rep.returncode == 0, rep.stderr
        assert outputs(rep.stdout)[run].strip() == ANSWER
        assert f"{2 * len(VARIANTS)} of {2 * len(VARIANTS)} model calls served" in rep.stderr

    assert invoked.changed.returncode != 0
    assert "content differs at character 32" in invoked.changed.stderr


@pytest.fixture(scope="module")
def across(invoked: Session, tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> tuple[Path, Any, Any]:
    """The Bedrock session recorded again on Anthropic's API; each replayed for the agent on the other."""

    def make(folder: Path) -> tuple[Path, Any, Any]:
        on_anthropic = folder / "anthropic.json"
        on_profile = [(MODEL, stream) for _, stream in VARIANTS]
        with FakeProvider() as provider:
            rec = blackbox(
                "record", "-o", str(on_anthropic), "--confdir", str(confdir), *remote_args(provider.url),
                "--", *several(AGENT, _runs("anthropic", on_profile)),
            )  # fmt: skip
            assert rec.returncode == 0, rec.stderr
        # Strict replays, across clouds: the neutral steps are the same.
        to_anthropic = _replay(invoked.cassette, confdir, _runs("anthropic", on_profile))
        to_bedrock = _replay(on_anthropic, confdir, _runs("bedrock", on_profile))
        return on_anthropic, to_anthropic, to_bedrock

    return shared(tmp_path_factory, "bedrock-across", make)  # once a test session (tests/once.py)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_bedrock_recording_replays_for_the_agent_on_anthropics_api_and_back(
    stream: bool, invoked: Session, across: tuple[Path, Any, Any]
) -> None:
    on_anthropic, to_anthropic, to_bedrock = across
    run = VARIANTS.index((ARN, stream))  # the run recorded on Bedrock with the ARN
    assert to_anthropic.returncode == 0, to_anthropic.stderr
    assert outputs(to_anthropic.stdout)[run].strip() == ANSWER
    assert to_bedrock.returncode == 0, to_bedrock.stderr
    assert outputs(to_bedrock.stdout)[run].strip() == ANSWER
    steps = [
        [(s.type, s.payload) for s in load_trace(p).steps if s.type in ("model_input", "model_output", "tool_call", "tool_result")]
        for p in (invoked.cassette, on_anthropic)
    ]
    assert len(steps[0]) == len(steps[1]) > 0
    assert steps[0] == steps[1]


# --- Converse ------------------------------------------------------------------------------

CONVERSE = EXAMPLES / "converse_weather_agent.py"
STREAMS = [False, True]


@pytest.fixture(scope="module")
def conversed(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> Session:
    def make(folder: Path) -> Session:
        cassette = folder / "run.json"

        def runs(question: str) -> list[str]:
            return several(CONVERSE, [[question, "--model", ARN, *(["--stream"] if stream else [])] for stream in STREAMS])

        # No AWS keys in the replays: boto3 uses the placeholder Bedrock API key, and the fake is gone.
        return record_session(cassette, confdir, BEDROCK_REMOTE, runs, QUESTION, record_env=AWS, replay_env=REGION)

    return shared(tmp_path_factory, "bedrock-converse", make)  # once a test session (tests/once.py)


@pytest.mark.parametrize("stream", STREAMS, ids=["converse", "converse-stream"])
def test_boto3_converse_with_a_tool_round_records_and_replays_offline(stream: bool, conversed: Session) -> None:
    run = STREAMS.index(stream)
    cassette, rec = conversed.cassette, conversed.rec
    assert len(conversed.calls) == 2 * len(STREAMS)
    assert calls_per_run(load_trace(cassette)) == [2] * len(STREAMS)  # two calls a run
    calls = conversed.calls[2 * run : 2 * run + 2]
    assert outputs(rec.stdout)[run].strip() == ANSWER
    assert all(r["path"].endswith("/converse-stream" if stream else "/converse") for r in calls)
    assert all(r["headers"]["authorization"].startswith("AWS4-HMAC-SHA256") for r in calls)  # boto3 signed for real
    _assert_neutral(cassette)
    assert b"tooluse_" not in cassette.read_bytes()
    steps = load_trace(cassette).steps
    first = [i for i, s in enumerate(steps) if s.type == "model_input"][2 * run]  # this run's first call
    assert [s.type for s in steps][first : first + 6] == [
        "model_input",
        "model_output",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
    ]
    assert steps[first].payload["model"] == MODEL

    for rep in conversed.replays:
        assert rep.returncode == 0, rep.stderr
        assert rep.stdout == rec.stdout
    assert conversed.changed.returncode != 0
    assert "content differs at character 32" in conversed.changed.stderr
