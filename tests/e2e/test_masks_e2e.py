"""End to end: masks for an agent whose requests change every run, the rules in blackbox.toml, and redaction before hashing.

The agent is ``examples/volatile_agent.py`` over the official anthropic SDK: its
system prompt carries the current time and a fresh uuid, its tool result a
random trace id. Each ``blackbox`` runs as a user runs it, in the project's
folder, where it finds ``blackbox.toml`` by itself. The plain session (``SCRIPT``,
no config) is recorded once per module and replayed by each test that needs it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, remote_args
from fake_provider import FakeProvider
from once import shared

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.e2e

AGENT = [sys.executable, str(EXAMPLES / "volatile_agent.py")]
QUESTION = "Where is order 1234?"
MASKS = [r"Now: \S+", r"session [0-9a-f-]{36}", r"trace-[0-9a-f]{16}"]
EMAIL = "ada.lovelace@example.com"
SCRIPT: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "lookup_order", "arguments": {"order": "1234"}}]},
    {"text": "Order 1234 has shipped."},
]


def run(args: list[str], *, cwd: Path, config: str | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and k != "BLACKBOX_CONFIG"}
    env["ANTHROPIC_API_KEY"] = "sk-ant-test-not-a-real-key-0000"
    if config is not None:
        env["BLACKBOX_CONFIG"] = config
    return subprocess.run([sys.executable, "-m", "blackbox_mitm", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def toml_list(patterns: list[str]) -> str:
    return "[" + ", ".join("'" + p + "'" for p in patterns) + "]"  # TOML literal strings: no escapes


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The volatile agent's session, recorded in a folder with no blackbox.toml: (its cassette, the recording run)."""

    def make(folder: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
        cassette = folder / "run.json"
        with FakeProvider(SCRIPT) as provider:
            rec = run(
                ["record", "-o", str(cassette), "--confdir", str(confdir), *remote_args(provider.url), "--", *AGENT, QUESTION], cwd=folder
            )
        assert rec.returncode == 0, rec.stderr
        assert rec.stdout.strip() == "Order 1234 has shipped."
        return cassette, rec

    return shared(tmp_path_factory, "masks-recorded", make)  # once a test session (tests/once.py)


def test_masks_make_a_volatile_agent_replay_strictly_from_flags_and_from_blackbox_toml(
    recorded: tuple[Path, subprocess.CompletedProcess[str]], project: Path, confdir: Path
) -> None:
    cassette, rec = recorded

    bare = run(["replay", str(cassette), "--confdir", str(confdir), "--", *AGENT, QUESTION], cwd=project)
    assert bare.returncode == 1
    place = re.search(r"system prompt differs at character (\d+)", bare.stderr)
    assert place is not None, bare.stderr
    # Inside the volatile part: after "You track orders. Now: " (the quote around it shows as much as fits).
    assert int(place[1]) >= len("You track orders. Now: "), bare.stderr

    flags = [arg for m in MASKS for arg in ("--mask", m)]
    for _ in range(3):
        masked = run(["replay", str(cassette), "--confdir", str(confdir), *flags, "--", *AGENT, QUESTION], cwd=project)
        assert masked.returncode == 0, masked.stderr
        assert masked.stdout == rec.stdout
        assert "2 of 2 model calls served from the recording, no divergence" in masked.stderr

    # Two masks out of three: the report names the place, in the tool result the trace id is in.
    partial = run(["replay", str(cassette), "--confdir", str(confdir), *flags[:4], "--", *AGENT, QUESTION], cwd=project)
    assert partial.returncode == 1
    assert "message 2 (user): content differs" in partial.stderr and "trace-" in partial.stderr

    (project / "blackbox.toml").write_text(f"mask = {toml_list(MASKS)}\n")
    sub = project / "sub"
    sub.mkdir()
    shown = run(["config"], cwd=sub)
    assert shown.returncode == 0, shown.stderr
    assert f"config: {project / 'blackbox.toml'}" in shown.stdout
    assert re.search(rf"\n  mask-1 +{re.escape(MASKS[0])}  \({re.escape(str(project / 'blackbox.toml'))}\)\n", shown.stdout), shown.stdout
    from_file = run(["replay", str(cassette), "--confdir", str(confdir), "--", *AGENT, QUESTION], cwd=sub)
    assert from_file.returncode == 0, from_file.stderr
    assert from_file.stdout == rec.stdout

    # One of the file's masks left out by name, for one run: the trace id in the tool result differs again.
    shown = run(["config", "--no-mask", "mask-3"], cwd=sub)
    assert "masks off: mask-3 (--no-mask)\n" in shown.stdout and "mask-3 " not in shown.stdout.split("\nmasks:\n")[1], shown.stdout
    fewer = run(["replay", str(cassette), "--confdir", str(confdir), "--no-mask", "mask-3", "--", *AGENT, QUESTION], cwd=sub)
    assert fewer.returncode == 1
    assert "message 2 (user): content differs" in fewer.stderr and "trace-" in fewer.stderr


def test_a_bad_project_config_stops_the_command_with_a_named_error(project: Path, confdir: Path) -> None:
    (project / "blackbox.toml").write_text("mask = ['(unclosed']\n")
    proc = run(["replay", str(project / "missing.json"), "--confdir", str(confdir), "--", *AGENT, QUESTION], cwd=project)
    assert proc.returncode == 2
    assert "is not a regular expression" in proc.stderr and "blackbox.toml" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_email_redacted_at_record_is_in_no_payload_and_the_run_replays_strictly(project: Path, confdir: Path) -> None:
    question = f"Where is order 1234? Mail {EMAIL} when it ships."
    script = [SCRIPT[0], {"text": f"Order 1234 has shipped; I mailed {EMAIL}."}]
    config = project / "blackbox.toml"
    config.write_text(
        f"mask = {toml_list(MASKS)}\nredact = [{{name = 'email', pattern = '[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{{2,}}'}}]\n"
    )
    cassette = project / "run.json"
    journal = project / "journal-while-recording"
    # The journal exists while the recording runs: copy it as the agent exits, before blackbox turns it into the cassette.
    shell = f"{subprocess.list2cmdline([*AGENT, question])} && cp {cassette}.journal {journal}"
    with FakeProvider(script) as provider:
        rec = run(
            ["record", "-o", str(cassette), "--confdir", str(confdir), *remote_args(provider.url), "--", "sh", "-c", shell], cwd=project
        )
        sent = [r["body"] for r in provider.requests if r["provider"] == "anthropic"]
    assert rec.returncode == 0, rec.stderr
    assert EMAIL in rec.stdout  # the agent got the real answer
    assert all(EMAIL in str(body["messages"][0]["content"]) for body in sent)  # and the provider the real question

    assert EMAIL.encode() not in cassette.read_bytes()
    assert EMAIL.encode() not in journal.read_bytes() and journal.stat().st_size > 0
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    assert trace.steps[0].payload["messages"][0]["content"] == "Where is order 1234? Mail <redacted:email> when it ships."
    assert "<redacted:email>" in trace.steps[-2].payload["text"]  # the answer too
    assert EMAIL not in str(trace.steps[-1].payload)  # and the terminal event's result

    same = run(["replay", str(cassette), "--confdir", str(confdir), "--", *AGENT, question], cwd=project)
    assert same.returncode == 0, same.stderr
    assert same.stdout.strip() == "Order 1234 has shipped; I mailed <redacted:email>."  # what the cassette holds

    masks_only = project / "masks-only.toml"
    masks_only.write_text(f"mask = {toml_list(MASKS)}\n")
    unredacted = run(["replay", str(cassette), "--confdir", str(confdir), "--", *AGENT, question], cwd=project, config=str(masks_only))
    assert unredacted.returncode == 1
    assert "this replay redacts nothing" in unredacted.stderr and "(email)" in unredacted.stderr


def test_the_pytest_marker_takes_masks(
    recorded: tuple[Path, subprocess.CompletedProcess[str]], confdir: Path, pytester: pytest.Pytester
) -> None:
    cassette, rec = recorded
    assert rec.returncode == 0, rec.stderr
    pytester.makepyfile(
        f"""
        import subprocess
        import pytest

        AGENT = {AGENT!r}

        def agent(tape):
            return subprocess.run([*AGENT, {QUESTION!r}], env=tape.env(), capture_output=True, text=True)

        @pytest.mark.blackbox_tape({str(cassette)!r}, mask={MASKS!r})
        def test_masked(blackbox_tape):
            assert agent(blackbox_tape).stdout.strip() == "Order 1234 has shipped."

        @pytest.mark.blackbox_tape({str(cassette)!r})
        def test_unmasked(blackbox_tape):
            agent(blackbox_tape)

        @pytest.mark.blackbox_tape({str(cassette)!r}, masks=["x"])
        def test_misspelt(blackbox_tape):
            pass
        """
    )
    mp = pytest.MonkeyPatch()
    try:
        mp.setenv("BLACKBOX_CONFIG", "")
        mp.delenv("CI", raising=False)
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--blackbox-confdir={confdir}", timeout=240)
    finally:
        mp.undo()
    result.assert_outcomes(passed=1, failed=1, errors=1)
    result.stdout.fnmatch_lines(["*has no 'masks'; it takes mode, mask, redact, pace, default_masks*"])
    result.stdout.fnmatch_lines(["*TapeMismatch*", "*system prompt differs at character*"])


def test_a_golden_keeps_its_masks_and_blackbox_test_uses_them(
    recorded: tuple[Path, subprocess.CompletedProcess[str]], project: Path, confdir: Path
) -> None:
    cassette, rec = recorded
    assert rec.returncode == 0, rec.stderr
    goldens = project / "goldens"
    test = ["test", "--goldens", str(goldens), "--confdir", str(confdir), "--", *AGENT, "{input}"]

    plain = run(["golden", "add", str(cassette), "--goldens", str(goldens), "--name", "plain"], cwd=project)
    assert plain.returncode == 0, plain.stderr
    failing = run(test, cwd=project)
    assert failing.returncode == 1 and "system prompt differs" in failing.stderr

    flags = [arg for m in MASKS for arg in ("--mask", m)]
    added = run(["golden", "add", str(cassette), "--goldens", str(goldens), "--name", "plain", "--overwrite", *flags], cwd=project)
    assert added.returncode == 0, added.stderr
    assert f"its replay settings are in {goldens / 'plain.blackbox.toml'}" in added.stdout
    passing = run(test, cwd=project)
    assert passing.returncode == 0, passing.stderr
    assert "1 golden, 1 passed" in passing.stderr
    # The suite's own --no-mask leaves out the golden's third mask (named mask-3 in its settings): its trace id differs.
    fewer = run([*test[:5], "--no-mask", "mask-3", *test[5:]], cwd=project)
    assert fewer.returncode == 1 and "trace-" in fewer.stderr, fewer.stderr
    unknown = run([*test[:5], "--no-mask", "mask-4", *test[5:]], cwd=project)
    assert unknown.returncode == 2 and "no golden, config or built-in rule has a mask named 'mask-4'" in unknown.stderr


# One call with a prompt of 1 MB; prints the status and the answer.
BIG_PROMPT_AGENT = r"""
import json, sys
import httpx2 as httpx
body = json.dumps({"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "a" * 1_000_000 + "!"}]})
r = httpx.post("https://api.openai.com/v1/chat/completions", content=body.encode(), timeout=120,
               headers={"content-type": "application/json", "authorization": "Bearer sk-test-not-a-real-key-000"})
print(r.status_code, r.text[:200].replace("\n", " "))
"""
# Patterns that backtrack exponentially on "aaa…a!" in a backtracking engine (Python's re): seconds become centuries.
HANGS_A_BACKTRACKER = [r"(a+)+$", r"(a|aa)*b"]


def test_a_mask_or_redaction_rule_cannot_hang_a_replay_of_a_big_prompt(project: Path, confdir: Path) -> None:
    agent = project / "big.py"
    agent.write_text(BIG_PROMPT_AGENT)
    cassette = project / "big.json"
    redact = [arg for p in HANGS_A_BACKTRACKER for arg in ("--redact", p)]
    with FakeProvider([{"text": "long read"}]) as provider:
        rec = run(
            [
                "record",
                "-o",
                str(cassette),
                *redact,
                "--confdir",
                str(confdir),
                *remote_args(provider.url),
                "--",
                sys.executable,
                str(agent),
            ],
            cwd=project,
            timeout=300,
        )
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout.startswith("200")
    for pattern in HANGS_A_BACKTRACKER:
        # A generous timeout: RE2 takes milliseconds here; a backtracking engine would not finish at all.
        rep = run(
            ["replay", str(cassette), "--mask", pattern, "--confdir", str(confdir), "--", sys.executable, str(agent)],
            cwd=project,
            timeout=300,
        )
        assert rep.returncode == 0, (pattern, rep.stderr)
        assert rep.stdout.startswith("200") and "long read" in rep.stdout


def test_a_pattern_re2_cannot_run_is_refused_by_name_with_what_to_write_instead(project: Path) -> None:
    bad = run(["replay", "run.json", "--mask", r"(?<=session )[0-9a-f]{8}", "--", "true"], cwd=project)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "mask 'mask-1' (from --mask) is a Python regular expression but not RE2 syntax" in bad.stderr
    assert "(?P<mask>" in bad.stderr
    backref = run(["record", "-o", "x.json", "--redact", r"(\w)\1", "--", "true"], cwd=project)
    assert backref.returncode == 2 and "Traceback" not in backref.stderr
    assert "redaction rule" in backref.stderr and "not RE2 syntax" in backref.stderr and "backreferences" in backref.stderr
