"""End to end: streamed (server-sent events) model calls recorded and replayed, for both providers.

Every test runs ``blackbox record`` / ``blackbox replay`` as real processes around
unmodified agents over the official SDKs (Python ``openai`` and ``anthropic``, the
Node ``openai`` package), through a real mitmproxy with TLS interception, against
examples/fake_provider.py. A streamed recording must give the same neutral steps
as a non-streamed recording of the same conversation (only ``params.stream``
differs), verify, and replay offline to the same agent output.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import EXAMPLES, ROOT, blackbox, free_port, remote_args, wait_for_port
from fake_provider import FakeProvider, weather_answer
from once import name_for, once, session_folder, write_once

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

QUESTION = "What's the weather in Paris and Lyon?"

# A chat-completions client with three ways of streaming, and the non-streamed call to compare with.
#   python oa_stream.py MODE CONVERSATION...      (a CONVERSATION is QUESTION or QUESTION|MAX_TOKENS; see conv())
#   MODE: plain | helper (chat.completions.stream) | create (stream=True) | usage (stream=True + include_usage)
# Each conversation is a tool loop of its own (a fresh history), its output after a line "== QUESTION".
# In the create modes the deltas are accumulated by hand, and id/name fragments are concatenated, as
# the SDK's accumulator does: a stream that repeats them shows up as a wrong tool name or id.
OPENAI_CLIENT = r"""
import json, re, sys
import openai

mode, conversations = sys.argv[1], [a.rpartition("|") if "|" in a else (a, "", "") for a in sys.argv[2:]]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
WEATHER = {"paris": "cloudy, 18C", "lyon": "rain, 15C"}
client = openai.OpenAI(max_retries=0)


def call(messages, limit):
    kwargs = dict(model="gpt-4.1-mini", messages=messages, tools=TOOLS, **limit)
    if mode == "plain":
        r = client.chat.completions.create(**kwargs)
    elif mode == "helper":
        with client.chat.completions.stream(**kwargs) as s:
            deltas = sum(1 for e in s if e.type in ("content.delta", "refusal.delta", "tool_calls.function.arguments.delta"))
            try:
                r = s.get_final_completion()
            except openai.LengthFinishReasonError as exc:  # the helper raises on a length stop; the text is there
                r = exc.completion
        print(f"streamed deltas: {deltas > 0}", file=sys.stderr)
    if mode in ("plain", "helper"):
        m = r.choices[0].message
        calls = [(c.id, c.function.name, c.function.arguments) for c in m.tool_calls or []]
        return m.content, m.refusal, calls, r.choices[0].finish_reason, "n/a"
    options = {"stream_options": {"include_usage": True}} if mode == "usage" else {}
    content = refusal = finish = None
    calls, usage_chunks, ids = {}, 0, set()
    for chunk in client.chat.completions.create(stream=True, **kwargs, **options):
        ids.add(chunk.id)
        if chunk.usage is not None:
            usage_chunks += 1
            assert chunk.choices == [], "the usage chunk has no choices"
        for ch in chunk.choices:
            d = ch.delta
            if d.content is not None:
                content = (content or "") + d.content
            if d.refusal is not None:
                refusal = (refusal or "") + d.refusal
            for tc in d.tool_calls or []:
                entry = calls.setdefault(tc.index, ["", "", ""])
                entry[0] += tc.id or ""
                entry[1] += (tc.function.name or "") if tc.function else ""
                entry[2] += (tc.function.arguments or "") if tc.function else ""
            finish = ch.finish_reason or finish
    assert len(ids) == 1, f"chunks of one completion carry one id, not {ids}"
    return content, refusal, [tuple(calls[k]) for k in sorted(calls)], finish, usage_chunks


