"""End to end: Gemini clients through a real proxy against the fake Gemini API (examples/fake_gemini.py).

Each client: record -> ``blackbox verify`` -> replay with the fake stopped gives the
same output -> a changed prompt fails the replay. The clients use their default
host (https://generativelanguage.googleapis.com); only HTTPS_PROXY and the CA
that ``blackbox`` sets route them through mitmproxy, and ``--map-remote`` sends
that host to the fake on 127.0.0.1. Then: a key in the query string, a non-model
endpoint, a refused field, and a Gemini run forked (a tool result, an answer),
rewound, made a golden and a tape test.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, ROOT, blackbox
from fake_gemini import FakeGemini
from once import shared

from blackbox_mitm.cassette import Trace, load_trace, save_trace
from blackbox_mitm.cassette.media import load_media, media_path
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

KEY = "AIzaSyBx9Q2mZ7kL4pW1cV8nR3tY6uH0jF5dG2a"  # the shape of a Google API key; never a real one
QUESTION = "What's the weather in Paris and Lyon?"
AGENT = [sys.executable, str(EXAMPLES / "gemini_weather_agent.py")]
NODE_AGENT = ["node", str(EXAMPLES / "node" / "gemini_agent.js")]
GEMINI_CLI = ROOT / "tests" / "e2e" / "clients" / "gemini-cli" / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"

# name: (command before the question, model calls the fake answers); the python ones by their --mode
CLIENTS: dict[str, tuple[list[str], int]] = {
    "python-generate_content": ([*AGENT, "--mode", "generate"], 1),
    "python-generate_content_stream": ([*AGENT, "--mode", "stream"], 1),
    "python-manual-function-calling": ([*AGENT, "--mode", "manual"], 2),
    "python-automatic-function-calling": ([*AGENT, "--mode", "auto"], 2),
    "node-generateContent": ([*NODE_AGENT], 2),
    "node-generateContentStream": ([*NODE_AGENT, "--stream"], 2),
}
# The four python clients are one process (tests/e2e/agents/gemini_modes.py: the agent's main once per mode, in this
# order), and the two node clients one shell running the agent twice: each group recorded, replayed and replayed with a
# changed prompt once per module; each client's test checks its part (the answer after its ``== MODE`` line).
PYTHON_MODES = [CLIENTS[name][0][-1] for name in CLIENTS if name.startswith("python-")]
NODE_MODES = ["whole", "stream"]
NODE_BOTH = 'echo "== whole" && node "$0" "$1" && echo "== stream" && node "$0" "$1" --stream'  # $0: the agent, $1: the question
MODES_AGENT = [sys.executable, str(ROOT / "tests" / "e2e" / "agents" / "gemini_modes.py")]


def _remote(fake: FakeGemini) -> list[str]:
    return ["--map-remote", rf"|https://generativelanguage\.googleapis\.com|{fake.url}"]


def _env(**extra: str) -> dict[str, str]:
    return {"GEMINI_API_KEY": KEY, **extra}


def _record(cassette: Path, confdir: Path, fake: FakeGemini, command: list[str], **env: str) -> Any:
    return blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *_remote(fake), "--", *command, env=_env(**env))


def _replay(cassette: Path, confdir: Path, command: list[str], **env: str) -> Any:
    # No key given: the replay sets its placeholder in the Gemini key variables.
    return blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *command, env=env)


def _assert_clean(cassette: Path) -> None:
    raw = cassette.read_bytes()
    assert verify_trace(load_trace(cassette)) == []
    for secret in (KEY.encode(), b"x-goog-api-key", b"thoughtSignature", b"usageMetadata", b"responseId", b"key="):
        assert secret not in raw, secret


@dataclass
class Session:
    """One recording of a client command, its replay, and its replay with a changed prompt; the requests the fake got."""

    cassette: Path
    rec: Any
    requests: list[dict[str, Any]]
    rep: Any
    changed: Any


def _session(folder: Path, confdir: Path, command: list[str], question_at: int) -> Session:
    """``command`` with the question inserted at ``question_at``, recorded in ``folder``; then replayed twice."""

    def asking(question: str) -> list[str]:
        return [*command[:question_at], question, *command[question_at:]]

    cassette = folder / "run.json"
    with FakeGemini() as fake:
        rec = _record(cassette, confdir, fake, asking(QUESTION))
        requests = fake.model_requests()
    rep = _replay(cassette, confdir, asking(QUESTION))  # the fake is gone
    changed = _replay(cassette, confdir, asking("What's the weather in Paris and Oslo?"))
    return Session(cassette, rec, requests, rep, changed)


# Each group's session is made once a test session, by the first xdist worker to ask (tests/once.py).
@pytest.fixture(scope="module")
def python_clients(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> Session:
    command = [*MODES_AGENT, *PYTHON_MODES]
    return shared(tmp_path_factory, "gemini-python-clients", lambda folder: _session(folder, confdir, command, len(MODES_AGENT)))


@pytest.fixture(scope="module")
def node_clients(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> Session:
    command = ["sh", "-c", NODE_BOTH, NODE_AGENT[-1]]
    return shared(tmp_path_factory, "gemini-node-clients", lambda folder: _session(folder, confdir, command, len(command)))


def _answer(proc: Any, mode: str) -> str:
    """The answer ``proc`` printed for ``mode`` (after its ``== MODE`` line, before the next)."""
    lines = str(proc.stdout).splitlines()
    start = lines.index("== " + mode) + 1
    ends = [i for i in range(start, len(lines)) if lines[i].startswith("== ")]
    return "\n".join(lines[start : ends[0] if ends else len(lines)]).strip()


@pytest.mark.parametrize("client", list(CLIENTS))
def test_record_verify_replay_offline_and_a_changed_prompt_fails(client: str, request: pytest.FixtureRequest) -> None:
    command, calls = CLIENTS[client]
    if command[0] == "node" and shutil.which("node") is None:
        pytest.skip("node is not on PATH")
    group = client.split("-")[0]
    session: Session = request.getfixturevalue(f"{group}_clients")
    modes = PYTHON_MODES if group == "python" else NODE_MODES
    mode = command[-1] if group == "python" else NODE_MODES["--stream" in command]
    counts = [CLIENTS[name][1] for name in CLIENTS if name.startswith(group + "-")]
    first, total = sum(counts[: modes.index(mode)]), sum(counts)  # this client's model calls in its group's run
    cassette, rec = session.cassette, session.rec
    assert rec.returncode == 0, rec.stderr
    assert len(session.requests) == total
    assert all(r["headers"].get("x-goog-api-key") == KEY for r in session.requests)  # the key went to the provider...
    answer = _answer(rec, mode)
    assert answer == ("Paris: cloudy, 18°C. Lyon: rain, 15°C." if calls == 2 else f"You said: {QUESTION}")
    _assert_clean(cassette)  # ...and nowhere into the cassette
    trace = load_trace(cassette)
    start, steps = _conversation(trace.steps, first)
    assert [s.type for s in steps].count("model_input") == calls
    assert steps[0].payload["model"] == "gemini-2.5-flash"
    if calls == 2:
        assert [s.type for s in steps[1:6]] == ["model_output", "tool_call", "tool_result", "tool_call", "tool_result"]
        called = [s.type for s in trace.steps[:start]].count("tool_call")  # the run numbers its tool calls
        assert [c["toolCallId"] for c in steps[1].payload["calls"]] == [f"call-{called}", f"call-{called + 1}"]
    assert steps[-1].payload["type"] == "final_answer" and steps[-1].payload["text"] == answer
    last = rec.stdout.strip().splitlines()[-1]  # the run's last answer: its group's last client's
    assert trace.steps[-1].payload == {"event": "run_completed", "status": "success", "result": last}

    rep = session.rep
    assert rep.returncode == 0, rep.stderr
    assert _answer(rep, mode) == answer
    assert f"{total} of {total} model calls served" in rep.stderr

    changed = session.changed
    assert changed.returncode != 0
    assert "content differs at character 32" in changed.stderr
    assert 'recorded: "What\'s the weather in Paris and Lyon?"' in changed.stderr


def _conversation(steps: list[Any], first_call: int) -> tuple[int, list[Any]]:
    """Where the conversation whose first model call is the run's ``first_call``-th (a fresh history) starts, and its steps."""
    inputs = [i for i, s in enumerate(steps) if s.type == "model_input"]
    fresh = [i for i in inputs if len(steps[i].payload["messages"]) == 1]
    start = inputs[first_call]
    assert start in fresh, steps[start].payload
    ends = [i for i in fresh if i > start] + [len(steps) - 1]  # the next conversation, or the terminal event
    return start, steps[start : ends[0]]


