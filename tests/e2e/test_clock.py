"""End to end: ``blackbox replay --clock recorded`` runs Claude Code (a dynamically linked binary) on the recorded run's clock.

Claude Code writes today's date into its context. The run is recorded as if
yesterday: Claude Code runs under libfaketime set a day back, and the
cassette's start (``createdAt``, a trace field outside the hash chain) is set
to that moment. Recorded and replayed without environment substitution and
with the date mask off (so that the date is compared as it was sent), the
replay with ``--clock recorded`` passes strictly — Claude Code said
yesterday's date again — and the replay on the real clock diverges at the date.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from claude_code_model import respond
from conftest import ROOT, remote_args
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace
from blackbox_mitm.matcher.masks import BUILT_IN_MASKS
from blackbox_mitm.proxy.clock import find_libfaketime

pytestmark = pytest.mark.e2e

CLAUDE = ROOT / "tests" / "e2e" / "clients" / "claude-code" / "node_modules" / ".bin" / "claude"
PROMPT = "BB-READ: what is the first line of notes.txt?"
BILLING = next(m.pattern for m in BUILT_IN_MASKS if m.name == "claude-code.billing")


def _blackbox(args: list[str], *, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and not k.startswith(("CLAUDE", "ANTHROPIC"))}
    env.update(HOME=str(cwd.parent / "home"), ANTHROPIC_API_KEY="sk-ant-test-not-a-real-key-0000", BLACKBOX_CONFIG="", TZ="UTC")
    return subprocess.run([sys.executable, "-m", "blackbox_mitm", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=240)


def test_claude_code_replays_on_the_recorded_clock(tmp_path: Path, confdir: Path) -> None:
    if not CLAUDE.exists():
        pytest.fail(f"Claude Code is not installed at {CLAUDE}; scripts/setup-test-clients installs it")
    lib = find_libfaketime()  # scripts/setup-test-clients installs Debian's faketime
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "home").mkdir()
    (work / "notes.txt").write_text("Blackbox notes\nsecond line\n")
    yesterday = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(days=1)
    # Claude Code alone on yesterday's clock (env -u: the preloaded `env` shares no clock state with it).
    on_yesterday = ["env", f"LD_PRELOAD={lib}", f"FAKETIME=@{yesterday:%Y-%m-%d %H:%M:%S}", "env", "-u", "FAKETIME_SHARED"]
    cassette = tmp_path / "read.json"
    with FakeProvider(responder=respond) as provider:
        record = ["record", "-o", str(cassette), "--no-env-substitution", "--confdir", str(confdir), *remote_args(provider.url)]
        rec = _blackbox([*record, "--", *on_yesterday, str(CLAUDE), "-p", PROMPT], cwd=work)
    assert rec.returncode == 0, rec.stderr
    data = json.loads(cassette.read_text())
    assert f"Today's date is {yesterday.date().isoformat()}" in json.dumps(data["steps"][0]["payload"])
    data["createdAt"] = int(yesterday.timestamp() * 1000)  # the run was recorded yesterday
    cassette.write_text(json.dumps(data))
    assert verify_trace(load_trace(cassette)) == []

    compare = ["--no-env-substitution", "--no-default-masks", "--mask", BILLING]  # the date is compared as sent
    replay = ["replay", str(cassette), "--confdir", str(confdir), *compare]
    rep = _blackbox([*replay, "--clock", "recorded", "--", str(CLAUDE), "-p", PROMPT], cwd=work)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert "2 of 2 model calls served from the recording, no divergence" in rep.stderr
    today = _blackbox([*replay, "--", str(CLAUDE), "-p", PROMPT], cwd=work)
    assert today.returncode != 0
    assert "diverged" in today.stderr and dt.datetime.now(dt.UTC).date().isoformat() in today.stderr
