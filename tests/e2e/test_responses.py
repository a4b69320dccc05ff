"""End to end: the OpenAI Responses API (HTTP and SSE) recorded and replayed for real clients with their defaults.

Every client runs unmodified through ``blackbox record`` / ``blackbox replay`` (real
processes, a real mitmproxy with TLS interception) against examples/fake_responses.py
on 127.0.0.1: record -> ``blackbox verify`` -> the provider stopped -> a strict
offline replay with the same output and exit 0 -> a changed prompt fails the replay
and names the place. Clients: the Python SDK (``responses.create``, the
``responses.stream`` helper, a ``previous_response_id`` chain, raw stream events;
parallel calls in each), the Node SDK (create and stream), openai-agents
(``Runner.run``, ``Runner.run_streamed``) and ``llm`` with its default OpenAI model.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import EXAMPLES, ROOT, remote_args
from fake_responses import FakeResponses
from once import once, session_folder

from blackbox_mitm.cassette import load_trace

pytestmark = pytest.mark.e2e

AGENTS = ROOT / "tests" / "e2e" / "agents"
QUESTION = "What's the weather in Paris and Lyon?"
CHANGED = "What's the weather in Paris and Tokyo?"
LLM = ROOT / ".venv-clis" / "llm" / "bin" / "llm"
ROUND = ["model_input", "model_output", "tool_call", "tool_result", "tool_call", "tool_result", "model_input", "model_output", "metadata"]


def blackbox(*args: str, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k.lower() != "https_proxy"}
    full_env["OPENAI_API_KEY"] = "sk-test-not-a-real-key-000"
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "blackbox_mitm", *args], env=full_env, capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


def record(cassette: Path, confdir: Path, argv: list[str], script: list[Any] | None = None, **env: str) -> tuple[Any, list[Any]]:
    """Record ``argv`` against a fresh fake provider; (the run, the bodies the provider got)."""
    with FakeResponses(script) as fake:
        run = blackbox("record", "-v", "-o", str(cassette), "--confdir", str(confdir), *remote_args(fake.url), "--", *argv, env=env)
        return run, fake.calls()


def replay(cassette: Path, confdir: Path, argv: list[str], **env: str) -> Any:
    return blackbox("replay", "-v", str(cassette), "--confdir", str(confdir), "--", *argv, env=env)


def check_round_trip(tmp: Path, confdir: Path, argv: list[str], changed: list[str], *, steps: list[str] = ROUND, **env: str) -> Any:
    """record -> verify -> offline strict replay (same stdout, exit 0) -> a changed prompt fails naming the message."""
    cassette = tmp / "run.json"
    rec, calls = record(cassette, confdir, argv, None, **env)
    return check_recorded(cassette, rec, calls, confdir, argv, changed, steps=steps, **env), rec


def check_recorded(
    cassette: Path, rec: Any, calls: list[Any], confdir: Path, argv: list[str], changed: list[str], *, steps: list[str] = ROUND, **env: str
) -> Any:
    """verify -> offline strict replay (same stdout, exit 0) -> a changed prompt fails naming the message; the trace."""
    trace = check_replays(cassette, rec, calls, confdir, argv, steps=steps, **env)
    check_changed_prompt_fails(cassette, confdir, changed, **env)
    return trace


def check_replays(cassette: Path, rec: Any, calls: list[Any], confdir: Path, argv: list[str], *, steps: list[str], **env: str) -> Any:
    """The recording verifies, has ``steps`` and no native id or key, and replays offline (same stdout, exit 0)."""
    assert rec.returncode == 0, rec.stderr
    assert len(calls) == steps.count("model_input")
    verified = blackbox("verify", str(cassette))
    assert verified.returncode == 0 and "OK" in verified.stdout, verified.stdout + verified.stderr
    trace = load_trace(cassette)
    assert [s.type for s in trace.steps] == steps
    text = cassette.read_text()
    for native in ("resp_", "msg_", "fc_", "call_", "rs_", "encrypted_content", "obfuscation", "sk-test"):
        assert native not in text, native

    rep = replay(cassette, confdir, argv, **env)  # the fake provider is stopped: nothing to reach
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    n = steps.count("model_input")
    assert f"{n} of {n} model calls served" in rep.stderr and "offline: refused" not in rep.stderr
    return trace


def check_changed_prompt_fails(cassette: Path, confdir: Path, changed: list[str], **env: str) -> None:
    bad = replay(cassette, confdir, changed, **env)
    assert bad.returncode != 0
    assert "message 0 (user): content differs" in bad.stderr and "Tokyo" in bad.stderr


class Session:
    """Several variants of one agent, each a ``MODE QUESTION`` pair its program runs in order in one process (one
    import of the SDK, one record, verify and replay for all): made once a test session, by the first xdist worker to ask (tests/once.py).

    Each variant's test asserts on its own part: its model calls, its steps, its line of output, and a replay whose
    prompt changed for that variant alone (the variants before it are served, it diverges at its own first call).
    """

    def __init__(
        self, folder: Path, confdir: Path, program: list[str], variants: dict[str, tuple[str, list[str]]], *, lines: int = 1
    ) -> None:
        """``variants``: mode -> (its question, its steps); each variant prints ``lines`` lines."""
        self.folder, self.confdir, self.program, self.variants, self.lines = folder, confdir, program, variants, lines
        self._made: tuple[Any, Any, list[Any]] | None = None

    def argv(self, changed: str | None = None) -> list[str]:
        """The program with every variant's pair; the ``changed`` variant asks CHANGED instead of its question."""
        return [*self.program, *(w for mode, (q, _) in self.variants.items() for w in (mode, CHANGED if mode == changed else q))]

    def made(self) -> tuple[Any, Any, list[Any]]:
        """(the trace, the recording run, the bodies the provider got), recorded, verified and replayed once."""
        if self._made is None:
            cassette = self.folder / "session.json"
            steps = [t for _, kinds in self.variants.values() for t in kinds[:-1]] + ["metadata"]

            def make() -> tuple[Any, list[Any]]:
                cassette.unlink(missing_ok=True)  # an attempt that failed (in another worker) left its file
                rec, calls = record(cassette, self.confdir, self.argv())
                check_replays(cassette, rec, calls, self.confdir, self.argv(), steps=steps)
                return rec, calls

            rec, calls = once(self.folder, "session", make)  # by the first xdist worker to ask (tests/once.py)
            self._made = (load_trace(cassette), rec, calls)
        return self._made

    def part(self, mode: str) -> tuple[list[Any], str, list[Any]]:
        """``mode``'s steps (its ``metadata`` is the session's last step), its lines of stdout and its model calls."""
        trace, rec, calls = self.made()
        names = list(self.variants)
        before = [self.variants[m][1][:-1] for m in names[: names.index(mode)]]
        first_step, first_call = sum(map(len, before)), sum(k.count("model_input") for k in before)
        kinds = self.variants[mode][1]
        assert trace.steps[-1].type == kinds[-1] == "metadata"
        lines = rec.stdout.splitlines(keepends=True)
        assert len(lines) == len(names) * self.lines, rec.stdout
        steps = [*trace.steps[first_step : first_step + len(kinds) - 1], trace.steps[-1]]
        first_line = names.index(mode) * self.lines
        return steps, "".join(lines[first_line : first_line + self.lines]), calls[first_call : first_call + kinds.count("model_input")]

    def check_changed_prompt_fails(self, mode: str) -> None:
        self.made()
        check_changed_prompt_fails(self.folder / "session.json", self.confdir, self.argv(changed=mode))