# Gemini CLI starts a second node with a bigger heap and runs in that, unless told not to (its own switch): one node,
# the same run, ~0.6 s CPU less per start.
CLI_ENV = {"GEMINI_CLI_NO_RELAUNCH": "true"}
CLI_SETTINGS = {
    "privacy": {"usageStatisticsEnabled": False},  # no Clearcut telemetry: nothing may leave the machine
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "security": {"auth": {"selectedType": "gemini-api-key"}},
}


def _cli_model(notes: Path) -> Any:
    """Gemini CLI's model: its router asks for a JSON score, then read_file once, then the answer."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":
            props = (config.get("responseJsonSchema") or {}).get("properties", {})
            if "complexity_score" in props:
                return {"text": json.dumps({"complexity_reasoning": "a one-file lookup", "complexity_score": 10})}
            return {"text": json.dumps({"next_speaker": "user", "reasoning": "answered"})}
        last = (body.get("contents") or [{}])[-1]
        for part in last.get("parts") or []:
            if "functionResponse" in part:
                output = json.dumps(part["functionResponse"].get("response"))
                return {"text": "The launch code is 4242." if "4242" in output else f"I could not read it: {output}"}
        return {
            "thought": "The user wants a file read.",
            "signature": True,
            "function_calls": [{"name": "read_file", "args": {"file_path": str(notes)}}],
        }

    return respond


@pytest.mark.skipif(not GEMINI_CLI.exists(), reason="Gemini CLI is not installed (scripts/setup-gemini-cli)")
def test_gemini_cli_uses_a_tool_once_and_replays_offline(tmp_path: Path, confdir: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(CLI_SETTINGS))
    work.mkdir()
    notes = work / "notes.txt"
    notes.write_text("The launch code is 4242.\n")
    cli = ["env", "-C", str(work), "node", str(GEMINI_CLI), "--yolo", "--skip-trust", "-p"]  # run in the folder it reads
    env = {"HOME": str(home), **CLI_ENV}
    cassette = tmp_path / "cli.json"
    with FakeGemini(responder=_cli_model(notes)) as fake:
        rec = blackbox(
            "record",
            "-o",
            str(cassette),
            "--confdir",
            str(confdir),
            *_remote(fake),
            "--",
            *cli,
            "What is the launch code in notes.txt?",
            env=_env(**env),
        )
        assert rec.returncode == 0, rec.stderr
        model_calls = len(fake.model_requests())
        assert all(r["path"].startswith("/v1beta/models/") for r in fake.requests)
    assert rec.stdout.strip() == "The launch code is 4242."
    _assert_clean(cassette)
    trace = load_trace(cassette)
    tool_steps = [s.payload for s in trace.steps if s.type in ("tool_call", "tool_result")]
    assert [(p["toolCallId"], p["toolName"]) for p in tool_steps] == [("call-0", "read_file"), ("call-0", "read_file")]
    assert "4242" in json.dumps(tool_steps[1]["result"])
    assert [s.type for s in trace.steps].count("model_input") == model_calls >= 2

    rep = blackbox(
        "replay",
        str(cassette),
        "--confdir",
        str(confdir),
        "--",
        *cli,
        "What is the launch code in notes.txt?",
        env=env,
    )
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout.strip() == "The launch code is 4242."
    assert f"{model_calls} of {model_calls} model calls served" in rep.stderr

    # Gemini CLI finds its skills with an asynchronous glob, so another run may list them in another order: the
    # gemini-cli profile (chosen by the User-Agent, GeminiCLI-tui/… in this version) compares those lists sorted.
    reordered = tmp_path / "cli-skills-reordered.json"
    save_trace(_skills_reversed(trace), reordered)
    rep = blackbox("replay", str(reordered), "--confdir", str(confdir), "--", *cli, "What is the launch code in notes.txt?", env=env)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout.strip() == "The launch code is 4242."
    assert f"{model_calls} of {model_calls} model calls served" in rep.stderr

    changed = blackbox(
        "replay",
        str(cassette),
        "--confdir",
        str(confdir),
        "--",
        *cli,
        "What is the launch code in todo.txt?",
        env=env,
    )
    assert changed.returncode != 0
    assert "differs at character" in changed.stderr


def _skills_reversed(trace: Trace) -> Trace:
    """The run as another run of Gemini CLI may send it: each list of its skills reversed (the steps chained again)."""

    def reverse_skills(m: re.Match[str]) -> str:
        return m[1] + "\n".join(reversed(re.findall(r"(?s)  <skill>.*?</skill>", m[2]))) + m[3]

    def reverse_names(m: re.Match[str]) -> str:
        return "(Available: " + ", ".join(reversed(m[1].split(", "))) + ")"

    out = Trace.new(trace.id, created_at=trace.createdAt)
    out.environment = trace.environment
    changed = 0
    for step in trace.steps:
        payload = step.payload
        if step.type == "model_input" and "<available_skills>" in payload.get("systemPrompt", ""):
            payload = json.loads(json.dumps(payload))
            payload["systemPrompt"] = re.sub(
                r"(?s)(<available_skills>\n)(.*?)(\n</available_skills>)", reverse_skills, payload["systemPrompt"]
            )
            for tool in payload["tools"]:
                if tool["name"] == "activate_skill":
                    tool["description"] = re.sub(r"\(Available: ([^)]*)\)", reverse_names, tool["description"])
                    schema = tool["inputSchema"]["properties"]["name"]
                    schema["enum"] = schema["enum"][::-1]
            changed += payload != step.payload
        out.append(step.type, payload, timestamp=step.timestamp)
    assert changed >= 1, "no request listed two skills or more"
    return out


def test_a_key_in_the_query_string_is_never_written(tmp_path: Path, confdir: Path) -> None:
    if shutil.which("curl") is None:
        pytest.skip("curl is not on PATH")
    url = f"https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent?key={KEY}"

    def curl(text: str) -> list[str]:
        body = json.dumps({"contents": [{"role": "user", "parts": [{"text": text}]}]})
        return ["curl", "-sS", "-X", "POST", url, "-H", "content-type: application/json", "-d", body]

    cassette = tmp_path / "curl.json"
    with FakeGemini([{"text": "Hello there."}]) as fake:
        rec = _record(cassette, confdir, fake, curl("Hi"), GEMINI_API_KEY="")
        assert rec.returncode == 0, rec.stderr
        assert fake.requests[0]["query"] == {"key": [KEY]}  # it reached the provider
    assert json.loads(rec.stdout)["candidates"][0]["content"]["parts"] == [{"text": "Hello there."}]
    _assert_clean(cassette)

    leaky = tmp_path / "leaky.json"
    with FakeGemini([{"text": "Noted."}]) as fake:
        rec = _record(leaky, confdir, fake, curl(f"Remember my key {KEY}"), GEMINI_API_KEY="")
    assert "refused to record" in rec.stderr
    assert KEY.encode() not in leaky.read_bytes()


COUNT_THEN_ASK = """
import sys
from google import genai
from google.genai import errors
client = genai.Client()
try:
    print("tokens:", client.models.count_tokens(model="gemini-2.5-flash", contents="Hi").total_tokens)
