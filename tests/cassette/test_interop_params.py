"""A cassette from another implementation, with the spec's request-control names in ``params``, verifies and replays.

``make_js_spec_params.js`` writes, in JavaScript from the spec alone, a run whose
``params`` say ``max_tokens`` / ``top_p`` (and Anthropic's ``top_k`` /
``stop_sequences`` / ``output_config``) where Blackbox writes ``maxTokens`` /
``topP``. Verify must pass it; strict replay must take ``top_p`` for ``topP``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cassette_builders import CASSETTES
from click.testing import CliRunner
from conftest import blackbox

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.cli import main
from blackbox_mitm.codecs import CallIds, openai_chat
from blackbox_mitm.codecs.verified import load_verified, verify_file
from blackbox_mitm.matcher import Divergence, RecordedCalls, Served

QUESTION = "What is the capital of France?"
ANSWER = "Paris."

AGENT = """
import sys
import openai

client = openai.OpenAI(max_retries=0)
reply = client.chat.completions.create(
    model="gpt-4o-mini",
    messages=[{"role": "user", "content": sys.argv[1]}],
    max_tokens=64,
    top_p=0.5,
    temperature=0.2,
)
print(reply.choices[0].message.content)
"""


@pytest.fixture(scope="module")
def js_cassettes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    node = shutil.which("node")
    assert node, "node is needed for the interop tests (scripts/setup checks for it)"
    out = tmp_path_factory.mktemp("js-spec-params")
    subprocess.run([node, str(CASSETTES / "make_js_spec_params.js"), str(out), QUESTION, ANSWER], check=True, timeout=60)
    return out


def _request(**controls: object) -> bytes:
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": QUESTION}], **controls}
    return json.dumps(body).encode()


@pytest.mark.parametrize("name", ["js_spec_params.json", "js_spec_params_anthropic.json"])
def test_a_cassette_with_the_specs_control_names_verifies(js_cassettes: Path, name: str) -> None:
    path = js_cassettes / name
    assert "max_tokens" in load_trace(path, recover=False).steps[0].payload["params"]
    result = verify_file(path)
    assert result.ok, result.problems
    cli = CliRunner().invoke(main, ["verify", str(path)])
    assert cli.exit_code == 0 and cli.output.startswith("OK ")


def test_strict_replay_takes_the_specs_names_for_ours(js_cassettes: Path) -> None:
    calls = RecordedCalls(load_verified(js_cassettes / "js_spec_params.json", recover=False))
    decoded = openai_chat.decode_request(_request(max_tokens=64, top_p=0.5, temperature=0.2), CallIds(), path="/v1/chat/completions")
    assert decoded.model_input["params"] == {"maxTokens": 64, "topP": 0.5, "temperature": 0.2}
    served = calls.match(decoded.model_input, mode="strict")
    assert isinstance(served, Served) and served.call.output["text"] == ANSWER


def test_a_different_control_value_still_diverges_under_our_name(js_cassettes: Path) -> None:
    calls = RecordedCalls(load_verified(js_cassettes / "js_spec_params.json", recover=False))
    decoded = openai_chat.decode_request(_request(max_tokens=64, top_p=0.9, temperature=0.2), CallIds(), path="/v1/chat/completions")
    diverged = calls.match(decoded.model_input, mode="strict")
    assert isinstance(diverged, Divergence) and diverged.difference is not None
    assert diverged.difference.field == "params.topP"


@pytest.mark.e2e
def test_the_official_sdk_replays_the_js_cassette_offline(js_cassettes: Path, tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    report = tmp_path / "report.json"
    result = blackbox(
        "replay",
        str(js_cassettes / "js_spec_params.json"),
        "--report",
        str(report),
        "--",
        sys.executable,
        str(agent),
        QUESTION,
        env={"BLACKBOX_CONFDIR": str(confdir)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == ANSWER
    status = json.loads(report.read_text())
    assert status["first_divergence"] is None and status["steps_served"] == 2