for question, _, max_tokens in conversations:
    print(f"== {question}")
    limit = {"max_completion_tokens": int(max_tokens)} if max_tokens else {}
    messages = [{"role": "user", "content": question}]
    for _ in range(4):
        content, refusal, calls, finish, usage = call(messages, limit)
        if not calls:
            break
        for call_id, name, args in calls:
            assert re.fullmatch(r"call_[A-Za-z0-9]+", call_id) and call_id.count("call_") == 1, f"tool call id {call_id!r}"
            print(f"tool {name}({args})")
        messages.append({"role": "assistant", "content": content,
                         "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]})
        for call_id, name, args in calls:
            city = json.loads(args)["city"]
            messages.append({"role": "tool", "tool_call_id": call_id, "content": WEATHER.get(city.lower(), "unknown")})
    print(f"content: {content!r}")
    print(f"refusal: {refusal!r}")
    print(f"finish: {finish}")
    print(f"usage chunks: {usage}")
"""

# The same over the anthropic SDK.  MODE: plain | helper (messages.stream) | events (create(stream=True), raw events)
#   python an_stream.py MODE CONVERSATION...      (as above; MAX_TOKENS defaults to 1024)
ANTHROPIC_CLIENT = r"""
import json, sys
import anthropic

mode, conversations = sys.argv[1], [a.rpartition("|") if "|" in a else (a, "", "") for a in sys.argv[2:]]
TOOLS = [{"name": "get_weather", "description": "Weather for a city.",
          "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
WEATHER = {"paris": "cloudy, 18C", "lyon": "rain, 15C"}
client = anthropic.Anthropic(max_retries=0)


def call(messages, max_tokens):
    kwargs = dict(model="claude-sonnet-4-5", max_tokens=max_tokens, messages=messages, tools=TOOLS)
    if mode == "plain":
        m = client.messages.create(**kwargs)
    elif mode == "helper":
        with client.messages.stream(**kwargs) as s:
            pieces = list(s.text_stream)
            m = s.get_final_message()
        print(f"text deltas: {len(pieces)}", file=sys.stderr)
    if mode in ("plain", "helper"):
        blocks = [b.model_dump(include={"type", "text", "id", "name", "input"}) for b in m.content]
        return blocks, m.stop_reason
    blocks, partial, stop, kinds = [], {}, None, []
    for ev in client.messages.create(stream=True, **kwargs):
        kinds.append(ev.type)
        if ev.type == "content_block_start":
            assert ev.index == len(blocks), "block indexes are 0..n-1 in start order"
            blocks.append(ev.content_block.model_dump(include={"type", "text", "id", "name", "input"}))
        elif ev.type == "content_block_delta":
            if ev.delta.type == "text_delta":
                blocks[ev.index]["text"] += ev.delta.text
            elif ev.delta.type == "input_json_delta":
                partial[ev.index] = partial.get(ev.index, "") + ev.delta.partial_json
        elif ev.type == "message_delta":
            stop = ev.delta.stop_reason
    for i, text in partial.items():
        blocks[i]["input"] = json.loads(text)
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop", kinds
    return blocks, stop


for question, _, max_tokens in conversations:
    print(f"== {question}")
    messages = [{"role": "user", "content": question}]
    for _ in range(4):
        blocks, stop = call(messages, int(max_tokens or 1024))
        uses = [b for b in blocks if b["type"] == "tool_use"]
        if stop != "tool_use":
            break
        for b in uses:
            assert b["id"].startswith("toolu_"), b["id"]
            print(f"tool {b['name']}({json.dumps(b['input'], sort_keys=True)})")
        messages.append({"role": "assistant", "content": blocks})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b["id"], "content": WEATHER.get(b["input"]["city"].lower(), "unknown")} for b in uses]})
    print(f"text: {''.join(b.get('text') or '' for b in blocks if b['type'] == 'text')!r}")
    print(f"stop: {stop}")