except errors.APIError as exc:
    print("tokens: error", exc.code, exc.status)
print(client.models.generate_content(model="gemini-2.5-flash", contents="Hi").text)
"""


def test_a_non_model_endpoint_is_kept_and_served_in_replay_and_a_gemini_404_when_not_kept(tmp_path: Path, confdir: Path) -> None:
    script = tmp_path / "count.py"
    script.write_text(COUNT_THEN_ASK)
    kept = tmp_path / "kept.json"
    with FakeGemini([{"text": "Hello."}]) as fake:
        rec = _record(kept, confdir, fake, [sys.executable, str(script)])
        assert rec.returncode == 0, rec.stderr
    rep = _replay(kept, confdir, [sys.executable, str(script)])
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout  # countTokens answered from the recording's exchanges
    # Recorded with --exchanges none, the replay answers it with a Gemini-shaped 404, as before exchanges were kept.
    cassette = tmp_path / "run.json"
    with FakeGemini([{"text": "Hello."}]) as fake:
        rec = blackbox(
            "record",
            "-o",
            str(cassette),
            "--confdir",
            str(confdir),
            "--exchanges",
            "none",
            *_remote(fake),
            "--",
            sys.executable,
            str(script),
            env=_env(),
        )
        assert rec.returncode == 0, rec.stderr
        assert [r["path"].rsplit(":", 1)[1] for r in fake.requests] == ["countTokens", "generateContent"]
    assert rec.stdout.splitlines()[1] == "Hello."
    assert rec.stdout.splitlines()[0].startswith("tokens: ") and "error" not in rec.stdout
    assert [s.type for s in load_trace(cassette).steps] == ["model_input", "model_output", "metadata"]
    rep = _replay(cassette, confdir, [sys.executable, str(script)])
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout.splitlines() == ["tokens: error 404 NOT_FOUND", "Hello."]


def test_a_refused_field_is_a_400_naming_it_and_is_never_forwarded(tmp_path: Path, confdir: Path) -> None:
    script = tmp_path / "two.py"
    script.write_text(
        "import sys\nfrom google import genai\nfrom google.genai import errors, types\n"
        "client = genai.Client()\n"
        "try:\n"
        "    client.models.generate_content(model='gemini-2.5-flash', contents='Hi', config=types.GenerateContentConfig(candidate_count=2))\n"
        "except errors.ClientError as exc:\n"
        "    print(exc.code, exc.message); sys.exit(3)\n"
    )
    cassette = tmp_path / "run.json"
    with FakeGemini([{"text": "never"}]) as fake:
        rec = _record(cassette, confdir, fake, [sys.executable, str(script)])
        assert fake.requests == []
    assert rec.returncode == 3, rec.stderr
    # the one refusal format: "field: reason (it was VALUE)"
    assert rec.stdout.startswith("400 BlackboxUnsupportedError: generationConfig.candidateCount: several candidates per request")
    assert rec.stdout.rstrip().endswith("(it was 2)")
    assert [s.type for s in load_trace(cassette).steps] == ["metadata"]


@pytest.fixture(scope="module")
def parent(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> Path:
    def make(folder: Path) -> Path:
        cassette = folder / "parent.json"
        with FakeGemini() as fake:
            rec = _record(cassette, confdir, fake, [*AGENT, "--mode", "manual", QUESTION])
        assert rec.returncode == 0, rec.stderr
        return cassette

    return shared(tmp_path_factory, "gemini-forks", make)  # once a test session (tests/once.py)


def test_a_tool_result_fork_goes_live_with_what_the_model_sees_rewritten(parent: Path, confdir: Path) -> None:
    child = parent.with_name("sunny.json")
    sunny = {"city": "Paris", "forecast": "sun", "celsius": 30}
    with FakeGemini() as fake:
        proc = blackbox(
            "fork", str(parent), "--at", "3", "--tool-result", json.dumps(sunny), "-o", str(child), "--confdir", str(confdir),
            *_remote(fake), "--", *AGENT, "--mode", "manual", QUESTION, env=_env(),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        (request,) = fake.model_requests()  # only the call after the cut went upstream
        responses = [p["functionResponse"] for p in request["body"]["contents"][-1]["parts"]]
        assert [r["response"] for r in responses] == [sunny, {"city": "Lyon", "forecast": "rain", "celsius": 15}]
    assert proc.stdout.strip() == "Paris: sun, 30°C. Lyon: rain, 15°C."
    p, c = load_trace(parent), load_trace(child)
    assert verify_trace(c) == [] and c.parentId == p.id
    assert [s.hash for s in c.steps[:3]] == [s.hash for s in p.steps[:3]]


def test_a_response_fork_serves_an_answer_written_in_gemini_shape(parent: Path, confdir: Path) -> None:
    child = parent.with_name("edited.json")
    answer = {"role": "model", "parts": [{"text": "Edited: pack an umbrella."}]}
    proc = blackbox(
        "fork", str(parent), "--at", "7", "--response", json.dumps(answer), "-o", str(child), "--confdir", str(confdir),
        "--", *AGENT, "--mode", "manual", QUESTION, env=_env(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Edited: pack an umbrella."
    assert load_trace(child).steps[7].payload == {"type": "final_answer", "text": "Edited: pack an umbrella."}


def test_a_rewind_replays_the_prefix_then_goes_live(parent: Path, confdir: Path) -> None:
    child = parent.with_name("rewound.json")
    with FakeGemini() as fake:
        proc = blackbox(
            "fork", str(parent), "--live-after", "1", "-o", str(child), "--confdir", str(confdir), *_remote(fake),
            "--", *AGENT, "--mode", "manual", QUESTION, env=_env(),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        (request,) = fake.model_requests()  # the first call was served from the parent, the second went live
        assert [p["functionResponse"]["name"] for p in request["body"]["contents"][-1]["parts"]] == ["get_weather", "get_weather"]
        replayed_turn = request["body"]["contents"][1]["parts"][0]  # served by the replay, sent back live
        assert replayed_turn["functionCall"]["id"] == "gemini-bb0"
        assert replayed_turn["thoughtSignature"] == "skip_thought_signature_validator"
    assert proc.stdout.strip() == "Paris: cloudy, 18°C. Lyon: rain, 15°C."
    p, c = load_trace(parent), load_trace(child)
    assert verify_trace(c) == []
    # The same run, re-lived; the live tail's token counts are the fake's count of the request it got now, which
    # carries the served signature sentinel, so counts are left out (a replay never compares them either).
    assert [_uncounted(s.payload) for s in c.steps] == [_uncounted(s.payload) for s in p.steps]


def test_a_gemini_run_is_a_golden_and_a_tape_test(parent: Path, confdir: Path, tmp_path: Path) -> None:
    goldens = tmp_path / "goldens"
    assert blackbox("golden", "add", str(parent), "--goldens", str(goldens), "--name", "weather").returncode == 0
    junit = tmp_path / "junit.xml"
    run = blackbox(
        "test", "--goldens", str(goldens), "--junit", str(junit), "--confdir", str(confdir),
        "--", *AGENT, "--mode", "manual", "{input}",
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert 'tests="1"' in junit.read_text() and 'failures="0"' in junit.read_text()

    tape = tmp_path / "test_tape.py"
    tape.write_text(
        "import subprocess\nimport pytest\n\n"
        f"@pytest.mark.blackbox_tape({str(parent)!r})\n"
        "def test_follows(blackbox_tape):\n"
        f"    out = subprocess.run({[*AGENT, '--mode', 'manual', QUESTION]!r}, env=blackbox_tape.env(),\n"
        "                         capture_output=True, text=True, check=True)\n"
        "    assert out.stdout.strip() == 'Paris: cloudy, 18°C. Lyon: rain, 15°C.'\n\n"
        f"@pytest.mark.blackbox_tape({str(parent)!r})\n"
        "def test_changed_prompt_is_caught(blackbox_tape):\n"
        f"    subprocess.run({[*AGENT, '--mode', 'manual', 'Weather in Oslo?']!r}, env=blackbox_tape.env(), capture_output=True)\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tape)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "BLACKBOX_CONFDIR": str(confdir)},
    )  # fmt: skip
    assert "1 failed, 1 passed" in result.stdout, result.stdout + result.stderr
    assert "test_changed_prompt_is_caught" in result.stdout and "content differs at character" in result.stdout


def test_a_refused_streamed_answer_ends_in_an_error_the_sdk_raises_and_is_not_recorded(tmp_path: Path, confdir: Path) -> None:
    cassette = tmp_path / "run.json"
    with FakeGemini([{"text": "Here is how to pick a lock, step by step.", "finish": "SAFETY"}]) as fake:
        rec = _record(cassette, confdir, fake, [*AGENT, "--mode", "stream", QUESTION])
        assert len(fake.model_requests()) == 1
    assert rec.returncode == 1  # the agent's SDK raised instead of returning the answer
    assert (
        'candidates[0].finishReason: a replay gives STOP or MAX_TOKENS, so it would replay as a normal stop (it was "SAFETY")' in rec.stderr
    )
    assert [s.type for s in load_trace(cassette).steps] == ["metadata"]


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360606060000000050001a5f645400000000049454e44ae426082"
)


def _image_and_shell_model() -> Any:
    """Gemini CLI's model for ``@img.png``: it sees the picture (inlineData), runs ``echo`` in the shell, then answers."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":
            props = (config.get("responseJsonSchema") or {}).get("properties", {})
            if "complexity_score" in props:
                return {"text": json.dumps({"complexity_reasoning": "one command", "complexity_score": 10})}
            return {"text": json.dumps({"next_speaker": "user", "reasoning": "answered"})}
        contents = body.get("contents") or []
        saw_image = any("inlineData" in p for c in contents for p in c.get("parts") or [])
        for part in contents[-1].get("parts") or []:
            if "functionResponse" in part:
                output = json.dumps(part["functionResponse"].get("response"))
                return {"text": f"image: {saw_image}; shell said hi: {'hi' in output}; pgid: {'PGID' in output}"}
        return {
            "thought": "Look, then run it.",
            "signature": True,
            "function_calls": [{"name": "run_shell_command", "args": {"command": "echo hi"}}],
        }

    return respond