def neutral(steps: list[Any]) -> list[tuple[str, Any]]:
    """Steps without timestamps, ``params.stream`` (how the call was read is not the conversation) and token counts.

    The fake counts the input items it is sent, so a chained call (only the new items) reports fewer input tokens
    than the same call with the whole history; the API counts the whole conversation either way.
    """
    out = []
    for step in steps:
        payload = json.loads(json.dumps(step.payload))
        if step.type == "model_output":
            payload.pop("tokens", None)
        if step.type == "model_input":
            params = payload.pop("params", {})
            params.pop("stream", None)
            if params:
                payload["params"] = params
        out.append((step.type, payload))
    return out


# --------------------------------------------------------------------------- the Python SDK

PY_MODES = ("create", "stream", "chain", "events")


def py_agent(mode: str, question: str = QUESTION) -> list[str]:
    return [sys.executable, str(AGENTS / "responses_agent.py"), mode, question]


def own_ids(steps: list[Any]) -> list[Any]:
    """``steps`` with their neutral tool-call ids numbered from ``call-0`` in order of appearance, as a recording of
    that conversation alone numbers them (a session numbers them across its conversations); the others unchanged."""
    text = json.dumps([s.payload for s in steps])
    order = list(dict.fromkeys(re.findall(r'"call-\d+"', text)))
    numbered = re.sub(r'"call-\d+"', lambda m: f'"call-{order.index(m.group(0))}"', text)
    return [SimpleNamespace(type=s.type, payload=payload) for s, payload in zip(steps, json.loads(numbered), strict=True)]


