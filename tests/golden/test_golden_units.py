"""The golden runner's parts without a proxy: the tail buffer, the XML sanitizer, the JUnit shape,
classification, placeholders, the run's input, and the subprocess runner's timeout and tails."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from blackbox_mitm.cassette import Trace
from blackbox_mitm.golden.junit import build_junit, junit_bytes, stream_text, xml_text
from blackbox_mitm.golden.runner import (
    TAIL_BYTES,
    GoldenResult,
    ProcessResult,
    TailBuffer,
    classify,
    golden_env,
    run_golden,
    run_process,
    substitute,
)
from blackbox_mitm.golden.suite import GoldenCase, run_input
from blackbox_mitm.proxy.environment import REPLAY_PLACEHOLDER_KEY

# --------------------------------------------------------------------------- TailBuffer


def test_tail_buffer_keeps_everything_under_its_limit() -> None:
    buf = TailBuffer(10)
    buf.write(b"abc")
    buf.write(b"defg")
    assert buf.getvalue() == b"abcdefg"
    assert (buf.total, buf.dropped) == (7, 0)


@pytest.mark.parametrize(
    "chunks",
    [[b"0123456789", b"ab"], [b"01234", b"56789", b"ab"], [b"0123456789ab"], [b"", b"0123456789ab", b""], [b"x" * 100, b"0123456789ab"]],
)
def test_tail_buffer_keeps_the_last_bytes_whatever_the_chunking(chunks: list[bytes]) -> None:
    buf = TailBuffer(10)
    for chunk in chunks:
        buf.write(chunk)
    data = b"".join(chunks)
    assert buf.getvalue() == data[-10:]
    assert buf.total == len(data)
    assert buf.dropped == len(data) - 10


def test_tail_buffer_never_grows_past_its_limit() -> None:
    buf = TailBuffer(TAIL_BYTES)
    for i in range(2000):
        buf.write(bytes([65 + i % 26]) * 1000)
        assert len(buf.getvalue()) <= TAIL_BYTES
    assert buf.total == 2_000_000
    assert len(buf.getvalue()) == TAIL_BYTES


def test_tail_text_drops_a_character_cut_in_half_and_replaces_bad_bytes() -> None:
    buf = TailBuffer(4)
    buf.write("aé€".encode())  # 1 + 2 + 3 bytes: a 4-byte tail starts inside é
    assert buf.getvalue() == "é€".encode()[1:]
    assert buf.text() == "€"
    whole = TailBuffer(10)
    whole.write(b"ok\xff\xfe!")
    assert whole.text() == "ok\ufffd\ufffd!"


# --------------------------------------------------------------------------- XML sanitizer and JUnit


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("plain text", "plain text"),
        ("tab\tnewline\ncr\r", "tab\tnewline\ncr\r"),
        ("\x00nul\x01\x08\x0b\x0c\x1b[31mred\x1f", "nul[31mred"),
        ("\x7f\x85 allowed", "\x7f\x85 allowed"),
        ("lone \ud83d high, lone \ude00 low", "lone  high, lone  low"),
        ("\ufffe\uffff non-characters", " non-characters"),
        ("é ☀️ 😀 \U0010ffff", "é ☀️ 😀 \U0010ffff"),
    ],
)
def test_xml_text_removes_what_xml_1_0_cannot_hold(raw: str, clean: str) -> None:
    assert xml_text(raw) == clean


def _case(name: str = "good", run: str | None = "good-1") -> GoldenCase:
    return GoldenCase(path=Path(f"goldens/{name}.json"), name=name, run=run, input="hi", model_calls=1)


def _buffer(data: bytes, limit: int = TAIL_BYTES) -> TailBuffer:
    buf = TailBuffer(limit)
    buf.write(data)
    return buf


def test_junit_survives_any_bytes_an_agent_prints() -> None:
    nasty = b'\x00\x1b[2J<tag> & "quotes" ]]> \xff\xfe \xed\xa0\xbd lone-surrogate-bytes \xf0\x9f\x98\x80 end\n'
    result = GoldenResult(
        _case(),
        "failure",
        "exit",
        message="exited 1 <because> \x07 & \ud83d",
        details="details ]]> \x00",
        duration=1.25,
        stdout=_buffer(nasty),
        stderr=_buffer(nasty),
    )
    root = ET.fromstring(junit_bytes([result]))
    case = root.find("testsuite/testcase")
    assert case is not None
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message") == "exited 1 <because>  & "
    assert failure.text == "details ]]> "
    out = case.findtext("system-out") or ""
    assert out.startswith('[2J<tag> & "quotes" ]]> ')
    assert "😀 end" in out
    assert case.findtext("system-err") == out


def test_junit_shape_counts_and_order() -> None:
    results = [
        GoldenResult(_case("a", "run-a"), "passed", duration=0.5, stdout=_buffer(b"answer\n")),
        GoldenResult(_case("b", "run-b"), "failure", "timeout", "too slow", "details", duration=2.0),
        GoldenResult(_case("c", None), "error", "error", "cannot read", "never ran"),
    ]
    root = build_junit(results, duration=2.75)
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("time")) == ("3", "1", "1", "2.750")
    suite = root.find("testsuite")
    assert suite is not None
    assert suite.attrib.keys() >= {"name", "tests", "failures", "errors", "skipped", "time", "timestamp"}
    assert (suite.get("name"), suite.get("skipped")) == ("blackbox.golden", "0")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["run-a", "run-b", "c"]
    assert {c.get("classname") for c in cases} == {"blackbox.golden"}
    assert [c.get("time") for c in cases] == ["0.500", "2.000", "0.000"]
    assert cases[0].findtext("system-out") == "answer\n"
    assert cases[0].find("system-err") is None  # nothing written, nothing reported
    assert [(e.tag, e.get("type"), e.get("message"), e.text) for c in cases[1:] for e in c if e.tag in ("failure", "error")] == [
        ("failure", "timeout", "too slow", "details"),
        ("error", "error", "cannot read", "never ran"),
    ]


def test_the_same_run_golden_twice_keeps_testcase_names_apart() -> None:
    a = GoldenResult(GoldenCase(Path("g/one.json"), "one", run="r-1"), "passed")
    b = GoldenResult(GoldenCase(Path("g/two.json"), "two", run="r-1"), "passed")
    names = [c.get("name") for c in build_junit([a, b]).iter("testcase")]
    assert names == ["r-1 [one.json]", "r-1 [two.json]"]


def test_a_truncated_stream_says_how_much_came_before() -> None:
    buf = TailBuffer(8)
    buf.write(b"0123456789abcdef")
    assert stream_text(buf) == "[blackbox: 8 earlier bytes of this stream were not kept; the last 8 follow]\n89abcdef"


# --------------------------------------------------------------------------- classification


def _proc(code: int = 0, *, timed_out: bool = False) -> ProcessResult:
    return ProcessResult(code, timed_out, False, 1.0, TailBuffer(), TailBuffer())


def _status(**changes: Any) -> dict[str, Any]:
    status: dict[str, Any] = {
        "run": "r-1",
        "model_calls": 2,
        "model_calls_served": 2,
        "exhausted_calls": 0,
        "incomplete": [],
        "divergences": 0,
        "first_divergence": None,
        "exit_code": 0,
    }
    status.update(changes)
    return status


DIVERGENCE = {
    "type": "replay_divergence",
    "run": "r-1",
    "step": 0,
    "difference": {
        "field": "content",
        "message": 0,
        "role": "user",
        "at_char": 22,
        "recorded": "What's the weather in Paris?",
        "got": "What's the weather in Lyon?",
        "recorded_messages": 2,
        "got_messages": 2,
    },
    "expected_digest": "a" * 64,
    "got_digest": "b" * 64,
}


@pytest.mark.parametrize(
    ("proc", "status", "expected"),
    [
        (_proc(0), _status(), ("passed", None)),
        (_proc(143, timed_out=True), _status(exit_code=143, model_calls_served=1, incomplete=[4]), ("failure", "timeout")),
        (_proc(1), _status(divergences=1, first_divergence=DIVERGENCE, exit_code=1, model_calls_served=0), ("failure", "divergence")),
        (_proc(1), _status(exhausted_calls=1, exit_code=1), ("failure", "overrun")),
        (_proc(3), _status(exit_code=3), ("failure", "exit")),
        (_proc(4), _status(exit_code=4, model_calls_served=0, incomplete=[0, 4]), ("failure", "exit")),
        (_proc(1), _status(exit_code=0, model_calls_served=1, incomplete=[4]), ("failure", "incomplete")),
        (_proc(1), _status(exit_code=0), ("failure", "exit")),
        (_proc(1), None, ("error", "error")),
    ],
    ids=[
        "ok",
        "timeout",
        "divergence",
        "overrun",
        "exit",
        "exit-before-any-call",
        "incomplete",
        "replay-failed-after",
        "no-report",
    ],
)
def test_classify(proc: ProcessResult, status: dict[str, Any] | None, expected: tuple[str, str | None]) -> None:
    outcome, kind, _ = classify(proc, status, timeout=5)
    assert (outcome, kind) == expected


def test_classify_messages_name_the_difference_and_the_counts() -> None:
    _, _, diverged = classify(_proc(1), _status(divergences=1, first_divergence=DIVERGENCE, exit_code=1), timeout=5)
    assert diverged.splitlines()[:4] == [
        "the agent diverged from recorded run r-1 at step 0:",
        "  message 0 (user): content differs at character 22",
        '    recorded: "What\'s the weather in Paris?"',
        '    got:      "What\'s the weather in Lyon?"',
    ]
    _, _, killed = classify(_proc(137), _status(exit_code=137, model_calls_served=1), timeout=5)
    assert killed == "the command exited 137 (killed by SIGKILL) after 1 of 2 recorded model calls"
    _, _, slow = classify(_proc(143, timed_out=True), _status(exit_code=143, model_calls_served=1), timeout=2.5)
    assert slow == "the command did not finish within 2.5 s and was killed after 1 of 2 recorded model calls"


# --------------------------------------------------------------------------- placeholders, environment, input


def test_substitute_replaces_each_placeholder_once() -> None:
    case = GoldenCase(Path("g/w.json"), "w", run="w-1", input="say {run} and {cassette}")
    argv = substitute(["--task", "{input}", "--id={run}", "{cassette}", "{other}", "{{run}}"], case)
    assert argv == ["--task", "say {run} and {cassette}", "--id=w-1", str(Path("g/w.json").resolve()), "{other}", "{w-1}"]


def test_substitute_makes_an_input_safe_for_argv() -> None:
    case = GoldenCase(Path("g/w.json"), "w", run="w-1", input="nul\0 and lone \ud83d")
    assert substitute(["{input}"], case) == ["nul and lone \ufffd"]


def test_golden_env_hands_over_the_run_and_never_the_real_key() -> None:
    case = GoldenCase(Path("g/w.json"), "w", run="w-1", input="What's up?")
    base = {"PATH": "/bin", "OPENAI_API_KEY": "sk-real", "ANTHROPIC_API_KEY": "sk-ant-real"}
    env = golden_env(case, base)
    assert env["PATH"] == "/bin"
    assert (env["BLACKBOX_RUN"], env["BLACKBOX_RUN_INPUT"]) == ("w-1", "What's up?")
    assert env["BLACKBOX_CASSETTE"] == str(Path("g/w.json").resolve())
    assert env["OPENAI_API_KEY"] == env["ANTHROPIC_API_KEY"] == REPLAY_PLACEHOLDER_KEY
    assert golden_env(case, {**base, "BLACKBOX_REPLAY_KEY": "rk"})["OPENAI_API_KEY"] == "rk"
    assert base["OPENAI_API_KEY"] == "sk-real"  # the caller's mapping is untouched


def _trace(*inputs: dict[str, Any]) -> Trace:
    trace = Trace.new("t-1", created_at=0)
    for payload in inputs:
        trace.append("model_input", payload, timestamp=1)
        trace.append("model_output", {"type": "final_answer", "text": "ok"}, timestamp=2)
    return trace


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([{"role": "user", "content": "Paris?"}], "Paris?"),
        ([{"role": "user", "content": "first"}, {"role": "assistant", "content": "a"}, {"role": "user", "content": "second"}], "second"),
        ([{"role": "user", "content": [{"type": "text", "text": "Par"}, {"type": "image"}, {"type": "text", "text": "is?"}]}], "Paris?"),
        ([{"role": "user", "content": "task"}, {"role": "assistant", "content": "done"}], "task"),
        ([{"role": "system", "content": "be nice"}], ""),
        ([], ""),
    ],
)
def test_run_input_is_the_last_user_message_of_the_first_call(messages: list[Any], expected: str) -> None:
    later = {"messages": [{"role": "user", "content": "not the first call"}], "tools": []}
    assert run_input(_trace({"messages": messages, "tools": []}, later)) == expected


def test_run_input_of_a_run_without_model_calls_is_empty() -> None:
    assert run_input(Trace.new("t-2", created_at=0)) == ""


def test_a_golden_that_cannot_be_read_never_starts_a_process(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    case = GoldenCase(tmp_path / "bad.json", "bad", error="bad.json: the file is empty")
    result = run_golden(case, [sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    assert (result.outcome, result.kind, result.message) == ("error", "error", "bad.json: the file is empty")
    assert result.duration == 0 and result.command == []
    assert not marker.exists()


# --------------------------------------------------------------------------- run_process


def test_run_process_keeps_only_the_tail_of_a_large_output() -> None:
    script = (
        "import sys\n"
        "for i in range(1024):\n"
        "    sys.stdout.write(f'{i:07d}' + 'o' * 1016 + '\\n')\n"
        "    sys.stderr.write(f'{i:07d}' + 'e' * 1016 + '\\n')\n"
    )
    result = run_process([sys.executable, "-c", script], env=os.environ, timeout=60)
    assert result.exit_code == 0 and not result.timed_out
    for buf, letter in ((result.stdout, "o"), (result.stderr, "e")):
        assert buf.total == 1024 * 1024
        data = buf.getvalue()
        assert len(data) == TAIL_BYTES
        assert data.startswith(b"0000960" + letter.encode())  # the last 64 lines of 1024 bytes
        assert data.endswith(b"0001023" + letter.encode() * 1016 + b"\n")


def test_run_process_kills_the_whole_group_at_the_timeout(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    # A parent deaf to SIGTERM and a grandchild that holds the output pipes: both must go.
    script = (
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{child.pid}}')\n"
        "print('started', flush=True)\n"
        "time.sleep(600)\n"
    )
    started = time.monotonic()
    result = run_process([sys.executable, "-c", script], env=os.environ, timeout=1.5)
    elapsed = time.monotonic() - started
    assert result.timed_out
    assert result.exit_code == -9
    assert elapsed < 300  # killed, not waited for: the two sleep ten minutes (a bound for a hang, which load cannot reach)
    assert result.stdout.getvalue() == b"started\n"
    grandchild = int(pids.read_text())
    deadline = time.monotonic() + 60  # a generous wait for the kernel, not a timing
    while time.monotonic() < deadline:
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        stat = Path(f"/proc/{grandchild}/stat")
        if stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z":
            break
        time.sleep(0.05)
    else:
        pytest.fail("the grandchild outlived the timeout")


def test_run_process_does_not_wait_for_a_stray_process_holding_the_pipe(tmp_path: Path) -> None:
    # The process exits at once; a child it started in another session keeps stdout open for ten minutes.
    pid = tmp_path / "stray.pid"
    script = (
        "import subprocess, sys\n"
        "stray = subprocess.Popen(['sleep', '600'], start_new_session=True)\n"
        f"open({str(pid)!r}, 'w').write(str(stray.pid))\n"
        "print('bye')\n"
    )
    started = time.monotonic()
    try:
        result = run_process([sys.executable, "-c", script], env=os.environ, timeout=900)
        assert time.monotonic() - started < 300  # not the stray's ten minutes (a bound for a hang, which load cannot reach)
        assert result.exit_code == 0 and not result.timed_out
        assert result.stdout.getvalue() == b"bye\n"
    finally:
        if pid.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid.read_text()), signal.SIGKILL)