"""


def _scripts(tmp_path: Path) -> dict[str, list[str]]:
    oa, an = write_once(tmp_path / "oa_stream.py", OPENAI_CLIENT), write_once(tmp_path / "an_stream.py", ANTHROPIC_CLIENT)
    return {"openai": [sys.executable, str(oa)], "anthropic": [sys.executable, str(an)]}


def record(tmp_path: Path, confdir: Path, provider: FakeProvider, argv: list[str], name: str, *extra: str) -> tuple[Path, Any]:
    cassette = tmp_path / name
    proc = blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *extra, *remote_args(provider.url), "--", *argv)
    return cassette, proc


def replay(cassette: Path, confdir: Path, argv: list[str], *extra: str) -> Any:
    return blackbox("replay", str(cassette), "--confdir", str(confdir), *extra, "--", *argv)


def neutral(cassette: Path, *, drop_stream: bool = True) -> list[tuple[str, Any]]:
    """The cassette's steps (types and payloads, no timestamps), with ``params.stream`` and token counts taken out.

    Token counts are the answer's, and how it came: a chat-completions stream carries usage only when the request
    asked for it (``stream_options.include_usage``), a whole body always does.
    """
    trace = load_trace(cassette)
    assert verify_trace(trace) == [], verify_trace(trace)
    steps = []
    for step in trace.steps:
        payload = json.loads(json.dumps(step.payload))
        if step.type == "model_output":
            payload.pop("tokens", None)
        if step.type == "model_input" and drop_stream:
            params = payload.get("params") or {}
            params.pop("stream", None)
            if not params:
                payload.pop("params", None)
        steps.append((step.type, payload))
    return steps


def stream_flags(cassette: Path) -> list[Any]:
    return [(s.payload.get("params") or {}).get("stream") for s in load_trace(cassette).steps if s.type == "model_input"]


def streamed(provider: FakeProvider) -> list[bool]:
    """For each request the provider got: did it ask for a stream?"""
    return [bool((r["body"] or {}).get("stream")) for r in provider.requests]


class Recordings:
    """The module's recordings, each made once and shared by the tests that only compare with it or replay it.

    A plain (non-streamed) recording of a client's session is the same whichever streamed mode a test compares it
    with: it is recorded once a test session for all of them — once for every xdist worker too (tests/once.py: the
    first worker to ask records it in the session's shared folder, the others read it), not once per test or worker.
    Read only: replay does not write to a cassette, and no test here changes one it was given.
    """

    def __init__(self, folder: Path, confdir: Path) -> None:
        self.folder, self.confdir = folder, confdir
        self.scripts = _scripts(folder)

    def plain(self, argv: list[str], script: list[dict[str, Any]] | None = None, **fake: Any) -> tuple[Path, Any]:
        """``argv`` recorded against a fake provider answering with ``script``; it asked for no stream."""
        return self._record(argv, script, fake, streaming=False)

    def streamed(self, argv: list[str], script: list[dict[str, Any]] | None = None, **fake: Any) -> tuple[Path, Any]:
        """``argv`` recorded against a fake provider (``script``, ``fake`` options); every request asked for a stream."""
        return self._record(argv, script, fake, streaming=True)

    def replayed(self, cassette: Path, argv: list[str], recorded: Any) -> Any:
        """``assert_replays`` of ``cassette`` by ``argv``, once for every test (and worker) that asks the same."""

        def make() -> Any:
            return assert_replays(cassette, self.confdir, argv, recorded)

        return once(self.folder, json.dumps(["replay", str(cassette), argv]), make)

    def _record(self, argv: list[str], script: list[dict[str, Any]] | None, fake: dict[str, Any], *, streaming: bool) -> tuple[Path, Any]:
        key = json.dumps([argv, script, fake, streaming], sort_keys=True, default=lambda f: f.__name__)  # a responder by name

        def make() -> tuple[Path, Any]:
            name = f"run-{name_for(key)}.json"
            (self.folder / name).unlink(missing_ok=True)  # an attempt that failed (in another worker) left its file
            with FakeProvider(None if script is None else list(script), **fake) as provider:
                cassette, run = record(self.folder, self.confdir, provider, argv, name)
                assert run.returncode == 0, run.stderr
                asked = streamed(provider)
                assert (bool(asked) and all(asked)) if streaming else not any(asked), asked
            return cassette, run

        return once(self.folder, key, make)


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> Recordings:
    return Recordings(session_folder(tmp_path_factory, "streaming-recordings"), confdir)


def record_both_ways(
    recordings: Recordings, plain: list[str], streaming: list[str], script: list[dict[str, Any]] | None = None, **fake: Any
) -> tuple[Path, Any, Path, Any]:
    """Record the same conversation non-streamed and streamed; both must succeed and give the same steps."""
    flat, flat_run = recordings.plain(plain, script, **fake)
    live, live_run = recordings.streamed(streaming, script, **fake)
    assert _answer_lines(live_run.stdout) == _answer_lines(flat_run.stdout)
    assert neutral(live) == neutral(flat)
    assert set(stream_flags(live)) == {True} and set(stream_flags(flat)) == {None}
    return flat, flat_run, live, live_run


def _answer_lines(stdout: str) -> list[str]:
    """What the agent answered, without the line about usage chunks (which only a stream can have)."""
    return [line for line in stdout.splitlines() if not line.startswith("usage chunks:")]


def conv(question: str, max_tokens: int | None = None) -> str:
    """One conversation argument of the stream clients: ``QUESTION`` or ``QUESTION|MAX_TOKENS``."""
    return question if max_tokens is None else f"{question}|{max_tokens}"


LENGTH_STOP = [{"text": "The weather in Paris is mostly cl", "stop": "length"}]
REFUSAL = [{"text": "I'm sorry, I can't help with that.", "stop": "refusal"}]

# The conversations each client holds in one process, in this order (the tool round first: its tool-call ids are
# call-0 and call-1 of the cassette): a tool round, a stop at the token limit, and (OpenAI only) a refusal. One
# recording a mode, plain and streamed, serves every test that checks one of them; each checks its own conversation.
SESSIONS = {
    "openai": {"tool round": conv(QUESTION), "length": conv("What's new?", 8), "refusal": conv("Do it.")},
    "anthropic": {"tool round": conv(QUESTION), "length": conv("What's new?", 8)},
}
SCRIPTED = {"What's new?": LENGTH_STOP[0], "Do it.": REFUSAL[0]}  # the fake's answer to a conversation's question


def session_model(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """The sessions' fake model: the scripted answer for the length and refusal questions, else the weather model."""
    first = (body.get("messages") or [{}])[0].get("content")
    return dict(SCRIPTED[first]) if isinstance(first, str) and first in SCRIPTED else weather_answer(kind, body)


class Session:
    """A client's session in one mode: recorded plain and in ``mode``, the same steps both ways, replayed once."""

    def __init__(self, recordings: Recordings, provider: str, mode: str, *, replay: bool = True) -> None:
        self.names = list(SESSIONS[provider])
        client, conversations = recordings.scripts[provider], list(SESSIONS[provider].values())
        self.argv = [*client, mode, *conversations]
        _, _, self.cassette, self.run = record_both_ways(recordings, [*client, "plain", *conversations], self.argv, responder=session_model)
        if replay:
            recordings.replayed(self.cassette, self.argv, self.run)

    def out(self, name: str) -> str:
        """What the client printed for conversation ``name`` (the lines after its ``== QUESTION`` line)."""
        parts = re.split(r"^== .*\n", self.run.stdout, flags=re.M)
        assert len(parts) == len(self.names) + 1 and parts[0] == "", self.run.stdout
        return parts[1 + self.names.index(name)]

    def steps(self, name: str) -> list[tuple[str, Any]]:
        """The neutral steps of conversation ``name``: from the model call that opens its history to the next one."""
        steps = neutral(self.cassette)
        assert steps[-1][0] == "metadata" and steps[-1][1]["event"] == "run_completed", steps[-1]
        opens = [i for i, (kind, payload) in enumerate(steps) if kind == "model_input" and len(payload["messages"]) == 1]
        assert len(opens) == len(self.names), opens
        bounds = [*opens, len(steps) - 1]
        at = self.names.index(name)
        return steps[bounds[at] : bounds[at + 1]]


def assert_replays(cassette: Path, confdir: Path, argv: list[str], recorded: Any, *extra: str) -> Any:
    rep = replay(cassette, confdir, argv, *extra)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == recorded.stdout
    calls = sum(1 for s in load_trace(cassette).steps if s.type == "model_input")
    assert f"{calls} of {calls} model calls served" in rep.stderr
    return rep


# --------------------------------------------------------------------------- 1. the official Python SDKs


@pytest.mark.parametrize("mode", ["helper", "create", "usage"])
def test_openai_streamed_tool_round_records_like_a_plain_one_and_replays(mode: str, recordings: Recordings) -> None:
    # Recorded plain and streamed with the same steps, and replayed: a synthesized stream the same client accumulates
    # to the same output (Session).
    session = Session(recordings, "openai", mode)
    out = session.out("tool round")
    assert out.startswith('tool get_weather({"city":"Paris"})\ntool get_weather({"city":"Lyon"})\n'), out
    assert "content: 'Paris: cloudy, 18C. Lyon: rain, 15C.'" in out
    assert f"usage chunks: {1 if mode == 'usage' else 0 if mode == 'create' else 'n/a'}" in out
    steps = session.steps("tool round")
    assert [t for t, _ in steps] == ["model_input", "model_output", "tool_call", "tool_result", "tool_call", "tool_result",
                                     "model_input", "model_output"]  # fmt: skip
    assert steps[1][1]["calls"] == [
        {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}},
        {"toolCallId": "call-1", "toolName": "get_weather", "toolInput": {"city": "Lyon"}},
    ]


