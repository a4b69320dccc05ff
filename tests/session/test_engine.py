"""The session engine in plain Python: what it answers, forwards, records and refuses (no proxy, no sockets)."""

from __future__ import annotations

import base64
import errno
import json
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.cassette.journal import Journal
from blackbox_mitm.codecs import openai_chat
from blackbox_mitm.codecs.verified import verify_trace
from blackbox_mitm.session.build import record_session, replay_session
from blackbox_mitm.session.engine import Answer, Forward, ModelRequest, Session
from blackbox_mitm.session.recorder import secrets_from_environ, secrets_from_request
from blackbox_mitm.session.release import DEFAULT_SETTLE_MS

KEY = "sk-test-0123456789abcdefghijklmnop"
PATH = "/v1/chat/completions"


def _body(prompt: str = "What's the weather in Paris?", **extra: Any) -> bytes:
    return json.dumps({"model": "gpt-4.1", "messages": [{"role": "user", "content": prompt}], **extra}).encode()


def _answer(text: str = "Sunny.") -> bytes:
    message = {"role": "assistant", "content": text}
    return orjson.dumps(
        {"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    )


def _req(body: bytes, *, headers: dict[str, str] | None = None, path: str = PATH) -> ModelRequest:
    return ModelRequest(path=path, headers={"authorization": f"Bearer {KEY}", **(headers or {})}, body=body)


def _record_one(session: Session, body: bytes, answer: bytes = _answer(), **kw: Any) -> Answer | None:
    action = session.on_request(_req(body, **kw))
    assert isinstance(action, Forward), action
    return session.on_response(action.ticket, 200, answer)


def _finished(session: Session, path: Path) -> Any:
    assert session.recorder is not None
    session.recorder.finish(path, exit_code=0)
    return load_trace(path)


# --- recording --------------------------------------------------------------------------


def test_a_recorded_call_becomes_input_and_output_steps(tmp_path: Path) -> None:
    session = record_session(tmp_path / "run.json")
    assert _record_one(session, _body()) is None  # the provider's answer goes to the agent untouched
    trace = _finished(session, tmp_path / "run.json")
    assert [s.type for s in trace.steps] == ["model_input", "model_output", "metadata"]
    assert trace.steps[1].payload == {"type": "final_answer", "text": "Sunny."}
    assert session.problems() == []


def test_a_refused_request_is_answered_here_and_not_recorded(tmp_path: Path) -> None:
    session = record_session(tmp_path / "run.json")
    action = session.on_request(_req(_body(n=2)))
    assert isinstance(action, Answer) and action.status == 400
    assert b"BlackboxUnsupportedError: n" in action.body and b"(it was 2)" in action.body
    assert session.refused and session.problems()
    assert session.recorder is not None and session.recorder.model_calls == 0


def test_a_body_nested_ten_thousand_deep_is_refused_never_forwarded(tmp_path: Path) -> None:
    session = record_session(tmp_path / "run.json")
    deep = b'{"model": "m", "messages": [{"role": "user", "content": ' + b"[" * 10_000 + b"]" * 10_000 + b"}]}"
    action = session.on_request(_req(deep))
    assert isinstance(action, Answer) and action.status == 400
    assert b"nested" in action.body or b"BlackboxUnsupportedError" in action.body


def test_an_unexpected_failure_in_a_codec_is_answered_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = record_session(tmp_path / "run.json")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("surprise")

    monkeypatch.setattr(openai_chat, "decode_request", broken)
    action = session.on_request(_req(_body()))
    assert isinstance(action, Answer) and action.status == 400
    assert b"could not handle this model call" in action.body and b"not forwarded" in action.body


def test_a_lone_surrogate_in_a_prompt_is_recorded_with_a_key_known(tmp_path: Path) -> None:
    session = record_session(tmp_path / "run.json")
    body = b'{"model": "m", "messages": [{"role": "user", "content": "half an emoji \\ud83d"}]}'
    assert _record_one(session, body) is None
    trace = _finished(session, tmp_path / "run.json")
    assert trace.steps[0].payload["messages"][0]["content"] == "half an emoji \ud83d"
    assert verify_trace(trace) == []


def test_a_full_disk_fails_the_call_for_the_agent_and_marks_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = record_session(tmp_path / "run.json")
    assert _record_one(session, _body("first")) is None
    real_write = Journal.write

    def full(self: Journal, steps: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Journal, "write", full)
    refused = _record_one(session, _body("second"))
    assert refused is not None and refused.status >= 500
    assert b"No space left on device" in refused.body and b"not passed on" in refused.body
    monkeypatch.setattr(Journal, "write", real_write)
    assert _record_one(session, _body("third")) is None  # space again: later calls are recorded, the chain intact
    assert any("No space left" in p for p in session.problems())
    trace = _finished(session, tmp_path / "run.json")
    assert verify_trace(trace) == []
    prompts = [s.payload["messages"][0]["content"] for s in trace.steps if s.type == "model_input"]
    assert prompts == ["first", "third"]
    assert trace.steps[-1].payload["event"] == "run_failed"


# --- credentials --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "query", "secret"),
    [
        ({"authorization": "Token tok-abcdefghijkl"}, "", "tok-abcdefghijkl"),
        ({"authorization": "Basic " + base64.b64encode(b"user:pa55word-xyz").decode()}, "", "pa55word-xyz"),
        ({"x-goog-api-key": "AIzaFAKEFAKEFAKE1234"}, "", "AIzaFAKEFAKEFAKE1234"),
        ({"proxy-authorization": "Bearer proxy-secret-123"}, "", "proxy-secret-123"),
        ({}, "alt=sse&key=query-key-12345", "query-key-12345"),
    ],
)
def test_every_auth_scheme_and_key_parameter_is_a_secret(headers: dict[str, str], query: str, secret: str) -> None:
    assert secret in secrets_from_request(headers, query)


def test_secret_looking_environment_variables_are_secrets_short_ones_are_not() -> None:
    env = {
        "MY_LLM_TOKEN": "tok-0123456789",
        "GROQ_API_KEY": "gsk-0123456789",
        "DB_PASSWORD": "hunter2-long",
        "SHORT_TOKEN": "abc",
        "HOME": "/root",
    }
    assert secrets_from_environ(env) == {"tok-0123456789", "gsk-0123456789", "hunter2-long"}


def test_a_prompt_holding_a_key_from_any_header_is_refused(tmp_path: Path) -> None:
    session = record_session(tmp_path / "run.json")
    action = session.on_request(_req(_body("my key is tok-abcdefghijkl"), headers={"authorization": "Token tok-abcdefghijkl"}))
    assert isinstance(action, Forward)
    refused = session.on_response(action.ticket, 200, _answer())
    assert refused is not None and b"API key" in refused.body
    assert session.recorder is not None and session.recorder.model_calls == 0


# --- replay -------------------------------------------------------------------------------


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "rec.json"
    session = record_session(path)
    assert _record_one(session, _body("one")) is None
    assert _record_one(session, _body("two"), _answer("Two.")) is None
    _finished(session, path)
    return path


def test_replay_serves_each_recorded_call_as_a_replayed_answer(recorded: Path) -> None:
    session = replay_session(recorded)
    for prompt, text in (("one", "Sunny."), ("two", "Two.")):
        action = session.on_request(_req(_body(prompt)))
        assert isinstance(action, Answer) and action.replayed and action.status == 200
        assert json.loads(action.body)["choices"][0]["message"]["content"] == text


def test_replay_refuses_a_diverging_request_with_the_place_it_differs(recorded: Path) -> None:
    session = replay_session(recorded)
    action = session.on_request(_req(_body("uno")))
    assert isinstance(action, Answer) and not action.replayed and action.status == 400
    error = json.loads(action.body)["error"]
    assert error["type"] == "replay_divergence" and "content differs at character" in error["message"]


def test_replay_refuses_a_call_past_the_recording(recorded: Path) -> None:
    session = replay_session(recorded, match="sequence")
    for prompt in ("one", "two"):
        assert isinstance(session.on_request(_req(_body(prompt))), Answer)
    action = session.on_request(_req(_body("three")))
    assert isinstance(action, Answer) and json.loads(action.body)["error"]["type"] == "replay_exhausted"


def test_a_divergence_report_never_quotes_a_credential(recorded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    session = replay_session(recorded)
    action = session.on_request(_req(_body(f"one, and my key is {KEY}")))
    assert isinstance(action, Answer) and action.status == 400
    assert KEY.encode() not in action.body and b"[credential]" in action.body
    from blackbox_mitm.session.build import replay_report

    assert KEY not in json.dumps(replay_report(session))


@pytest.mark.parametrize("stem", ["resp_x", "call_1", "msg_run", "toolu_a"])
def test_a_cassette_named_like_a_provider_id_gets_a_run_id_that_verifies(stem: str, tmp_path: Path) -> None:
    from blackbox_mitm.session.build import run_id_for

    assert run_id_for(stem).startswith("run-")
    session = record_session(tmp_path / f"{stem}.json")
    assert _record_one(session, _body()) is None
    assert verify_trace(_finished(session, tmp_path / f"{stem}.json")) == []


# --- concurrent calls: the release order --------------------------------------------------


LATER = "second done; first done"  # the later call takes both answers in (one agent's calls)


def _record_overlapping(tmp_path: Path, later: str = LATER) -> Path:
    """Two calls in flight at once (the one asked second answered first), then one on its own asking ``later``."""
    path = tmp_path / "overlap.json"
    session = record_session(path, fsync=False)
    first, second = session.on_request(_req(_body("first"))), session.on_request(_req(_body("second")))
    assert isinstance(first, Forward) and isinstance(second, Forward)
    assert session.on_response(second.ticket, 200, _answer("second done")) is None
    assert session.on_response(first.ticket, 200, _answer("first done")) is None
    time.sleep(0.005)  # asked for in a later millisecond than that answer (the same one counts as overlapping)
    _record_one(session, _body(later))
    _finished(session, path)
    return path


def test_answers_to_overlapping_calls_carry_a_hold_and_others_do_not(tmp_path: Path) -> None:
    path = _record_overlapping(tmp_path)
    session = replay_session(path)
    answers = {p: session.on_request(_req(_body(p))) for p in ("first", "second", LATER)}
    assert all(isinstance(a, Answer) and a.replayed for a in answers.values())
    holds = {p: a.hold for p, a in answers.items() if isinstance(a, Answer)}
    holds["later"] = holds.pop(LATER)
    assert holds["later"] is None  # overlapped nothing: sent at once
    assert holds["first"] is not None and holds["second"] is not None
    assert not holds["first"].now()  # recorded completing after "second", which is not delivered yet
    assert not holds["second"].now()  # asked for a moment ago: it settles first (DEFAULT_SETTLE_MS), then goes
    released = holds["second"].wait()
    assert released is not None and released.at_ms >= holds["second"].ready_ms + DEFAULT_SETTLE_MS
    assert session.order is not None and [r.call for r in session.order.releases] == [0]
    # --order-gap off: no release order at all.
    off = replay_session(path, order_gap_ms=None)
    assert off.order is None
    answer = off.on_request(_req(_body("first")))
    assert isinstance(answer, Answer) and answer.hold is None


def test_overlapping_calls_no_later_request_takes_in_are_not_held(tmp_path: Path) -> None:
    # Two independent conversations side by side: they overlapped, but nothing recorded after says in which order
    # their answers were handled, so a replay sends each at once (no settle, no order to keep).
    path = _record_overlapping(tmp_path, later="something else")
    session = replay_session(path)
    answers = [session.on_request(_req(_body(p))) for p in ("first", "second", "something else")]
    assert all(isinstance(a, Answer) and a.replayed and a.hold is None for a in answers)