@pytest.mark.skipif(not GEMINI_CLI.exists(), reason="Gemini CLI is not installed (scripts/setup-gemini-cli)")
def test_gemini_cli_at_an_image_and_a_shell_command_replay_strictly_with_no_flags(tmp_path: Path, confdir: Path) -> None:
    """@img.png is recorded by digest; the shell result's process group (new every run) is masked by default."""
    import hashlib

    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(CLI_SETTINGS))
    work.mkdir()
    (work / "img.png").write_bytes(PNG)
    cli = ["env", "-C", str(work), "node", str(GEMINI_CLI), "--yolo", "--skip-trust", "-p", "@img.png what is this? Then run echo hi."]
    cassette = tmp_path / "image.json"
    with FakeGemini(responder=_image_and_shell_model()) as fake:
        rec = blackbox(
            "record", "-o", str(cassette), "--confdir", str(confdir), *_remote(fake), "--", *cli, env=_env(HOME=str(home), **CLI_ENV)
        )
        assert rec.returncode == 0, rec.stderr
        model_calls = len(fake.model_requests())
    assert rec.stdout.strip() == "image: True; shell said hi: True; pgid: True"
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    parts = [
        p
        for s in trace.steps
        if s.type == "model_input"
        for m in s.payload["messages"]
        if isinstance(m["content"], list)
        for p in m["content"]
    ]
    images = [p for p in parts if p.get("type") == "image"]
    assert images and images[0]["sha256"] == hashlib.sha256(PNG).hexdigest() and images[0]["mediaType"] == "image/png"
    # The bytes: in the run's media file, once, however many requests re-sent the picture; sealed and verified.
    assert len(images) >= 2  # every later request re-sends the history with the image
    document = load_media(cassette, trace)
    assert document is not None and list(document["media"]) == [hashlib.sha256(PNG).hexdigest()]
    assert base64.b64decode(document["media"][hashlib.sha256(PNG).hexdigest()]["data"]) == PNG
    assert media_path(cassette).read_bytes().count(base64.b64encode(PNG)) == 1
    checked = blackbox("verify", str(cassette))
    assert checked.returncode == 0 and checked.stdout.startswith("OK"), checked.stdout
    results = [s.payload for s in trace.steps if s.type == "tool_result"]
    assert "Process Group PGID: " in json.dumps(results)
    rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *cli, env={"HOME": str(home), **CLI_ENV})
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert f"{model_calls} of {model_calls} model calls served" in rep.stderr
    # The built-in mask is what makes it pass: without it (the other rules kept, so the skills order does not
    # diverge first), the new process group diverges.
    bare = blackbox(
        "replay", str(cassette), "--confdir", str(confdir), "--no-mask", "gemini-cli.pgid", "--", *cli, env={"HOME": str(home), **CLI_ENV}
    )
    assert bare.returncode != 0 and "Process Group PGID" in bare.stderr


def _uncounted(payload: Any) -> Any:
    """A step's payload without an answer's token counts."""
    return {k: v for k, v in payload.items() if k != "tokens"} if isinstance(payload, dict) else payload
