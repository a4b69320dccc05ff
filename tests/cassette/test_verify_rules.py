"""Every verify rule catches what it is for, and leaves the user's own data alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cassette_builders import CASSETTES, edit_file, save, weather_trace, write_json

from blackbox_mitm.cassette import Trace
from blackbox_mitm.cassette import verify as verify_module
from blackbox_mitm.cassette.canonical import canonical_bytes
from blackbox_mitm.cassette.neutrality import Walker
from blackbox_mitm.cassette.verify import Problem
from blackbox_mitm.codecs.verified import verify_file, verify_trace
from blackbox_mitm.errors import CassetteError

ANTHROPIC_KEY = "sk-ant-api03-Xq3vT9bLm2Rk7pWz4Nd8HsYc1JfGa6Ue0OiPl5KtBnMr-Qw2Ev7Zx9CyDu3Sa1Fh4Jk6Lm8Np0Rt"
OPENAI_PROJECT_KEY = "sk-proj-4fTq9ZbW2mLx7RkP3vNc8HsYd1JgEa6Ui0OoPl5KtBnMrQw2Ev7Zx9CyDu3Sa1Fh"
BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"


def _codes(problems: list[Problem]) -> list[str]:
    return [p.code for p in problems]


def _trace_with(step_type: str, payload: Any) -> Trace:
    """The weather run plus one more step, correctly hashed: only the neutrality rules can object."""
    trace = weather_trace()
    trace.append(step_type, payload, timestamp=trace.steps[-1].timestamp + 1)
    return trace


def _only(problems: list[Problem], code: str) -> Problem:
    assert _codes(problems) == [code], [str(p) for p in problems]
    return problems[0]


# -- valid cassettes ------------------------------------------------------------------------


def test_a_recorded_run_verifies() -> None:
    assert verify_trace(weather_trace()) == []


@pytest.mark.parametrize("name", ["js_weather.json", "js_weather_sunny.json"])
def test_a_cassette_written_by_the_javascript_writer_verifies(name: str) -> None:
    result = verify_file(CASSETTES / name)
    assert result.ok, [str(p) for p in result.problems]
    assert result.steps == 7


# -- format and chain ---------------------------------------------------------------------


def test_a_tampered_payload_is_caught_at_its_step(tmp_path: Path) -> None:
    path = save(weather_trace(), tmp_path / "run.json")
    edit_file(path, lambda d: d["steps"][3]["payload"]["result"].update(forecast="sun"))
    problem = _only(verify_file(path).problems, "hash")
    assert problem.step == 3
    assert str(problem).startswith("step 3: hash ")
    assert "changed after recording" in problem.reason


def test_a_tampered_timestamp_is_caught(tmp_path: Path) -> None:
    path = save(weather_trace(), tmp_path / "run.json")
    edit_file(path, lambda d: d["steps"][5].update(timestamp=d["steps"][5]["timestamp"] + 1))
    assert _only(verify_file(path).problems, "hash").step == 5


def test_a_broken_prev_hash_is_caught(tmp_path: Path) -> None:
    path = save(weather_trace(), tmp_path / "run.json")
    edit_file(path, lambda d: d["steps"][2].update(prevHash="0" * 64))
    problems = verify_file(path).problems
    # prevHash is hashed too, so the step's own hash no longer matches either.
    assert _codes(problems) == ["prev_hash", "hash"]
    assert problems[0].step == 2 and "chain is broken" in problems[0].reason


def test_a_first_step_with_a_prev_hash_is_caught() -> None:
    trace = weather_trace()
    trace.steps[0].prevHash = "ab" * 32
    assert _codes(verify_trace(trace))[:1] == ["prev_hash"]
    assert "must be null" in verify_trace(trace)[0].reason


def test_a_removed_step_breaks_the_chain() -> None:
    trace = weather_trace()
    del trace.steps[2]
    problems = verify_trace(trace)
    assert {(p.step, p.code) for p in problems} >= {(2, "prev_hash"), (2, "index"), (2, "id")}


def test_a_rehashed_forgery_with_a_wrong_id_is_caught(tmp_path: Path) -> None:
    path = save(weather_trace("run-1"), tmp_path / "run.json")
    edit_file(path, lambda d: d["steps"][4].update(id="run-1:9"))
    problem = _only(verify_file(path).problems, "id")
    assert problem.step == 4 and '"run-1:4"' in problem.reason


def test_a_v1_cassette_is_invalid_with_re_record(tmp_path: Path) -> None:
    data = weather_trace().to_json()
    data["version"] = 1
    result = verify_file(write_json(tmp_path / "old.json", data))
    problem = _only(result.problems, "version")
    assert problem.step is None and "re-record the run" in problem.reason


def test_a_v1_trace_in_memory_is_invalid() -> None:
    trace = weather_trace()
    trace.version = 1
    assert "re-record the run" in _only(verify_trace(trace), "version").reason


def test_a_file_the_loader_refuses_is_invalid_at_its_step(tmp_path: Path) -> None:
    data = weather_trace().to_json()
    data["steps"][2]["type"] = "thought"
    problem = _only(verify_file(write_json(tmp_path / "run.json", data)).problems, "format")
    assert problem.step == 2 and "unknown step type" in problem.reason


def test_a_file_that_is_not_json_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("nope")
    with pytest.raises(CassetteError, match="not valid JSON"):
        verify_file(tmp_path / "x.json")
    with pytest.raises(CassetteError, match="no such file"):
        verify_file(tmp_path / "missing.json")


def test_an_unknown_model_output_type_is_a_shape_problem() -> None:
    problem = _only(verify_trace(_trace_with("model_output", {"type": "message", "content": []})), "shape")
    assert problem.where == "payload.type"


def test_a_tool_result_needs_result_or_error() -> None:
    trace = _trace_with("tool_result", {"toolCallId": "call-1", "toolName": "x"})
    assert "exactly one of" in _only(verify_trace(trace), "shape").reason


# -- neutrality: structure ------------------------------------------------------------------


def test_a_provider_id_in_a_key_is_caught() -> None:
    problem = _only(
        verify_trace(_trace_with("model_output", {"type": "final_answer", "text": "hi", "ids": {"toolu_01A09q90qw90lq917835lq9": 1}})),
        "provider_id",
    )
    assert problem.step == 7 and problem.where == "payload.ids.toolu_01A09q90qw90lq917835lq9"


@pytest.mark.parametrize("native", ["chatcmpl-9aBcDeFgHiJkLmNoPqRsTuVwXyZ", "call_abc123XYZ", "toolu_01A09q90qw90lq917835lq9"])
def test_a_provider_id_as_tool_call_id_is_caught(native: str) -> None:
    trace = _trace_with("tool_call", {"toolCallId": native, "toolName": "get_weather", "toolInput": {}})
    problem = _only(verify_trace(trace), "provider_id")
    assert problem.where == "payload.toolCallId"


def test_a_provider_id_inside_a_message_part_is_caught() -> None:
    payload = {
        "messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "toolCallId": "toolu_01XYZ", "toolName": "a", "toolInput": {}}]}
        ],
        "tools": [],
    }
    assert _only(verify_trace(_trace_with("model_input", payload)), "provider_id").where == "payload.messages[0].content[0].toolCallId"


def test_a_provider_message_id_in_structure_is_caught() -> None:
    payload = {"messages": [{"role": "assistant", "content": "hi", "id": "msg_01XFDUDYJgAACzvnptvVoYEL"}], "tools": []}
    assert _only(verify_trace(_trace_with("model_input", payload)), "provider_id").where == "payload.messages[0].id"


def test_a_tool_call_id_that_is_not_call_n_is_caught() -> None:
    problem = _only(verify_trace(_trace_with("tool_call", {"toolCallId": "D681PevKs", "toolName": "a", "toolInput": {}})), "tool_call_id")
    assert "call-N" in problem.reason


@pytest.mark.parametrize(
    "key", ["usage", "stop_reason", "stop_sequence", "finish_reason", "system_fingerprint", "choices", "stopReason", "tool_use_id"]
)
def test_a_provider_response_key_in_a_model_output_is_caught(key: str) -> None:
    payload = {"type": "final_answer", "text": "hi", key: {"input_tokens": 3} if key == "usage" else "x"}
    problems = verify_trace(_trace_with("model_output", payload))
    assert problems and problems[0].code == "provider_field" and problems[0].where == f"payload.{key}"


def test_usage_in_metadata_is_caught() -> None:
    payload = {"event": "run_completed", "status": "success", "result": "ok", "usage": {"output_tokens": 5}}
    assert _codes(verify_trace(_trace_with("metadata", payload)))[0] == "provider_field"


@pytest.mark.parametrize("key", ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "x-api-key", "authorization", "apiKey"])
def test_a_credential_name_as_a_metadata_key_is_caught(key: str) -> None:
    payload = {"event": "run_failed", "status": "error", "reason": "agent_error", "message": "boom", key: "redacted"}
    problem = _only(verify_trace(_trace_with("metadata", payload)), "credential_name")
    assert problem.where is not None and key in problem.where


def test_a_credential_name_as_a_metadata_value_is_caught() -> None:
    payload = {"event": "run_failed", "status": "error", "reason": "agent_error", "message": "boom", "missing": "OPENAI_API_KEY"}
    assert _only(verify_trace(_trace_with("metadata", payload)), "credential_name").where == "payload.missing"


def test_a_request_header_kept_in_a_message_is_caught() -> None:
    payload = {"messages": [{"role": "user", "content": "hi", "headers": {"x-api-key": "abc"}}], "tools": []}
    assert _only(verify_trace(_trace_with("model_input", payload)), "credential_name").where == 'payload.messages[0].headers["x-api-key"]'


def test_a_params_key_fails_only_as_a_response_field_or_a_credential() -> None:
    # The spec fixes no list of neutral names: another implementation's max_tokens / top_p,
    # and controls nobody lists, are fine; a response field or a credential's name is not.
    params: dict[str, Any] = {"max_tokens": 100, "top_p": 1, "logprobs": True, "temperature": 0.2, "customKnob": 1}
    params |= {"service_tier": "auto", "usage": 3, "api_key": "x"}
    problems = verify_trace(_trace_with("model_input", {"messages": [], "tools": [], "params": params}))
    assert _codes(problems) == ["param", "param", "credential_name"]
    assert [p.where for p in problems] == ["payload.params.service_tier", "payload.params.usage", "payload.params.api_key"]


# -- neutrality: the user's data --------------------------------------------------------------


@pytest.mark.parametrize(
    ("step_type", "payload", "where"),
    [
        ("tool_result", {"toolCallId": "call-1", "toolName": "read_env", "result": {"env": f"KEY={ANTHROPIC_KEY}"}}, "payload.result.env"),
        ("tool_result", {"toolCallId": "call-1", "toolName": "read_env", "error": f"bad key {OPENAI_PROJECT_KEY}"}, "payload.error"),
        (
            "tool_call",
            {"toolCallId": "call-1", "toolName": "http", "toolInput": {"headers": {"Authorization": BEARER}}},
            "payload.toolInput.headers.Authorization",
        ),
        ("model_input", {"messages": [{"role": "user", "content": f"use {ANTHROPIC_KEY}"}], "tools": []}, "payload.messages[0].content"),
        ("model_input", {"messages": [], "tools": [], "systemPrompt": f"key: {OPENAI_PROJECT_KEY}"}, "payload.systemPrompt"),
        ("model_output", {"type": "final_answer", "text": f"here: {ANTHROPIC_KEY}"}, "payload.text"),
    ],
)
def test_a_realistic_credential_in_data_is_caught(step_type: str, payload: Any, where: str) -> None:
    problem = _only(verify_trace(_trace_with(step_type, payload)), "credential")
    assert problem.where == where
    assert ANTHROPIC_KEY not in str(problem) and OPENAI_PROJECT_KEY not in str(problem) and BEARER not in str(problem)


@pytest.mark.parametrize(
    ("step_type", "payload"),
    [
        ("tool_result", {"toolCallId": "call-1", "toolName": "stats", "result": {"usage": 42}}),
        (
            "tool_result",
            {
                "toolCallId": "call-1",
                "toolName": "read_file",
                "result": "if (block.id.startsWith('toolu_')) { return msg_id; } // call_abc chatcmpl-x",
            },
        ),
        (
            "tool_result",
            {
                "toolCallId": "call-1",
                "toolName": "read_json",
                "result": {"stop_reason": "end_turn", "finish_reason": "stop", "toolu_01abc": 1, "OPENAI_API_KEY": "unset"},
            },
        ),
        ("tool_call", {"toolCallId": "call-1", "toolName": "usage", "toolInput": {"usage": True, "id": "msg_123"}}),
        (
            "model_input",
            {
                "messages": [{"role": "user", "content": "what does the usage field mean? and OPENAI_API_KEY?"}],
                "tools": [
                    {"name": "t", "description": "reads x-api-key headers", "inputSchema": {"properties": {"usage": {"type": "integer"}}}}
                ],
            },
        ),
        (
            "model_input",
            {
                "messages": [],
                "tools": [],
                "params": {
                    "toolChoice": {"type": "function", "function": {"name": "call_me"}},
                    "logitBias": {"50256": -100},
                    "stop": ["usage"],
                },
            },
        ),
        (
            "tool_result",
            {
                "toolCallId": "call-1",
                "toolName": "t",
                "result": "sk-ant-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx and sk-test-not-a-real-key-000 and Bearer <token>",
            },
        ),
        (
            "tool_result",
            {"toolCallId": "call-1", "toolName": "t", "result": "task-list-for-the-week-ahead-and-beyond-2024 risk-assessment"},
        ),
        (
            "metadata",
            {
                "event": "run_failed",
                "status": "error",
                "reason": "agent_error",
                "message": "OPENAI_API_KEY is not set; usage: agent.py TASK",
            },
        ),
        # Text the agent wrote, even when it starts like a provider id or is a variable's name.
        ("metadata", {"event": "run_failed", "status": "error", "reason": "agent_error", "message": "chatcmpl-9aBc: refused"}),
        ("metadata", {"event": "run_completed", "status": "success", "result": "OPENAI_API_KEY"}),
        ("metadata", {"event": "run_failed", "status": "error", "reason": "calls_in_flight", "exitCode": 1, "inFlight": 2}),
        (
            "model_output",
            {
                "type": "tool_calls",
                "calls": [{"toolCallId": "call-12", "toolName": "a", "toolInput": {"finish_reason": 1}}],
                "text": "usage",
            },
        ),
        ("model_output", {"type": "final_answer", "text": "truncated", "stop": "length"}),
    ],
)
def test_the_users_own_data_is_not_flagged(step_type: str, payload: Any) -> None:
    assert verify_trace(_trace_with(step_type, payload)) == []


# -- reporting and speed ----------------------------------------------------------------------


def test_every_problem_is_reported_in_step_order() -> None:
    trace = _trace_with("model_output", {"type": "final_answer", "text": "x", "usage": {}})
    trace.steps[1].payload["calls"][0]["toolInput"] = {"city": "Lyon"}  # tampered, hash kept
    problems = verify_trace(trace)
    assert [(p.step, p.code) for p in problems] == [(1, "hash"), (7, "provider_field")]
    assert problems[0].to_json()["step"] == 1


def test_trace_level_ids_are_checked() -> None:
    trace = weather_trace("chatcmpl-abc123")
    for n, step in enumerate(trace.steps):
        step.id = f"chatcmpl-abc123:{n}"
    problem = _only(verify_trace(trace), "provider_id")
    assert problem.step is None and problem.where == "id"


def test_each_payload_is_serialized_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    real = canonical_bytes  # what verify.py imported

    def counting(value: Any) -> bytes:
        calls.append(value)
        return real(value)

    monkeypatch.setattr(verify_module, "canonical_bytes", counting)
    trace = weather_trace()
    assert verify_trace(trace) == []
    assert calls == [s.payload for s in trace.steps]


def test_clean_payloads_are_not_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[tuple[str, bool]] = []
    real = Walker.walk

    def spy(self: Any, value: Any, where: str, kind: str, *, data: bool = True) -> None:
        walked.append((kind, data))
        real(self, value, where, kind, data=data)

    monkeypatch.setattr(Walker, "walk", spy)  # the class verify.py imports as _Walker
    assert verify_trace(weather_trace()) == []
    assert walked == []
    # A response field's name somewhere: the structure is walked, the user's data is not.
    assert verify_trace(_trace_with("tool_result", {"toolCallId": "call-1", "toolName": "t", "result": {"usage": 42}})) == []
    assert walked == [("tool_result", False)]
    # A secret's shape somewhere: the data is walked too.
    assert _codes(verify_trace(_trace_with("tool_result", {"toolCallId": "call-1", "toolName": "t", "result": ANTHROPIC_KEY}))) == [
        "credential"
    ]
    assert walked[-1] == ("tool_result", True)


# -- tool-call ids an agent echoes in text --------------------------------------------------------


def _notification(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": [{"type": "text", "text": text}]}], "tools": []}


def test_a_provider_id_in_a_tool_use_id_tag_is_a_leak() -> None:
    text = "<task-notification>\n<tool-use-id>toolu_01MOPRgsCrnLw1OqnBwDeiuS</tool-use-id>\n</task-notification>"
    problem = _only(verify_trace(_trace_with("model_input", _notification(text))), "provider_id")
    assert problem.where == "payload.messages[0].content[0].text"
    assert '"toolu_01MOPRgsCrnLw1OqnBwDeiuS" in <tool-use-id>' in problem.reason and "re-record" in problem.reason


@pytest.mark.parametrize(
    "text",
    [
        "<tool-use-id>call-0</tool-use-id>",  # what the recorder writes there
        "the docs' example id is toolu_01MOPRgsCrnLw1OqnBwDeiuS, and call_a8Kq2LmZx9PfR3tWvB7nYc1D in the log",
    ],
)
def test_call_n_in_the_tag_and_ids_elsewhere_in_text_are_data(text: str) -> None:
    assert verify_trace(_trace_with("model_input", _notification(text))) == []