@pytest.fixture(scope="module")
def py_session(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> Session:
    """The Python SDK agent in each mode, one after the other in one recorded session (tests/e2e/agents/responses_session.py)."""
    program = [sys.executable, str(AGENTS / "responses_session.py")]
    return Session(
        session_folder(tmp_path_factory, "responses-python-sdk"), confdir, program, {m: (QUESTION, ROUND) for m in PY_MODES}, lines=2
    )


@pytest.mark.parametrize("mode", PY_MODES)
def test_python_sdk_records_and_replays_offline(mode: str, py_session: Session) -> None:
    steps, output, calls = py_session.part(mode)
    if mode == PY_MODES[0]:  # the session's first conversation: numbered from call-0 as a recording of it alone is
        assert own_ids(steps) == [SimpleNamespace(type=s.type, payload=s.payload) for s in steps]
    steps = own_ids(steps)
    assert [s.type for s in steps] == ROUND and len(calls) == ROUND.count("model_input")
    assert output == "answer: Paris: cloudy, 18°C. Lyon: rain, 15°C.\nmodel calls: 2\n"
    answer = steps[1].payload
    assert answer["text"] == "Let me check the weather."  # text beside parallel calls is kept
    assert [(c["toolCallId"], c["toolInput"]) for c in answer["calls"]] == [("call-0", {"city": "Paris"}), ("call-1", {"city": "Lyon"})]
    assert steps[0].payload["systemPrompt"] == "You are a weather agent."
    py_session.check_changed_prompt_fails(mode)


def test_every_way_of_calling_records_the_same_conversation_and_replays_the_others(py_session: Session, confdir: Path) -> None:
    """Whole history or previous_response_id, whole body or stream: the same steps, so each replays for the others."""
    parts = {mode: py_session.part(mode) for mode in PY_MODES}
    for mode in ("chain", "events"):  # only the tool outputs travel: the history is the provider's
        calls = parts[mode][2]
        assert [i["type"] for i in calls[1]["input"]] == ["function_call_output", "function_call_output"]
        assert calls[1]["previous_response_id"].startswith("resp_")
    assert all(neutral(own_ids(steps)) == neutral(own_ids(parts["create"][0])) for steps, _, _ in parts.values())
    # One replay of the session (recorded create, stream, chain, events) for clients in another order: create's
    # calls served to the chain client, stream's to stream, chain's to create, events' to stream.
    crossed = {"create": "chain", "stream": "stream", "chain": "create", "events": "stream"}
    assert list(crossed) == list(PY_MODES)
    argv = [*py_session.program, *(w for client in crossed.values() for w in (client, QUESTION))]
    rep = replay(py_session.folder / "session.json", confdir, argv)
    assert rep.returncode == 0, f"recorded -> replayed for: {crossed}: {rep.stderr}"
    assert "8 of 8 model calls served" in rep.stderr
    assert rep.stdout == py_session.made()[1].stdout


def test_a_previous_response_id_the_run_never_saw_is_refused_by_name(tmp_path: Path, confdir: Path) -> None:
    agent = [
        sys.executable,
        "-c",
        "import openai\n"
        "try:\n"
        "    openai.OpenAI(max_retries=0).responses.create(model='gpt-4.1', input='hi', previous_response_id='resp_elsewhere')\n"
        "except openai.BadRequestError as e:\n"
        "    print(e.message)\n",
    ]
    cassette = tmp_path / "run.json"
    rec, calls = record(cassette, confdir, agent)
    assert calls == []  # refused before it reached the provider
    assert "previous_response_id" in rec.stdout and "cannot be known" in rec.stdout and '"resp_elsewhere"' in rec.stdout
    assert "model_input" not in [s.type for s in load_trace(cassette).steps]


def test_a_cut_off_stream_records_nothing_for_that_call_and_says_why(tmp_path: Path, confdir: Path) -> None:
    agent = [
        sys.executable,
        "-c",
        "import openai\n"
        "try:\n"
        "    with openai.OpenAI(max_retries=0).responses.stream(model='gpt-4.1', input='hi') as s:\n"
        "        s.get_final_response()\n"
        "except Exception as e:\n"
        "    print(type(e).__name__)\n",
    ]
    cassette = tmp_path / "run.json"
    rec, calls = record(cassette, confdir, agent, script=[{"text": "a long answer " * 20, "stream_cut": True}])
    assert len(calls) == 1 and rec.stdout.strip()  # the client saw the stream break
    assert "did not complete" in rec.stderr
    assert [s.type for s in load_trace(cassette).steps if s.type.startswith("model")] == []


def test_a_fork_rewrites_the_tool_output_and_sends_a_served_chain_upstream_in_full(tmp_path: Path, confdir: Path) -> None:
    """fork --tool-result on a previous_response_id run: the model sees the edit, and the live call past the cut
    carries the whole history (the provider never saw the ids a replay served)."""
    parent = tmp_path / "parent.json"
    rec, _ = record(parent, confdir, py_agent("chain"))
    assert rec.returncode == 0, rec.stderr
    child = tmp_path / "sunny.json"
    sunny = '{"city": "Paris", "forecast": "sun", "celsius": 24}'
    with FakeResponses() as fake:
        fork = blackbox(
            "fork", str(parent), "--at", "3", "--tool-result", sunny, "--live", "-o", str(child), "--confdir", str(confdir),
            *remote_args(fake.url), "--", *py_agent("chain"),
        )  # fmt: skip
        upstream = fake.calls()
    assert fork.returncode == 0, fork.stderr
    assert fork.stdout.startswith("answer: Paris: sun, 24°C. Lyon: rain, 15°C.")
    [live] = upstream  # the first call was answered from the parent; the second went to the provider
    assert "previous_response_id" not in live
    assert [i.get("type", "message") for i in live["input"]] == [
        "message",
        "message",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert json.loads(live["input"][4]["output"]) == json.loads(sunny)
    steps = load_trace(child).steps
    assert json.loads(steps[3].payload["result"]) == json.loads(sunny)
    assert steps[6].payload["messages"][-1]["content"][0]["result"] == steps[3].payload["result"]


# --------------------------------------------------------------------------- the Node SDK


@pytest.mark.parametrize("flags", [[], ["--stream"]], ids=["create", "stream"])
def test_node_sdk_records_and_replays_offline(flags: list[str], tmp_path: Path, confdir: Path) -> None:
    if shutil.which("node") is None:
        pytest.fail("node is not on PATH (scripts/setup needs Node.js 20+)")
    script = str(EXAMPLES / "node" / "responses_agent.js")
    _, rec = check_round_trip(tmp_path, confdir, ["node", script, QUESTION, *flags], ["node", script, CHANGED, *flags])
    assert rec.stdout == "answer: Paris: cloudy, 18°C. Lyon: rain, 15°C.\n"


# --------------------------------------------------------------------------- openai-agents


@pytest.fixture(scope="module")
def openai_agents(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> Session:
    program = [sys.executable, str(AGENTS / "openai_agents_weather.py")]
    return Session(
        session_folder(tmp_path_factory, "openai-agents"), confdir, program, {"run": (QUESTION, ROUND), "streamed": (QUESTION, ROUND)}
    )


@pytest.mark.parametrize("mode", ["run", "streamed"])
def test_openai_agents_default_runner_records_and_replays_offline(mode: str, openai_agents: Session) -> None:
    steps, output, calls = openai_agents.part(mode)
    assert [s.type for s in steps] == ROUND and len(calls) == ROUND.count("model_input")
    assert output == "Paris: cloudy, 18°C. Lyon: rain, 15°C.\n"
    first = steps[0].payload
    assert first["model"]  # the SDK's default model, whatever this version picks
    assert first["tools"][0]["name"] == "get_weather"  # sent with strict: true, recorded like leaving it out
    openai_agents.check_changed_prompt_fails(mode)


# --------------------------------------------------------------------------- pydantic-ai

ONE_CALL_ROUND = ["model_input", "model_output", "tool_call", "tool_result", "model_input", "model_output", "metadata"]


@pytest.fixture(scope="module")
def pydantic_ai(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> Session:
    # run_stream ends at the first text it is given, so the streamed run asks about one city: no narration beside its call.
    variants = {"run": ("What's the weather in Paris and Lyon?", ROUND), "stream": ("What's the weather in Paris?", ONE_CALL_ROUND)}
    return Session(
        session_folder(tmp_path_factory, "pydantic-ai"), confdir, [sys.executable, str(AGENTS / "pydantic_ai_weather.py")], variants
    )


@pytest.mark.parametrize(("mode", "city"), [("run", "Paris and Lyon"), ("stream", "Paris")])
def test_pydantic_ai_default_openai_model_records_and_replays_offline(mode: str, city: str, pydantic_ai: Session) -> None:
    steps, output, calls = pydantic_ai.part(mode)
    kinds = ROUND if mode == "run" else ONE_CALL_ROUND
    assert [s.type for s in steps] == kinds and len(calls) == kinds.count("model_input")
    assert steps[0].payload["messages"] == [{"role": "user", "content": f"What's the weather in {city}?"}]
    assert output == ("Paris: cloudy, 18°C. Lyon: rain, 15°C.\n" if mode == "run" else "Paris: cloudy, 18°C.\n")
    pydantic_ai.check_changed_prompt_fails(mode)


# --------------------------------------------------------------------------- llm


def llm_env(tmp: Path, name: str) -> dict[str, str]:
    home = tmp / name
    home.mkdir()
    return {"LLM_USER_PATH": str(home)}


def test_llm_default_model_records_and_replays_offline(tmp_path: Path, confdir: Path) -> None:
    if not LLM.exists():
        pytest.fail(f"{LLM} is missing: run scripts/setup-streaming-clis (scripts/setup runs it)")
    question = "What's the weather in Paris?"
    cassette = tmp_path / "llm.json"
    rec, calls = record(cassette, confdir, [str(LLM), question], None, **llm_env(tmp_path, "rec"))
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout == f"Echo: {question}\n"
    assert calls[0]["stream"] is True and calls[0]["store"] is False  # llm's defaults for its default model
    assert blackbox("verify", str(cassette)).returncode == 0
    rep = replay(cassette, confdir, [str(LLM), question], **llm_env(tmp_path, "rep"))
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout and "1 of 1 model calls served" in rep.stderr
    bad = replay(cassette, confdir, [str(LLM), "What's the weather in Tokyo?"], **llm_env(tmp_path, "bad"))
    assert bad.returncode != 0 and "content differs" in bad.stderr


def test_llm_tool_round_with_reasoning_items_replays_without_them(tmp_path: Path, confdir: Path) -> None:
    """llm sends the reasoning items back (encrypted_content): not stored, not compared, so a replay that gives none matches."""
    if not LLM.exists():
        pytest.fail(f"{LLM} is missing: run scripts/setup-streaming-clis (scripts/setup runs it)")
    function = 'def get_weather(city: str) -> str:\n    "Current weather for a city."\n    return city + ": sunny, 21C"\n'
    argv = [str(LLM), "--td", "--functions", function, "What's the weather in Paris?"]
    script = [
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}], "reasoning": True},
        {"text": "Sunny in Paris.", "reasoning": True},
    ]
    cassette = tmp_path / "llm-tools.json"
    rec, calls = record(cassette, confdir, argv, script, **llm_env(tmp_path, "rec"))
    assert rec.returncode == 0, rec.stderr
    assert "reasoning" in [i.get("type") for i in calls[1]["input"]]
    trace = load_trace(cassette)
    assert [s.type for s in trace.steps] == [
        "model_input",
        "model_output",
        "tool_call",
        "tool_result",
        "model_input",
        "model_output",
        "metadata",
    ]
    rep = replay(cassette, confdir, argv, **llm_env(tmp_path, "rep"))
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout == "Sunny in Paris.\n"
