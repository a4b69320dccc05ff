"""End to end: Codex (pinned) with an Azure OpenAI provider (``wire_api = "responses"``), recorded and replayed offline.

The provider is configured as Azure's docs for Codex give it: ``base_url``
``https://{resource}.openai.azure.com/openai``, the key from ``AZURE_OPENAI_API_KEY``,
``api-version`` in ``query_params``. ``--map-remote`` sends the resource (and the
other hosts Codex asks) to the fake Responses API on 127.0.0.1. The cassette holds
neither the key, the resource nor the api-version; the replay needs no key.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, ROOT
from fake_responses_ws import FakeResponsesWs

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

CODEX = ROOT / "tests" / "e2e" / "clients" / "codex" / "node_modules" / ".bin" / "codex"
KEY = "3f9c1a7be2d84c60b5e9a1d7c4f20e8b"
PROMPT = "Run echo hello-from-codex and tell me what it printed."
SCRIPT: list[dict[str, Any]] = json.loads((EXAMPLES / "codex_script.json").read_text())
AZURE = [
    "-c",
    'model_provider="azure"',
    "-c",
    'model_providers.azure={name="Azure OpenAI",base_url="https://contoso-eastus.openai.azure.com/openai",'
    'env_key="AZURE_OPENAI_API_KEY",wire_api="responses",query_params={api-version="2025-04-01-preview"}}',
]
OTHER_HOSTS = ("chatgpt.com", "ab.chatgpt.com", "api.github.com")  # what Codex asks besides its provider (tests/e2e/test_codex.py)


def _blackbox(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k.lower() not in ("https_proxy", "http_proxy", "openai_api_key", "azure_openai_api_key")}
    full.update(env)
    return subprocess.run([sys.executable, "-m", "blackbox_mitm", *args], env=full, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=240, cwd=ROOT)  # fmt: skip


def test_codex_with_an_azure_provider_records_and_replays_offline(tmp_path: Path, confdir: Path) -> None:
    if not CODEX.exists():
        pytest.fail(f"Codex is not installed at {CODEX}; scripts/setup installs it")
    home, work = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {"CODEX_HOME": str(home), "NO_COLOR": "1"}
    command = [str(CODEX), "exec", "--skip-git-repo-check", "--ephemeral", "-C", str(work), *AZURE]
    cassette = tmp_path / "run.json"
    with FakeResponsesWs(SCRIPT) as fake:
        remote = ["--map-remote", rf"|https://contoso-eastus\.openai\.azure\.com|{fake.url}"]
        for host in OTHER_HOSTS:
            remote += ["--host", host, "--map-remote", f"|https://{re.escape(host)}|{fake.url}"]
        rec = _blackbox(
            ["record", "-o", str(cassette), "--confdir", str(confdir), *remote, "--", *command, PROMPT],
            {**env, "AZURE_OPENAI_API_KEY": KEY},
        )
        assert rec.returncode == 0, rec.stderr[-3000:]
        calls = [r for r in fake.requests if r["call"]]
    assert len(calls) == 2
    assert all(r["path"].startswith("/openai/responses?api-version=2025-04-01-preview") for r in calls), [r["path"] for r in calls]
    assert rec.stdout.strip().endswith("The command printed hello-from-codex.")
    assert verify_trace(load_trace(cassette)) == []
    raw = cassette.read_bytes()
    for banned in (KEY, "contoso", "openai.azure.com", "api-version", "2025-04-01"):  # (the tmp path holds "azure")
        assert banned.encode() not in raw, banned

    rep = _blackbox(["replay", str(cassette), "--confdir", str(confdir), "--", *command, PROMPT], env)
    assert rep.returncode == 0, rep.stderr[-3000:]
    assert rep.stdout == rec.stdout
    changed = _blackbox(["replay", str(cassette), "--confdir", str(confdir), "--", *command, PROMPT.replace("hello", "goodbye")], env)
    assert changed.returncode != 0
