"""End to end: Claude Code (pinned) on Amazon Bedrock and on Google Vertex AI, recorded, then replayed strictly.

``CLAUDE_CODE_USE_BEDROCK=1`` (fake AWS keys: it signs with SigV4, in the replay too) and
``CLAUDE_CODE_USE_VERTEX=1`` (``CLAUDE_CODE_SKIP_VERTEX_AUTH=1``: no Google
credentials on this machine) send its Messages calls to the clouds' default
hosts; ``--map-remote`` sends them to the fake cloud (examples/fake_clouds.py),
scripted by ``examples/claude_code_model.py`` as tests/e2e/test_claude_code.py
scripts the Anthropic API. A replay runs offline, three times with the same
output, checking no signature; a changed prompt fails it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from claude_code_model import respond
from conftest import ROOT
from fake_clouds import FakeClouds

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

CLAUDE = ROOT / "tests" / "e2e" / "clients" / "claude-code" / "node_modules" / ".bin" / "claude"
PROMPT = "BB-READ: what is the first line of notes.txt?"
ACCESS_KEY = "AKIAZ7QK3MXP4TBN2WLE"
CLOUDS = {
    "bedrock": (
        r"|https://bedrock-runtime\.us-east-1\.amazonaws\.com|",
        {"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1"},
        {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": "q8Vt2nR5wXz1Lm4Kp7Hs9Dg3Jf6Bc0Na2Ye5Ui8O"},
        # The same keys in the replay: with credentials Claude Code makes model calls it skips under
        # CLAUDE_CODE_SKIP_BEDROCK_AUTH=1, so a replay runs the way the recording ran (the keys are never checked).
        {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": "q8Vt2nR5wXz1Lm4Kp7Hs9Dg3Jf6Bc0Na2Ye5Ui8O"},
    ),
    "vertex": (
        r"|https://us-east5-aiplatform\.googleapis\.com|",
        {"CLAUDE_CODE_USE_VERTEX": "1", "CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "acme-prod-417203"},
        {"CLAUDE_CODE_SKIP_VERTEX_AUTH": "1"},
        {"CLAUDE_CODE_SKIP_VERTEX_AUTH": "1"},
    ),
}


def _run(args: list[str], work: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.lower().endswith("_proxy") and not k.startswith(("CLAUDE", "ANTHROPIC", "AWS", "CLOUD_ML"))
    }
    env.update(HOME=str(work.parent / "home"), BLACKBOX_CONFIG="", **env_extra)
    return subprocess.run([sys.executable, "-m", "blackbox_mitm", *args], cwd=work, env=env, capture_output=True, text=True, timeout=240)


@pytest.mark.parametrize("cloud", list(CLOUDS))
def test_claude_code_on_a_cloud_records_and_replays_strictly(cloud: str, tmp_path: Path, confdir: Path) -> None:
    if not CLAUDE.exists():
        pytest.fail(f"Claude Code is not installed at {CLAUDE}; scripts/setup installs it")
    remote, common, record_auth, replay_auth = CLOUDS[cloud]
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "home").mkdir()
    (work / "notes.txt").write_text("Blackbox notes\nsecond line\n")
    cassette = tmp_path / "run.json"
    with FakeClouds(responder=respond, vertex_auth=False) as fake:
        rec = _run(["record", "-o", str(cassette), "--confdir", str(confdir), "--map-remote", remote + fake.url, "--", str(CLAUDE), "-p", PROMPT],
                   work, {**common, **record_auth})  # fmt: skip
        assert rec.returncode == 0, rec.stdout + rec.stderr + repr(fake.requests[:2])
        paths = [r["path"] for r in fake.requests]
        if cloud == "bedrock":
            assert all(r["headers"]["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/") for r in fake.requests)
    assert rec.stdout.strip() == "The first line of notes.txt is: Blackbox notes"
    assert any(p.endswith(("/invoke-with-response-stream", ":streamRawPredict")) for p in paths)  # it streamed through the cloud
    assert verify_trace(load_trace(cassette)) == []
    raw = cassette.read_bytes()
    for banned in (ACCESS_KEY, "AWS4-HMAC", "us-east-1", "us-east5", "acme-prod", "amazonaws", "googleapis", "toolu_"):
        assert banned.encode() not in raw, banned
    calls = sum(1 for s in load_trace(cassette).steps if s.type == "model_input")

    for _ in range(3):
        rep = _run(["replay", str(cassette), "--confdir", str(confdir), "--", str(CLAUDE), "-p", PROMPT], work, {**common, **replay_auth})
        assert rep.returncode == 0, rep.stderr
        assert rep.stdout == rec.stdout
        assert f"{calls} of {calls} model calls served from the recording, no divergence" in rep.stderr
    changed = _run(["replay", str(cassette), "--confdir", str(confdir), "--", str(CLAUDE), "-p", PROMPT.replace("first", "second")],
                   work, {**common, **replay_auth})  # fmt: skip
    assert changed.returncode != 0