def test_openai_weather_agent_streams_through_the_stream_helper(recordings: Recordings, confdir: Path) -> None:
    agent = [sys.executable, str(EXAMPLES / "openai_weather_agent.py")]
    _, _, live, live_run = record_both_ways(recordings, [*agent, QUESTION], [*agent, "--stream", QUESTION])
    assert live_run.stdout.strip() == "Paris: cloudy, 18°C. Lyon: rain, 15°C."
    assert load_trace(live).steps[-1].payload == {"event": "run_completed", "status": "success", "result": live_run.stdout.strip()}
    rep = assert_replays(live, confdir, [*agent, "--stream", QUESTION], live_run)
    assert "Let me check the weather." in rep.stderr  # the narration arrived as content deltas


@pytest.mark.parametrize("mode", ["helper", "events"])
def test_anthropic_streamed_tool_round_records_like_a_plain_one_and_replays(mode: str, recordings: Recordings) -> None:
    session = Session(recordings, "anthropic", mode)
    out = session.out("tool round")
    assert out.startswith('tool get_weather({"city": "Paris"})\ntool get_weather({"city": "Lyon"})\n'), out
    assert out.endswith("text: 'Paris: cloudy, 18C. Lyon: rain, 15C.'\nstop: end_turn\n"), out
    steps = session.steps("tool round")
    assert [t for t, _ in steps] == ["model_input", "model_output", "tool_call", "tool_result", "tool_call", "tool_result",
                                     "model_input", "model_output"]  # fmt: skip
    assert steps[1][1] == {
        "type": "tool_calls",
        "text": "Let me check the weather.",
        "calls": [
            {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}},
            {"toolCallId": "call-1", "toolName": "get_weather", "toolInput": {"city": "Lyon"}},
        ],
    }


def test_anthropic_weather_agent_streams_through_messages_stream(recordings: Recordings, confdir: Path) -> None:
    agent = [sys.executable, str(EXAMPLES / "anthropic_weather_agent.py")]
    _, _, live, live_run = record_both_ways(recordings, [*agent, QUESTION], [*agent, "--stream", QUESTION])
    assert live_run.stdout.strip() == "Paris: cloudy, 18°C. Lyon: rain, 15°C."
    assert_replays(live, confdir, [*agent, "--stream", QUESTION], live_run)


@pytest.mark.parametrize(
    ("provider", "mode"),
    [("openai", "helper"), ("openai", "create"), ("openai", "usage"), ("anthropic", "helper"), ("anthropic", "events")],
)
def test_streamed_length_stop(provider: str, mode: str, recordings: Recordings) -> None:
    session = Session(recordings, provider, mode)
    out = session.out("length")
    stop = "finish: length" if provider == "openai" else "stop: max_tokens"
    assert stop in out and "The weather in Paris is mostly cl" in out, out
    steps = session.steps("length")
    assert steps[0][1]["params"] == {"maxTokens": 8}  # stream taken out (neutral)
    assert steps[1:] == [("model_output", {"type": "final_answer", "text": "The weather in Paris is mostly cl", "stop": "length"})]


@pytest.mark.parametrize("mode", ["helper", "create", "usage"])
def test_openai_streamed_refusal(mode: str, recordings: Recordings) -> None:
    session = Session(recordings, "openai", mode)
    out = session.out("refusal")
    assert "content: None\nrefusal: \"I'm sorry, I can't help with that.\"\nfinish: stop\n" in out, out
    refused = ("model_output", {"type": "final_answer", "text": "I'm sorry, I can't help with that.", "stop": "refusal"})
    assert session.steps("refusal")[1:] == [refused]


def test_anthropic_streamed_refusal_is_an_error_for_the_agent_and_fails_the_run(tmp_path: Path, confdir: Path) -> None:
    """Anthropic refusals are not recordable: the final event is held back and replaced by the
    provider's error event, so the SDK raises instead of carrying on with an unrecorded answer."""
    client = _scripts(tmp_path)["anthropic"]
    with FakeProvider([{"text": "I can't help with that.", "stop": "refusal"}]) as fake:
        cassette, rec = record(tmp_path, confdir, fake, [*client, "helper", "Do it."], "refusal.json")
    assert rec.returncode != 0
    assert (
        "anthropic.APIStatusError" in rec.stderr and 'BlackboxUnsupportedError: stop_reason: not recorded (it was "refusal")' in rec.stderr
    )
    assert "stop: refusal" not in rec.stdout  # the agent never saw the refusal complete
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    assert [s.type for s in trace.steps] == ["metadata"]
    assert trace.steps[0].payload["event"] == "run_failed"


