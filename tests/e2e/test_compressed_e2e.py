"""End to end: a `.json.zst` cassette recorded through the real proxy, replayed offline, forked, and run as a golden.

The openai SDK agent goes through mitmproxy with real TLS interception, as in
test_record_replay.py; only the cassette's name differs. Record writes zstd
(compact JSON here), replay and fork read it, the fork's child is gzip, and
`blackbox test` replays a compressed golden.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import zstandard
from conftest import EXAMPLES, blackbox, remote_args
from fake_provider import FakeProvider
from once import shared

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_file

pytestmark = pytest.mark.e2e

AGENT = [sys.executable, str(EXAMPLES / "openai_weather_agent.py")]
QUESTION = "What's the weather in Paris and Lyon?"
SUN = '{"city": "Paris", "forecast": "sun", "celsius": 24}'


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> tuple[Path, str]:
    def make(folder: Path) -> tuple[Path, str]:
        cassette = folder / "run.json.zst"
        with FakeProvider() as provider:
            rec = blackbox(
                "record", "-o", str(cassette), "--compact", "--confdir", str(confdir), *remote_args(provider.url), "--", *AGENT, QUESTION
            )
            assert rec.returncode == 0, rec.stderr
        return cassette, rec.stdout.strip()

    return shared(tmp_path_factory, "compressed-zst", make)  # once a test session (tests/once.py)


def test_record_writes_a_zstd_cassette_that_verifies(recorded: tuple[Path, str]) -> None:
    cassette, answer = recorded
    text = zstandard.ZstdDecompressor().stream_reader(cassette.read_bytes(), read_across_frames=True).read()
    assert text.startswith(b'{"version":2,') and text.count(b"\n") == 1  # compact JSON, compressed
    assert not cassette.with_name(cassette.name + ".journal").exists()
    assert verify_file(cassette).ok
    trace = load_trace(cassette)
    assert trace.id.startswith("run-")  # named after run.json, not run.json.zst
    assert trace.steps[-1].payload["result"] == answer


def test_replay_of_the_zstd_cassette_is_offline_and_identical(recorded: tuple[Path, str], confdir: Path) -> None:
    cassette, answer = recorded
    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *AGENT, QUESTION)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout.strip() == answer
    assert "2 of 2 model calls served" in rep.stderr


def test_fork_of_the_zstd_cassette_writes_a_gzip_child(recorded: tuple[Path, str], confdir: Path, tmp_path: Path) -> None:
    cassette, _ = recorded
    child = tmp_path / "sunny.json.gz"
    script = tmp_path / "answers.json"
    script.write_text('[{"type": "final_answer", "text": "scripted sun"}]')
    args = ("--at", "3", "--tool-result", SUN, "--script", str(script), "-o", str(child), "--confdir", str(confdir))
    proc = blackbox("fork", str(cassette), *args, "--", *AGENT, QUESTION)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "scripted sun"
    assert child.read_bytes()[:2] == b"\x1f\x8b"
    parent, forked = load_trace(cassette), load_trace(child)
    assert verify_file(child).ok
    assert [s.hash for s in forked.steps[:3]] == [s.hash for s in parent.steps[:3]]
    assert forked.parentId == parent.id
    diff = blackbox("diff", str(cassette), str(child))
    assert diff.returncode == 1 and "first divergence at step 3" in diff.stdout


def test_blackbox_test_replays_a_compressed_golden(recorded: tuple[Path, str], confdir: Path, tmp_path: Path) -> None:
    cassette, _ = recorded
    goldens = tmp_path / "goldens"
    add = blackbox("golden", "add", str(cassette), "--name", "both", "--goldens", str(goldens))
    assert add.returncode == 0, add.stderr
    assert (goldens / "both.json.zst").exists()
    proc = blackbox("test", "--confdir", str(confdir), "--goldens", str(goldens), "--", *AGENT, "{input}")
    assert proc.returncode == 0, proc.stderr
    suite = ET.fromstring(proc.stdout).find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("1", "0", "0")
