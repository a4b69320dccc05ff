"""End to end: nothing the agent saw goes unrecorded, whatever goes wrong (a real `blackbox record` process).

* a full disk mid-run (RLIMIT_FSIZE on the recorder: its writes fail as on a full disk):
  every call the agent got an answer for is in the journal; the rest failed for the agent;
  `blackbox record` exits non-zero with the reason, and no traceback;
* a lone surrogate escape in a prompt (a JavaScript agent cutting an emoji in half) is recorded;
* a body nested 10,000 deep is refused with a named error, and the run fails;
* a number no cassette can hold (``temperature: 1e400``) is refused by name when the call
  is made, and the run's other calls (a lone surrogate among them) are saved and verify.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, remote_args
from fake_provider import FakeProvider

from blackbox_mitm.cassette import journal_path, load_trace
from blackbox_mitm.codecs.verified import load_verified
from blackbox_mitm.proxy.environment import client_env

pytestmark = pytest.mark.e2e

# The recorder's environment (no bytecode written: a write limit must not break the interpreter's cache).
ENV = {"OPENAI_API_KEY": "sk-test-not-a-real-key-000", "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}

# Five one-shot calls; prints what it got for each, and carries on past an error.
AGENT = r"""
import sys
import openai
client = openai.OpenAI(max_retries=0)
for i in range(int(sys.argv[1])):
    content = sys.argv[2] if len(sys.argv) > 2 else f"call {i}: " + "x" * 300
    try:
        r = client.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": content}])
        print("answer", i, flush=True)
    except openai.APIError as exc:
        print("error", i, type(exc).__name__, str(exc)[:200], flush=True)
"""

RAW_AGENT = r"""
import json, sys
import httpx2 as httpx
body = sys.argv[1].encode()
r = httpx.post("https://api.openai.com/v1/chat/completions", content=body, headers={"content-type": "application/json",
               "authorization": "Bearer sk-test-not-a-real-key-000"}, timeout=30)
print(r.status_code, r.text[:300])
"""

# Several raw bodies, one call each (the SDKs would not send NaN or 1e400): prints each status.
RAW_CALLS = r"""
import json, sys
import httpx2 as httpx
for body in json.loads(sys.argv[1]):
    r = httpx.post("https://api.openai.com/v1/chat/completions", content=body.encode(), headers={"content-type": "application/json",
                   "authorization": "Bearer sk-test-not-a-real-key-000"}, timeout=30)
    print(r.status_code, r.text[:300].replace("\n", " "), flush=True)