def test_a_tool_call_turn_streamed_with_empty_content_is_recorded_and_replayed(tmp_path: Path, confdir: Path) -> None:
    """An OpenAI-compatible server that opens a streamed tool-call turn with content "": recorded (text ""), replayed."""
    client = _scripts(tmp_path)["openai"]
    script: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}], "content": ""},
        {"text": "Paris: cloudy."},
    ]
    with FakeProvider(script) as fake:
        cassette, rec = record(tmp_path, confdir, fake, [*client, "helper", QUESTION], "empty-content.json")
    assert rec.returncode == 0, rec.stderr
    calls = next(s.payload for s in load_trace(cassette).steps if s.type == "model_output")
    assert calls["type"] == "tool_calls" and calls["text"] == ""
    assert_replays(cassette, confdir, [*client, "helper", QUESTION], rec)


@pytest.mark.parametrize(
    ("provider", "answer", "named"),
    [
        ("anthropic", {"text": "Paris", "stop": "stop_sequence"}, '"stop_sequence"'),
    ],
)
def test_a_refused_streamed_answer_makes_the_sdk_raise(
    provider: str, answer: dict[str, Any], named: str, tmp_path: Path, confdir: Path
) -> None:
    """13.3: a stop_sequence stop, refused in a stream: the SDK raises and nothing is recorded."""
    client = _scripts(tmp_path)[provider]
    with FakeProvider([answer]) as fake:
        cassette, rec = record(tmp_path, confdir, fake, [*client, "helper", QUESTION], "refused.json")
    assert rec.returncode != 0
    error = "openai.APIError" if provider == "openai" else "anthropic.APIStatusError"
    assert error in rec.stderr and named in rec.stderr, rec.stderr
    trace = load_trace(cassette)
    assert [s.type for s in trace.steps] == ["metadata"] and trace.steps[0].payload["event"] == "run_failed"


# --------------------------------------------------------------------------- 2. the Node SDK


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH")
def test_node_sdk_streams_record_and_replay(recordings: Recordings, confdir: Path) -> None:
    agent = ["node", str(EXAMPLES / "node" / "weather_agent.js")]
    _, _, live, live_run = record_both_ways(recordings, [*agent, QUESTION], [*agent, "--stream", QUESTION])
    assert live_run.stdout.strip() == "Paris: cloudy, 18°C. Lyon: rain, 15°C."
    assert_replays(live, confdir, [*agent, "--stream", QUESTION], live_run)


# --------------------------------------------------------------------------- 3. content-encoded streams


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_gzip_encoded_stream_records_the_same_steps(provider: str, recordings: Recordings, tmp_path: Path, confdir: Path) -> None:
    # The same session unencoded: the streamed recording the tool-round test of this mode replays (made once for both).
    identity = Session(recordings, provider, "create" if provider == "openai" else "events", replay=False)
    with FakeProvider(gzip_streams=True, responder=session_model) as fake:
        _, rec = record(tmp_path, confdir, fake, identity.argv, "gzip.json")
        assert rec.returncode == 0, rec.stderr
        # The provider really gzipped them: the SDK asked for gzip and mitmproxy passed that on.
        assert all("gzip" in r["headers"].get("accept-encoding", "") for r in fake.requests)
        # Each body ended where the provider ended it, so Anthropic's SDK (which reads a stream to its end; OpenAI's closes
        # a stream's connection itself, with no proxy too) kept one connection for every call. A gzip trailer decodes to
        # nothing: sent as a chunk of its own, that was chunked encoding's end, and the real end was read as a response.
        if provider == "anthropic":
            assert fake.connections == 1
    assert rec.stdout == identity.run.stdout
    assert neutral(tmp_path / "gzip.json") == neutral(identity.cassette)
    assert_replays(tmp_path / "gzip.json", confdir, identity.argv, rec)


# --------------------------------------------------------------------------- 4. streams that do not complete

ONE_CALL = r"""
import sys
provider, out = sys.argv[1], open(sys.argv[2], "w")
try:
    if provider == "openai":
        import openai
        client = openai.OpenAI(max_retries=0)
        stream = client.chat.completions.create(model="gpt-4.1-mini", stream=True, messages=[{"role": "user", "content": "Tell me a story."}])
        for chunk in stream:
            for ch in chunk.choices:
                out.write(ch.delta.content or ""); out.flush()
    else:
        import anthropic
        client = anthropic.Anthropic(max_retries=0)
        with client.messages.stream(model="claude-sonnet-4-5", max_tokens=100, messages=[{"role": "user", "content": "Tell me a story."}]) as s:
            for text in s.text_stream:
                out.write(text); out.flush()
except Exception as exc:
    print(f"{type(exc).__name__}: {exc}")
    sys.exit(1)
print("completed")
"""

STORY = "Once upon a time there was a proxy that recorded every word the model said, and it never lost one."


def _tool_round_then(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}, answer]


