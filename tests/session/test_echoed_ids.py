"""Tool-call ids an agent echoes in its prompt text: recorded as call-N, and a replay's served ids compared as call-N."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.base import CallIds
from blackbox_mitm.codecs.verified import verify_trace
from blackbox_mitm.session.build import record_session, replay_session
from blackbox_mitm.session.echoed_ids import EchoedIds, neutralize_echoed_ids
from blackbox_mitm.session.engine import Answer, Forward, ModelRequest

NATIVE = "toolu_01MOPRgsCrnLw1OqnBwDeiuS"
PATH = "/v1/messages"


def _input(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": [{"type": "text", "text": text}]}], "tools": []}


def test_a_mapped_id_in_text_becomes_its_call_n_and_nothing_else_changes() -> None:
    ids = CallIds()
    assert ids.assign(NATIVE) == "call-0"
    payload = _input(f"<tool-use-id>{NATIVE}</tool-use-id> and again {NATIVE}.")
    out = neutralize_echoed_ids(payload, ids)
    assert out["messages"][0]["content"][0]["text"] == "<tool-use-id>call-0</tool-use-id> and again call-0."
    assert payload["messages"][0]["content"][0]["text"].startswith(f"<tool-use-id>{NATIVE}")  # the input is not modified
    assert out["tools"] is payload["tools"]  # only what changed is copied


def test_only_exact_known_ids_as_whole_tokens_are_replaced() -> None:
    ids = CallIds()
    ids.assign(NATIVE)
    served = ids.served_id("call-1", "toolu_")  # toolu_bb1, what a replay serves
    text = (
        f"unknown toolu_01AAAAbbbbCCCCddddEEEEffff, longer {NATIVE}x, inside x{NATIVE}, "
        f"a served id {served}, not {served}2, a short id {served[:5]}"
    )
    out = neutralize_echoed_ids(_input(text), ids)["messages"][0]["content"][0]["text"]
    assert out == (
        f"unknown toolu_01AAAAbbbbCCCCddddEEEEffff, longer {NATIVE}x, inside x{NATIVE}, "
        f"a served id call-1, not {served}2, a short id {served[:5]}"
    )


def test_ids_shorter_than_eight_characters_are_never_replaced() -> None:
    ids = CallIds()
    ids.assign("1")  # an agent that numbers its calls: "1" could be any word of the text
    payload = _input("step 1 of 1")
    assert neutralize_echoed_ids(payload, ids) is payload


def test_tool_inputs_results_and_the_system_prompt_are_text_too() -> None:
    ids = CallIds()
    ids.assign(NATIVE)
    payload = {
        "systemPrompt": f"last call {NATIVE}",
        "messages": [{"role": "user", "content": [{"type": "tool_result", "toolCallId": "call-0", "result": {"log": [f"id={NATIVE}"]}}]}],
    }
    out = neutralize_echoed_ids(payload, ids)
    assert out["systemPrompt"] == "last call call-0"
    assert out["messages"][0]["content"][0]["result"] == {"log": ["id=call-0"]}


def test_the_rule_follows_new_ids_as_the_run_maps_them() -> None:
    ids, rule = CallIds(), EchoedIds()
    payload = _input(f"see {NATIVE}")
    assert rule.rewrite(payload, ids.known()) is payload  # nothing mapped yet
    ids.assign(NATIVE)
    assert rule.rewrite(payload, ids.known())["messages"][0]["content"][0]["text"] == "see call-0"


# --- through the session: recorded neutral, replayed strictly ------------------------------


def _request(*messages: dict[str, Any]) -> ModelRequest:
    body = {"model": "claude-test", "max_tokens": 100, "messages": list(messages)}
    return ModelRequest(path=PATH, headers={"x-api-key": "sk-ant-test"}, body=json.dumps(body).encode())


def _first() -> ModelRequest:
    return _request({"role": "user", "content": "Start a background agent."})


def _second(tool_id: str) -> ModelRequest:
    return _request(
        {"role": "user", "content": "Start a background agent."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": "Agent", "input": {"prompt": "p"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "Async agent launched."}]},
        {"role": "user", "content": f"<task-notification><tool-use-id>{tool_id}</tool-use-id> finished</task-notification>"},
    )


def _message(content: list[dict[str, Any]], stop: str) -> bytes:
    return orjson.dumps(
        {"id": "msg_01XyZ", "type": "message", "role": "assistant", "model": "claude-test", "content": content, "stop_reason": stop,
         "usage": {"input_tokens": 1, "output_tokens": 1}}
    )  # fmt: skip


def _record(path: Path) -> None:
    session = record_session(path)
    action = session.on_request(_first())
    assert isinstance(action, Forward)
    session.on_response(
        action.ticket, 200, _message([{"type": "tool_use", "id": NATIVE, "name": "Agent", "input": {"prompt": "p"}}], "tool_use")
    )
    action = session.on_request(_second(NATIVE))
    assert isinstance(action, Forward)
    session.on_response(action.ticket, 200, _message([{"type": "text", "text": "Done."}], "end_turn"))
    assert session.recorder is not None
    session.recorder.finish(path, exit_code=0)


def test_a_recording_holds_call_n_where_the_agent_wrote_the_provider_id(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    _record(path)
    text = path.read_text()
    assert "toolu_" not in text
    assert "<tool-use-id>call-0</tool-use-id>" in text
    assert verify_trace(load_trace(path)) == []


def test_a_strict_replay_matches_the_served_id_the_agent_echoes(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    _record(path)
    session = replay_session(path)
    first = session.on_request(_first())
    assert isinstance(first, Answer) and first.status == 200
    served = next(b["id"] for b in json.loads(first.body)["content"] if b["type"] == "tool_use")
    assert served != NATIVE and served.startswith("toolu_")
    second = session.on_request(_second(served))  # the agent echoes the id it was served, in text too
    assert isinstance(second, Answer) and second.status == 200, second.body
    assert json.loads(second.body)["content"][0]["text"] == "Done."


def test_the_quick_check_never_skips_an_echoed_id() -> None:
    from blackbox_mitm.session.echoed_ids import EchoedIds

    known = {"toolu_01MOPRgsCrnLw1OqnBwDeiuS": "call-0", 'we"ird_id_12345': "call-1"}
    rule = EchoedIds()
    plain = {"messages": [{"role": "user", "content": [{"type": "text", "text": "nothing to see"}]}]}
    assert rule.rewrite(plain, known) is plain
    echoed = {"messages": [{"content": "line\\n<tool-use-id>toolu_01MOPRgsCrnLw1OqnBwDeiuS</tool-use-id>\\t"}], "n": 2**70}
    assert rule.rewrite(echoed, known)["messages"][0]["content"] == "line\\n<tool-use-id>call-0</tool-use-id>\\t"
    quoted = {"systemPrompt": 'see we"ird_id_12345 here', "s": "\ud800"}
    assert rule.rewrite(quoted, known)["systemPrompt"] == "see call-1 here"


def test_ids_mapped_later_are_taken_in_and_an_odd_id_uses_the_alternation() -> None:
    from blackbox_mitm.session.echoed_ids import EchoedIds

    known: dict[str, str] = {"toolu_first_0001": "call-0"}
    rule = EchoedIds()
    text = {"systemPrompt": "toolu_first_0001 toolu_second_002 xtoolu_first_0001 toolu_first_00012"}
    assert rule.rewrite(text, known)["systemPrompt"] == "call-0 toolu_second_002 xtoolu_first_0001 toolu_first_00012"
    known["toolu_second_002"] = "call-1"
    assert rule.rewrite(text, known)["systemPrompt"] == "call-0 call-1 xtoolu_first_0001 toolu_first_00012"
    known["id:with.dots"] = "call-2"  # not a whole token: the ids' alternation takes over
    odd = {"systemPrompt": "see id:with.dots and toolu_second_002."}
    assert rule.rewrite(odd, known)["systemPrompt"] == "see call-2 and call-1."
    assert EchoedIds().rewrite(odd, known)["systemPrompt"] == "see call-2 and call-1."


def test_the_provider_ids_claude_codes_billing_line_quotes_never_enter_the_cassette() -> None:
    from blackbox_mitm.session.echoed_ids import EchoedIds

    head = "x-anthropic-billing-header: cc_version=2.1.332.95a; cch=3f2a; cc_prev_req=req_011CVabcdefghijklmnop; "
    system = head + "cc_prompt_id=9c1e; cc_turn_index=2; cc_prev_msg=msg_01XYZabcdefghijkl; cc_prev_prompt_index=1;\nYou are Claude Code."
    model_input = {"systemPrompt": system, "messages": [{"role": "user", "content": "cc_prev_req=req_0123456789abc in a file"}]}
    out = EchoedIds().rewrite(model_input, {})
    assert out["systemPrompt"] == system.replace("req_011CVabcdefghijklmnop", "<provider-id>").replace(
        "msg_01XYZabcdefghijkl", "<provider-id>"
    )
    assert out["messages"] is model_input["messages"]  # only the system prompt's billing line: a user's text is theirs
    assert EchoedIds().rewrite(out, {}) is out  # the same at replay: nothing left to replace
    plain = {"systemPrompt": "You are a helpful assistant.", "messages": []}
    assert EchoedIds().rewrite(plain, {}) is plain
    listed = {"systemPrompt": [{"type": "text", "text": head}], "messages": []}
    assert "req_011" not in str(EchoedIds().rewrite(listed, {}))


def test_the_labels_come_from_the_agent_profiles() -> None:
    """The billing-line labels are Claude Code's knowledge: its profile names them, echoed_ids only applies them."""
    from blackbox_mitm.matcher.profiles import LABELLED, PROFILES
    from blackbox_mitm.session import echoed_ids

    claude = next(p for p in PROFILES if p.name == "claude-code")
    assert claude.labelled_ids == ("cc_prev_req=", "cc_prev_msg=")
    assert echoed_ids.LABELLED is LABELLED
    assert all(not p.labelled_ids for p in PROFILES if p.name != "claude-code")