"""


def _record(
    tmp_path: Path, confdir: Path, provider: FakeProvider, argv: list[str], *, fsize: int | None = None
) -> subprocess.CompletedProcess[str]:
    cassette = tmp_path / "run.json"
    env = dict(ENV)

    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    cmd = [
        sys.executable,
        "-m",
        "blackbox_mitm",
        "record",
        "-o",
        str(cassette),
        "--confdir",
        str(confdir),
        *remote_args(provider.url),
        "--",
        *argv,
    ]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180, cwd=ROOT, preexec_fn=limit)


def test_a_full_disk_fails_the_calls_it_cannot_record_and_the_run(tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    client_env("http://127.0.0.1:1", confdir=confdir, base=dict(ENV))  # the CA and its bundles exist before the disk "fills"
    with FakeProvider() as provider:
        rec = _record(tmp_path, confdir, provider, [sys.executable, str(agent), "8", "y" * 2000], fsize=12_000)
    answered = [line for line in rec.stdout.splitlines() if line.startswith("answer")]
    failed = [line for line in rec.stdout.splitlines() if line.startswith("error")]
    assert answered and failed, rec.stdout + rec.stderr
    assert rec.returncode != 0
    assert "Traceback" not in rec.stderr
    assert "could not record" in rec.stderr or "could not be written" in rec.stderr
    # Every answer the agent saw is durable: in the journal left for `blackbox recover`, or in the cassette.
    cassette = tmp_path / "run.json"
    journal = journal_path(cassette)
    if journal.exists():
        outputs = sum(_outputs_in_line(line) for line in journal.read_bytes().splitlines()[1:])
    else:
        outputs = sum(1 for s in load_trace(cassette).steps if s.type == "model_output")
    assert outputs == len(answered), (rec.stdout, rec.stderr)


def _outputs_in_line(line: bytes) -> int:
    """The model_output steps of one journal batch (a JSON list of steps)."""
    try:
        batch = json.loads(line)
    except ValueError:
        return 0
    return sum(1 for step in batch if isinstance(step, dict) and step.get("type") == "model_output") if isinstance(batch, list) else 0


def test_a_lone_surrogate_in_a_prompt_is_recorded(tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "raw.py"
    agent.write_text(RAW_AGENT)
    body = '{"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "half an emoji \\ud83d"}]}'
    with FakeProvider([{"text": "whole"}]) as provider:
        rec = _record(tmp_path, confdir, provider, [sys.executable, str(agent), body])
    assert rec.returncode == 0, rec.stdout + rec.stderr
    assert rec.stdout.startswith("200")
    trace = load_trace(tmp_path / "run.json")
    inputs = [s.payload for s in trace.steps if s.type == "model_input"]
    assert inputs and inputs[0]["messages"][0]["content"] == "half an emoji \ud83d"


def test_a_body_nested_ten_thousand_deep_is_refused_by_name(tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "raw.py"
    agent.write_text(RAW_AGENT)
    body = '{"model": "m", "messages": [{"role": "user", "content": ' + "[" * 10_000 + "]" * 10_000 + "}]}"
    with FakeProvider() as provider:
        rec = _record(tmp_path, confdir, provider, [sys.executable, str(agent), body])
        assert provider.requests == []  # never forwarded
    assert rec.stdout.startswith("400") and "BlackboxUnsupportedError" in rec.stdout
    assert rec.returncode != 0 and "refused" in rec.stderr


def test_a_number_no_cassette_can_hold_is_refused_and_the_rest_of_the_run_is_saved(tmp_path: Path, confdir: Path) -> None:
    agent = tmp_path / "raw.py"
    agent.write_text(RAW_CALLS)
    surrogate = '{"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "half an emoji \\ud83d"}]}'
    huge = '{"model": "gpt-4.1-mini", "temperature": 1e400, "messages": [{"role": "user", "content": "hot"}]}'
    normal = '{"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hello"}]}'
    with FakeProvider([{"text": "whole"}, {"text": "fine"}]) as provider:
        rec = _record(tmp_path, confdir, provider, [sys.executable, str(agent), json.dumps([surrogate, huge, normal])])
        assert len(provider.requests) == 2  # the refused call never went upstream
    statuses = rec.stdout.splitlines()
    assert [line[:3] for line in statuses] == ["200", "400", "200"], rec.stdout + rec.stderr
    assert "BlackboxUnsupportedError: body.temperature" in statuses[1] and "1e400" in statuses[1]
    # `record` ends as it does for any refused call: exit 1, the refusal named, no traceback ...
    assert rec.returncode == 1, rec.stderr
    assert "Traceback" not in rec.stderr and "body.temperature" in rec.stderr
    assert "does not hold every call the agent made" in rec.stderr
    # ... and the cassette is saved (no journal left behind) and verifies, with the two calls the agent got answers for.
    assert not journal_path(tmp_path / "run.json").exists()
    trace = load_verified(tmp_path / "run.json")
    inputs = [s.payload for s in trace.steps if s.type == "model_input"]
    assert [i["messages"][-1]["content"] for i in inputs] == ["half an emoji \ud83d", "hello"]
    assert sum(1 for s in trace.steps if s.type == "model_output") == 2
    check = subprocess.run([sys.executable, "-m", "blackbox_mitm", "verify", str(tmp_path / "run.json")], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