# Each provider once, one of them gzip'd: the tee's other edge cases are tests/session/test_stream_capture.py.
@pytest.mark.parametrize(("provider", "gzip"), [("openai", False), ("anthropic", True)], ids=["identity-openai", "gzip-anthropic"])
def test_stream_cut_mid_way_is_not_recorded(provider: str, gzip: bool, tmp_path: Path, confdir: Path) -> None:
    script = tmp_path / "one_call.py"
    script.write_text(ONE_CALL)
    seen = tmp_path / "seen.txt"
    with FakeProvider([{"stream_cut": True, "text": STORY}], gzip_streams=gzip) as fake:
        cassette, rec = record(tmp_path, confdir, fake, [sys.executable, str(script), provider, str(seen)], "cut.json")
        assert len(fake.requests) == 1  # not retried
    assert rec.returncode == 1, rec.stderr
    assert "completed" not in rec.stdout
    assert 0 < len(seen.read_text()) < len(STORY)  # the agent did see the first part as it came
    assert "a streamed model call did not complete" in rec.stderr
    assert "it was not recorded" in rec.stderr
    assert "0 model calls" in rec.stderr
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    assert [s.type for s in trace.steps] == ["metadata"]
    assert trace.steps[0].payload["event"] == "run_failed"


def test_stream_cut_after_a_completed_call_keeps_only_the_completed_one(tmp_path: Path, confdir: Path) -> None:
    client = _scripts(tmp_path)["openai"]
    with FakeProvider(_tool_round_then({"stream_cut": True, "text": STORY})) as fake:
        cassette, rec = record(tmp_path, confdir, fake, [*client, "create", "Weather in Paris?"], "cut.json")
        assert len(fake.requests) == 2
    assert rec.returncode != 0
    assert "did not complete" in rec.stderr
    assert [s.type for s in load_trace(cassette).steps] == ["model_input", "model_output", "metadata"]


def test_non_streamed_call_cut_off_is_not_called_a_stream(tmp_path: Path, confdir: Path) -> None:
    client = _scripts(tmp_path)["openai"]
    with FakeProvider([{"stream_cut": True, "text": STORY}]) as fake:  # a JSON body promised whole, half sent
        cassette, rec = record(tmp_path, confdir, fake, [*client, "plain", "Tell me a story."], "cut.json")
        assert len(fake.requests) == 1
    assert rec.returncode != 0
    assert "a forwarded model call failed (" in rec.stderr and "it was not recorded" in rec.stderr
    assert "a streamed model call" not in rec.stderr
    assert [s.type for s in load_trace(cassette).steps] == ["metadata"]


EARLY_EXIT = r"""
import sys, openai, anthropic
ask = [{"role": "user", "content": "Tell me a long story please, with many words in it."}]
if sys.argv[1] == "openai":
    s = openai.OpenAI(max_retries=0).chat.completions.create(model="gpt-4.1-mini", stream=True, messages=ask)
    for i, chunk in enumerate(s):
        if i == 2:
            break
    s.close()
else:
    with anthropic.Anthropic(max_retries=0).messages.stream(model="claude-sonnet-4-5", max_tokens=100, messages=ask) as s:
        for i, text in enumerate(s.text_stream):
            if i == 1:
                break
print("stopped reading early")
"""


@pytest.mark.parametrize("provider", ["anthropic"])  # what only a real proxy shows: the client's hang-up
def test_client_hanging_up_mid_stream_is_not_recorded(provider: str, tmp_path: Path, confdir: Path) -> None:
    script = tmp_path / "early.py"
    script.write_text(EARLY_EXIT)
    with FakeProvider(stream_delay_ms=300) as fake:  # slow enough that the agent leaves long before the end
        cassette, rec = record(tmp_path, confdir, fake, [sys.executable, str(script), provider], "early.json")
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout == "stopped reading early\n"
    assert "a streamed model call did not complete (the connection failed: Client disconnected.); it was not recorded" in rec.stderr
    assert [s.type for s in load_trace(cassette).steps] == ["metadata"]


ERROR_EVENTS = {
    "openai": [
        {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1-mini",
         "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Once upon"}, "finish_reason": None}]},
        {"error": {"message": "The server had an error while processing your request.", "type": "server_error", "param": None, "code": None}},
    ],
    "anthropic": [
        {"type": "message_start", "message": {"id": "msg_x", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
         "content": [], "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Once upon"}},
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ],
}  # fmt: skip


@pytest.mark.parametrize("provider", ["openai"])  # Anthropic's error event: tests/session/test_stream_capture.py
def test_upstream_error_event_is_not_recorded_and_the_log_says_why(provider: str, tmp_path: Path, confdir: Path) -> None:
    script = tmp_path / "one_call.py"
    script.write_text(ONE_CALL)
    with FakeProvider([{"raw_events": ERROR_EVENTS[provider]}]) as fake:
        cassette, rec = record(tmp_path, confdir, fake, [sys.executable, str(script), provider, str(tmp_path / "seen.txt")], "err.json")
        assert len(fake.requests) == 1
    assert rec.returncode == 1
    assert ("APIError" if provider == "openai" else "APIStatusError") in rec.stdout
    assert "a streamed model call did not complete" in rec.stderr
    detail = "The server had an error while processing your request." if provider == "openai" else "overloaded_error: Overloaded"
    assert detail in rec.stderr  # the log names the error event, not just "it ended early"
    assert [s.type for s in load_trace(cassette).steps] == ["metadata"]


# --------------------------------------------------------------------------- 5. stream vs non-stream at replay


@pytest.mark.parametrize("recorded_streaming", [False, True], ids=["plain-recording", "streamed-recording"])
def test_stream_flag_is_part_of_the_input(recorded_streaming: bool, recordings: Recordings, tmp_path: Path, confdir: Path) -> None:
    agent = [sys.executable, str(EXAMPLES / "openai_weather_agent.py")]
    as_recorded = [*agent, *(["--stream"] if recorded_streaming else []), QUESTION]
    other_form = [*agent, *([] if recorded_streaming else ["--stream"]), QUESTION]
    # The weather agent's two recordings the stream-helper test above compares (made once for both tests).
    cassette, rec = (recordings.streamed if recorded_streaming else recordings.plain)(as_recorded)
    assert rec.returncode == 0, rec.stderr

    # strict: the other form is a divergence at the first call, naming params.stream
    report = tmp_path / "report.json"
    rep = replay(cassette, confdir, other_form, "--report", str(report))
    assert rep.returncode != 0
    assert "params.stream" in rep.stderr
    status = orjson.loads(report.read_bytes())
    assert status["first_divergence"]["step"] == 0
    assert "params.stream" in json.dumps(status["first_divergence"])

    # sequence: served, in the form the agent asked for (a JSON body to a stream request would yield no events)
    rep = replay(cassette, confdir, other_form, "--match", "sequence")
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert ("Let me check the weather." in rep.stderr) is (not recorded_streaming)  # deltas printed only when it streams


# --------------------------------------------------------------------------- 6. optional pacing (mitmdump option)

# One streamed call per provider named, in that order, in one process: each call's text on stdout, and on stderr the
# times its chunks arrived, counted from just before that call was made (after its SDK's import).
PACED_CLIENT = r"""
import sys, time
question, providers = sys.argv[1], sys.argv[2:]
ask = [{"role": "user", "content": question}]
for provider in providers:
    stamps, text = [], ""
    if provider == "openai":
        import openai
        start = time.monotonic()
        for chunk in openai.OpenAI(max_retries=0).chat.completions.create(model="gpt-4.1-mini", stream=True, messages=ask):
            stamps.append(time.monotonic() - start)
            for ch in chunk.choices:
                text += ch.delta.content or ""
    else:
        import anthropic
        start = time.monotonic()
        for ev in anthropic.Anthropic(max_retries=0).messages.create(model="claude-sonnet-4-5", max_tokens=1024, stream=True, messages=ask):
            stamps.append(time.monotonic() - start)
            if ev.type == "content_block_delta" and ev.delta.type == "text_delta":
                text += ev.delta.text
    print(text)
    print(f"stamps {provider}: " + " ".join(f"{t:.3f}" for t in stamps), file=sys.stderr)
"""


FIRST_EVENT_CLIENT = r"""
import pathlib, sys
import openai
seen, question = pathlib.Path(sys.argv[1]), sys.argv[2]
text = ""
for chunk in openai.OpenAI(max_retries=0).chat.completions.create(model="gpt-4.1-mini", stream=True, messages=[{"role": "user", "content": question}]):
    seen.touch()  # the first event is here (the provider holds the rest until this file exists)
    for ch in chunk.choices:
        text += ch.delta.content or ""
print(text)
"""


def _stamps(stderr: str, provider: str) -> list[float]:
    """The arrival times the paced client printed for ``provider``'s call."""
    found = re.findall(rf"^stamps {provider}: ([\d. ]+)$", stderr, re.MULTILINE)
    assert len(found) == 1, stderr
    return [float(w) for w in found[0].split()]


def _mitmdump(
    tmp_path: Path, confdir: Path, mode: str, cassette: Path, *sets: str, quiet: bool = True
) -> tuple[subprocess.Popen[str], int]:
    port = free_port()
    mitmdump = Path(sys.executable).with_name("mitmdump")
    argv = [str(mitmdump), *(["-q"] if quiet else []), "--listen-host", "127.0.0.1", "--listen-port", str(port), "--set", f"confdir={confdir}",
            "-s", str(ROOT / "addon" / "blackbox_addon.py"), "--set", f"blackbox_mode={mode}", "--set", f"blackbox_cassette={cassette}"]  # fmt: skip
    for option in sets:
        argv += ["--set", option]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for_port(proc, port, "mitmdump")
    return proc, port


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    return out


PACED = ("openai", "anthropic")  # the paced client's calls, in order: one recording and one replay of each kind for both
PACE_MS = 50  # the pace asked for: each later event this long after the one before (a lower bound no load can break)


class Paced:
    """The paced client recorded once (one call per provider), then replayed three ways: mitmdump with the addon's
    defaults, mitmdump with ``blackbox_stream_delay_ms``, and ``blackbox replay --stream-delay-ms``."""

    def __init__(self, folder: Path, confdir: Path) -> None:
        from blackbox_mitm.proxy.environment import client_env

        self.client, self.cassette, self.report = folder / "paced.py", folder / "run.json", folder / "report.json"
        self.client.write_text(PACED_CLIENT)
        # Echoed back by the fake model: long enough for several 64-character content deltas in the replayed stream.
        question = "Tell me slowly, one phrase at a time, about the weather in Paris, in Lyon, in Oslo and in Rome, " * 2
        self.argv = [sys.executable, str(self.client), question, *PACED]
        with FakeProvider() as fake:
            self.rec = blackbox("record", "-o", str(self.cassette), "--confdir", str(confdir), *remote_args(fake.url), "--", *self.argv)
            assert self.rec.returncode == 0, self.rec.stderr
        self.texts = self.rec.stdout.splitlines()
        assert len(self.texts) == len(PACED), self.rec.stdout

        def run(*sets: str) -> tuple[str, str, str]:
            self.report.unlink(missing_ok=True)
            proc, port = _mitmdump(
                folder, confdir, "replay", self.cassette, f"blackbox_report={self.report}", *sets, quiet=False
            )  # its info log
            try:
                env = client_env(f"http://127.0.0.1:{port}", confdir=confdir)
                env["OPENAI_API_KEY"] = env["ANTHROPIC_API_KEY"] = "sk-test-not-a-real-key-000"
                out = subprocess.run(self.argv, env=env, capture_output=True, text=True, timeout=120)
            finally:
                log = _stop(proc)
            assert out.returncode == 0, out.stderr + log
            assert orjson.loads(self.report.read_bytes())["model_calls_served"] == len(PACED), log
            return out.stdout, out.stderr, log

        self.fast_out, self.fast_err, self.fast_log = run()
        self.paced_out, self.paced_err, self.paced_log = run(f"blackbox_stream_delay_ms={PACE_MS}")
        # The same through `blackbox replay --stream-delay-ms`.
        self.cli = blackbox(
            "replay", str(self.cassette), "--confdir", str(confdir), "--stream-delay-ms", str(PACE_MS), "-v", "--", *self.argv
        )


@pytest.fixture(scope="module")
def paced_replays(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> Paced:
    return Paced(tmp_path_factory.mktemp("paced"), confdir)


@pytest.mark.parametrize("provider", PACED)
def test_replay_pacing_delivers_a_stream_event_by_event(provider: str, paced_replays: Paced) -> None:
    run, i = paced_replays, PACED.index(provider)
    fast, paced = _stamps(run.fast_err, provider), _stamps(run.paced_err, provider)
    assert run.fast_out.splitlines()[i] == run.paced_out.splitlines()[i] == run.texts[i]
    assert run.fast_out == run.paced_out == run.rec.stdout
    assert len(paced) == len(fast) >= 4
    # What the proxy scheduled, not what a loaded machine's clocks saw: each event its own chunk, PACE_MS after the one before.
    scheduled = _paced_waits(run.paced_log)
    assert len(scheduled) == len(PACED), run.paced_log[-3000:]  # one paced stream per call, in the client's order
    waits = scheduled[i]
    assert waits == [0, *[PACE_MS] * (len(waits) - 1)] and len(waits) >= len(paced), run.paced_log[-3000:]
    assert _paced_waits(run.fast_log) == [], run.fast_log  # off by default: not paced
    assert paced == sorted(paced)  # the client got them in order, one by one
    # A bound no load can break: the last event cannot reach the client before the proxy's waits have all passed
    # (counted from just before the client made the call, so before the proxy got it).
    assert paced[-1] >= PACE_MS / 1000 * (len(paced) - 1)

    # The same through `blackbox replay --stream-delay-ms`.
    assert run.cli.returncode == 0, run.cli.stderr
    assert run.cli.stdout == run.rec.stdout
    assert _paced_waits(run.cli.stderr) == scheduled, run.cli.stderr
    assert _paced_waits(run.cli.stderr)[i] == waits
    assert len(_stamps(run.cli.stderr, provider)) == len(paced)


def _paced_waits(log: str) -> list[list[int]]:
    """The waits (ms) the proxy's pacer asked before each event, one list per paced stream, from its log lines."""
    found = re.findall(r"blackbox: paced \d+ events, each its own chunk, after waits of \(ms\): ([\d ]+)", log)
    return [[int(w) for w in line.split()] for line in found]


def test_pacer_plays_back_whole_events() -> None:
    from blackbox_mitm.proxy.pacing import split_events

    body = b'event: a\ndata: {"x":1}\n\ndata: [DONE]\n\n'
    assert split_events(body) == [b'event: a\ndata: {"x":1}\n\n', b"data: [DONE]\n\n"]
    assert split_events(b"data: 1\r\n\r\ndata: 2") == [b"data: 1\r\n\r\n", b"data: 2"]


# --------------------------------------------------------------------------- the record path passes events on as they come


def test_recording_passes_events_through_as_they_arrive(tmp_path: Path, confdir: Path) -> None:
    """The agent sees the first delta before the provider sends the second: the recorder does not buffer.

    Causal, not timed: the fake provider holds every event after the first until
    the client says it has the first (a file it creates). A proxy that buffered the
    stream would hold that first event back, and the provider would wait in vain.
    """
    client = tmp_path / "first.py"
    client.write_text(FIRST_EVENT_CLIENT)
    seen = tmp_path / "first-event-seen"
    waited: list[bool] = []

    def hold_until_seen(index: int) -> None:
        deadline = time.monotonic() + 60  # generous: only a buffering proxy runs it out
        while not seen.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        waited.append(seen.exists())

    with FakeProvider(before_event=hold_until_seen) as fake:
        cassette, rec = record(
            tmp_path, confdir, fake, [sys.executable, str(client), str(seen), "Say something long enough to stream."], "run.json"
        )
        assert rec.returncode == 0, rec.stderr
    assert len(waited) >= 3 and all(waited), waited  # every later event went out only after the client had the first
    assert neutral(cassette)[1][1]["text"] == rec.stdout.strip()
