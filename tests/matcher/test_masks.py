"""Masks: what a mask matches is not compared (in the view, the digest and the difference); structure always is."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from matcher_runs import first_request, json_of, second_request, weather_trace

from blackbox_mitm.cassette.payloads import ModelInput
from blackbox_mitm.matcher import RecordedCalls, Served, compared_view, first_difference, request_digest
from blackbox_mitm.matcher.masks import BUILT_IN_MASKS, NO_RULES, CompareRules, Mask, MaskError
from blackbox_mitm.matcher.outcomes import Divergence

BILLING = "x-anthropic-billing-header: cc_version=2.1.332.1c9; cc_entrypoint=sdk-cli; cch={cch}; cc_prompt_id={pid}; cc_turn_index=1;"
PID_A = "30245c82-439d-41ef-bce2-ce5684a3de1a"
PID_B = "ca439962-6aa1-4414-a25e-8e8c27eb8d8d"


def claude_request(cch: str, pid: str, agent_id: str = "aa9983f9375969e77") -> ModelInput:
    req = second_request(f"Launched.\nagentId: {agent_id} (use SendMessage to continue)")
    req["systemPrompt"] = BILLING.format(cch=cch, pid=pid) + "You are Claude Code."
    return req


def test_the_built_in_masks_make_two_claude_code_runs_match() -> None:
    a, b = claude_request("db6ac", PID_A), claude_request("3d6fb", PID_B, "a0123456789abcdef")
    rules = CompareRules.build()
    assert request_digest(a) != request_digest(b)
    assert request_digest(a, rules) == request_digest(b, rules)
    assert first_difference(a, b, rules) is None
    view = compared_view(a, rules)
    assert view["systemPrompt"].startswith(
        "x-anthropic-billing-header: cc_version=2.1.332.1c9; cc_entrypoint=sdk-cli; <masked:claude-code.billing>; cc_turn_index=1<masked:claude-code.billing>"
    )
    assert view["messages"][3]["content"][0]["result"] == "Launched.\nagentId: <masked:claude-code.agent-id> (use SendMessage to continue)"


def test_the_previous_request_id_is_masked_with_the_billing_line_and_may_be_absent() -> None:
    # Recorded: the provider's answer carried a request-id, so the next request names it; a replayed answer may carry none.
    recorded = claude_request("ed389", PID_A)
    recorded["systemPrompt"] = recorded["systemPrompt"].replace(
        "; cc_prompt_id=", "; cc_prev_req=req_011CyhVMXlHbdmiT0ageiJXW; cc_prompt_id="
    )
    replayed = claude_request("6158c", PID_B)
    rules = CompareRules.build()
    assert first_difference(recorded, replayed, rules) is None
    assert "req_011C" not in compared_view(recorded, rules)["systemPrompt"]


def test_a_compaction_call_and_the_call_after_it_match_with_and_without_the_previous_ids() -> None:
    # Recorded: the provider's answers carried request ids, so Claude Code names the answer before the compaction;
    # replayed answers carry none, so the same requests name nothing (tests/e2e/test_claude_code_compaction.py).
    head = "x-anthropic-billing-header: cc_version=2.1.332.d2f; cc_entrypoint=sdk-cli; "
    compact = (head + "cch=7fe62; cc_prev_req=req_011CdCsj3MSneC1qnlx2Ol8V;You are Claude.", head + "cch=0a1b2;You are Claude.")
    after = (
        head + f"cch=a00c5; cc_prompt_id={PID_A}; cc_turn_index=1; cc_prev_msg=msg_01fA6wwuqy6Zf8A77u8oFCFV; "
        "cc_prev_prompt_index=0; cc_prev_turn_index=1;You are Claude.",
        head + f"cch=9f9f9; cc_prompt_id={PID_B}; cc_turn_index=1;You are Claude.",
    )
    rules = CompareRules.build()
    for recorded, replayed in (compact, after):
        assert rules.mask_text(recorded) == rules.mask_text(replayed)
        assert "req_011C" not in rules.mask_text(recorded) and "msg_01" not in rules.mask_text(recorded)
    other_turn = head + f"cch=9f9f9; cc_prompt_id={PID_B}; cc_turn_index=2;You are Claude."
    assert rules.mask_text(after[1]) != rules.mask_text(other_turn)  # the turn index itself is still compared


def test_the_transcript_path_in_a_compaction_summary_is_masked() -> None:
    path = "read the full transcript at: /home/u/.claude/projects/-tmp-work/{}.jsonl\nContinue"
    rules = CompareRules.build()
    a = rules.mask_text(path.format("07222689-9d58-405c-9f37-9f4e578c444e"))
    assert a == rules.mask_text(path.format("ab222689-9d58-405c-9f37-9f4e578c4400"))
    assert a.endswith("/-tmp-work/<masked:claude-code.transcript>.jsonl\nContinue")


def test_masking_leaves_the_cassette_payload_as_it_was() -> None:
    a = claude_request("db6ac", PID_A)
    before = copy.deepcopy(a)
    compared_view(a, CompareRules.build())
    assert a == before


def test_without_the_defaults_the_billing_line_still_differs() -> None:
    a, b = claude_request("db6ac", PID_A), claude_request("3d6fb", PID_B)
    d = first_difference(a, b, CompareRules.build(defaults=False))
    assert d is not None and d.field == "system"
    assert d.at_char == BILLING.index("{cch}")


@pytest.mark.parametrize(
    ("where", "mutate"),
    [
        ("system prompt", lambda r, v: r.__setitem__("systemPrompt", f"Now: {v}.")),
        ("message text", lambda r, v: r["messages"][1].__setitem__("content", f"weather at {v}?")),
        ("tool input string", lambda r, v: r["messages"][2]["content"][0]["toolInput"].__setitem__("city", f"Paris {v}")),
        ("tool result string", lambda r, v: r["messages"][3]["content"][0].__setitem__("result", {"at": [f"t={v}"]})),
        ("tool error", lambda r, v: r["messages"][3]["content"][0].update({"error": f"failed at {v}"}) or None),
        ("tool description", lambda r, v: r["tools"][0].__setitem__("description", f"Weather (built {v}).")),
    ],
)
def test_a_mask_covers_every_compared_text(where: str, mutate: Any) -> None:
    a, b = json_of(second_request()), json_of(second_request())
    mutate(a, "2026-12-01T10:00:00")
    mutate(b, "2026-12-02T11:30:59")
    if where == "tool error":
        for r in (a, b):
            r["messages"][3]["content"][0].pop("result")
    rules = CompareRules.build([r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"], defaults=False)
    assert first_difference(a, b) is not None, where
    assert first_difference(a, b, rules) is None, where
    assert request_digest(a, rules) == request_digest(b, rules)


def test_masks_never_make_tool_names_roles_or_structure_match() -> None:
    anything = CompareRules.build([r"[\s\S]+"], defaults=False)  # masks every compared text whole
    base = second_request()
    other_tool = json_of(second_request())
    other_tool["messages"][2]["content"][0]["toolName"] = "get_forecast"
    other_role = json_of(second_request())
    other_role["messages"][1]["role"] = "assistant"
    extra_call = json_of(second_request())
    extra_call["messages"][2]["content"].append(dict(extra_call["messages"][2]["content"][0], toolCallId="call-1"))
    other_key = json_of(second_request())
    other_key["messages"][2]["content"][0]["toolInput"] = {"town": "Paris"}
    as_parts = json_of(second_request())
    as_parts["messages"][1]["content"] = [
        {"type": "text", "text": "x"},
        {"type": "tool_result", "toolCallId": "call-9", "toolName": "t", "result": "r"},
    ]
    for changed, field in (
        (other_tool, "tool_calls"),
        (other_role, "role"),
        (extra_call, "tool_call_id"),
        (other_key, "tool_calls"),
        (as_parts, "content"),
    ):
        d = first_difference(base, changed, anything)
        assert d is not None and d.field == field, (field, d)
        assert request_digest(base, anything) != request_digest(changed, anything)


def test_model_and_params_are_never_masked() -> None:
    anything = CompareRules.build([r"[\s\S]+"], defaults=False)
    a, b = first_request(), first_request()
    b["model"] = "gpt-4o"
    assert first_difference(a, b, anything) is not None
    c = first_request()
    c["params"]["temperature"] = 0.9
    assert first_difference(a, c, anything) is not None


def test_the_divergence_names_the_mask_at_the_difference() -> None:
    rules = CompareRules.build([r"session (?P<mask>[0-9a-f]{8})"], defaults=False)
    a, b = first_request(), first_request()
    a["systemPrompt"] = "You are a weather assistant, session 0badc0de."
    b["systemPrompt"] = "You are a weather assistant, session none."
    d = first_difference(a, b, rules)
    assert d is not None and d.field == "system"
    assert d.masks == ("mask-1",)
    assert d.note is not None and "mask mask-1 matched in the recording's request" in d.note
    assert d.recorded == "You are a weather assistant, session <masked:mask-1>."
    assert any(line.startswith("  note: the difference is at a masked span") for line in d.human_lines())
    assert d.to_json()["masks"] == ["mask-1"]


def test_a_difference_away_from_masks_names_no_mask() -> None:
    rules = CompareRules.build([r"session (?P<mask>[0-9a-f]{8})"], defaults=False)
    a, b = first_request("Paris"), first_request("Lyon")
    for r in (a, b):
        r["systemPrompt"] = "session 0badc0de"
    d = first_difference(a, b, rules)
    assert d is not None and d.field == "content" and d.masks == () and d.note is None
    assert "masks" not in d.to_json() and "note" not in d.to_json()


def test_redaction_placeholders_with_no_redaction_configured_are_named() -> None:
    a, b = first_request(), first_request()
    a["messages"][1]["content"] = "Mail <redacted:email> the forecast."
    b["messages"][1]["content"] = "Mail ada@example.com the forecast."
    d = first_difference(a, b)
    assert d is not None and d.redacted == ("email",)
    assert d.note is not None and "this replay redacts nothing" in d.note
    configured = first_difference(a, b, CompareRules(redactions=("email",)))
    assert configured is not None and configured.note is None


def test_spans_are_taken_once_left_to_right_longest_first() -> None:
    rules = CompareRules.build([Mask("short", "ab"), Mask("long", "abc"), Mask("inner", "b")], defaults=False)
    assert rules.mask_text("xabcx ab b") == "x<masked:long>x <masked:short> <masked:inner>"
    # a later mask never matches inside an earlier placeholder
    rules = CompareRules.build([Mask("id", r"\d+"), Mask("word", "masked")], defaults=False)
    assert rules.mask_text("id 42") == "id <masked:id>"


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("(unclosed", "is not a regular expression"),
        ("x*", "matches the empty string"),
        ("", "empty pattern"),
        (r"\b", "matches the empty string"),
    ],
)
def test_a_bad_mask_is_a_named_error(pattern: str, message: str) -> None:
    with pytest.raises(MaskError, match=message):
        CompareRules.build([pattern], defaults=False)


def test_two_masks_with_one_name_are_refused() -> None:
    with pytest.raises(MaskError, match="two masks are named"):
        CompareRules.build([Mask("a", "x"), Mask("a", "y")], defaults=False)


def test_the_built_in_masks_are_named_and_documented() -> None:
    names = [m.name for m in BUILT_IN_MASKS]
    assert names == [
        "claude-code.billing",
        "claude-code.agent-id",
        "claude-code.agent-usage",
        "claude-code.session-dir",
        "claude-code.transcript",
        "claude-code.tool-use-id",
        "codex.wall-time",
        "gemini-cli.pgid",
        "gemini-cli.background-pids",
        "claude-code.date",
    ]
    assert all(m.about and m.source == "built-in" for m in BUILT_IN_MASKS)
    assert [m.name for m in CompareRules.build().masks] == names
    assert CompareRules.build(defaults=False) == NO_RULES


def test_strict_replay_serves_a_request_that_differs_only_in_masked_text() -> None:
    trace = weather_trace()
    rules = CompareRules.build([r"weather in (?P<mask>\w+)"], defaults=False)
    plain = RecordedCalls(trace)
    assert isinstance(plain.match(first_request("Lyon")), Divergence)
    masked = RecordedCalls(trace, rules=rules)
    served = masked.match(first_request("Lyon"))
    assert isinstance(served, Served) and served.call.number == 0
    diverged = masked.match(second_request({"forecast": "sun", "celsius": 30}))
    assert isinstance(diverged, Divergence)
    assert diverged.difference is not None and diverged.difference.field == "content"


def test_tool_results_are_compared_in_call_order() -> None:
    req = json_of(second_request())
    call = req["messages"][2]["content"][0]
    req["messages"][2]["content"] = [call, dict(call, toolCallId="call-1", toolInput={"city": "Lyon"})]
    result = req["messages"][3]["content"][0]
    in_call_order = [result, dict(result, toolCallId="call-1", result="lyon")]
    a, b = copy.deepcopy(req), copy.deepcopy(req)
    a["messages"][3]["content"] = in_call_order
    b["messages"][3]["content"] = list(reversed(in_call_order))
    assert first_difference(a, b) is None
    assert request_digest(a) == request_digest(b)
    c = copy.deepcopy(a)
    c["messages"][3]["content"][1]["result"] = "lyon, later"
    assert first_difference(a, c) is not None


# -- two runs compared under the masks (blackbox diff --mask) ------------------------------------


def _run(run_id: str, cch: str, pid: str, agent_id: str, at: int) -> Any:
    from blackbox_mitm.cassette import Trace

    t = Trace.new(run_id, created_at=at)
    request = claude_request(cch, pid, agent_id)
    t.append("model_input", request, timestamp=at + 1)
    t.append("model_output", {"type": "final_answer", "text": f"Launched agentId: {agent_id}"}, timestamp=at + 2)
    return t


def test_two_recordings_are_the_same_run_under_the_masks() -> None:
    from blackbox_mitm.matcher.compare_runs import masked_divergence

    a = _run("a", "db6ac", PID_A, "aa9983f9375969e77", 1_000)
    b = _run("b", "3d6fb", PID_B, "a0123456789abcdef", 9_000)  # other ids, other times
    assert masked_divergence(a, b, CompareRules.build()) is None
    bare = masked_divergence(a, b, CompareRules.build(defaults=False))
    assert bare is not None and (bare.index, bare.kind) == (0, "model_input")
    assert bare.human_lines()[0] == "first difference under the masks at step 0: system prompt differs at character 79"
    assert any(line.startswith("    a: ") for line in bare.human_lines())


def test_a_masked_diff_still_finds_a_different_answer_or_a_shorter_run() -> None:
    from blackbox_mitm.matcher.compare_runs import masked_divergence

    a = _run("a", "db6ac", PID_A, "aa9983f9375969e77", 1_000)
    b = _run("b", "db6ac", PID_A, "aa9983f9375969e77", 1_000)
    b.steps[1].payload["text"] = "Something else"
    d = masked_divergence(a, b, CompareRules.build())
    assert d is not None and (d.index, d.kind) == (1, "payload") and "payload.text" in d.explanation
    c = _run("c", "db6ac", PID_A, "aa9983f9375969e77", 1_000)
    c.append("metadata", {"event": "run_completed", "status": "success", "result": ""}, timestamp=1_003)
    d = masked_divergence(a, c, CompareRules.build())
    assert d is not None and d.kind == "length" and d.index == 2


def test_the_docs_list_every_built_in_mask() -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "masks-and-config.md").read_text(encoding="utf-8")
    for mask in BUILT_IN_MASKS:
        assert f"| `{mask.name}` |" in page, mask.name


def test_the_built_in_masks_are_re2_patterns_that_mask_only_their_group() -> None:
    import re2

    for mask in BUILT_IN_MASKS:
        assert isinstance(mask.regex, re2._Regexp), mask.name
    rules = CompareRules.build()
    text = "Today's date is 2026-12-01. Wall time 0.25 seconds. <usage>total_tokens: 12</usage>"
    assert rules.mask_text(text) == (
        "Today's date is <masked:claude-code.date>. Wall time <masked:codex.wall-time>. <usage><masked:claude-code.agent-usage></usage>"
    )


def test_a_lone_surrogate_in_the_text_keeps_the_spans_in_place() -> None:
    rules = CompareRules.build([r"id=(?P<mask>\d+)"], defaults=False)
    assert rules.mask_text("half \ud83d id=42 end") == "half \ud83d id=<masked:mask-1> end"


@pytest.mark.parametrize(
    ("pattern", "said"), [(r"(?<=x)y", "not RE2 syntax"), (r"(a)\1", "not RE2 syntax"), (r"(unclosed", "is not a regular expression")]
)
def test_a_pattern_re2_cannot_run_is_refused_naming_the_rule(pattern: str, said: str) -> None:
    with pytest.raises(MaskError) as caught:
        CompareRules.build([pattern], defaults=False)
    assert "mask 'mask-1' (from --mask)" in str(caught.value) and said in str(caught.value) and "(?P<mask>" in str(caught.value)


def test_gemini_cli_shell_results_compare_equal_across_runs() -> None:
    """What varies run to run in Gemini CLI's run_shell_command result: the process group and background pids."""
    rules = CompareRules.build()
    first = "Output: hello\nBackground PIDs: 4121, 4122\nProcess Group PGID: 4117"
    second = "Output: hello\nBackground PIDs: 977\nProcess Group PGID: 951"
    assert rules.mask_text(first) == rules.mask_text(second)
    assert rules.mask_text("Output: hello\nProcess Group PGID: 4117") != rules.mask_text("Output: bye\nProcess Group PGID: 4117")
    moved = "Command moved to background (PID: {}). Output hidden. Press Ctrl+B to view."
    assert rules.mask_text(moved.format(12)) == rules.mask_text(moved.format(3456))
    for mask in BUILT_IN_MASKS:
        if mask.name.startswith("gemini-cli."):
            assert "(?<" not in mask.pattern and "(?=" not in mask.pattern and "(?!" not in mask.pattern  # RE2 syntax


def test_the_needs_gate_finds_every_literal_of_the_built_in_masks() -> None:
    from blackbox_mitm.matcher.masks import _gate, _spans

    gate = _gate(BUILT_IN_MASKS)
    assert gate is not None
    for mask in BUILT_IN_MASKS:
        for literal in mask.needs:
            assert gate.search("x " + literal + " y") is not None, literal
    assert gate.search("nothing that any built-in mask needs") is None
    text = "Today's date is 2026-01-02 \ud800 and cch=abc; cc_prompt_id=12-3"  # a lone surrogate: the masks' own checks
    assert [m.name for _, _, m in _spans(text, BUILT_IN_MASKS, gate)] == ["claude-code.date", "claude-code.billing"]
    assert CompareRules.build().gate is not None and CompareRules().gate is None  # made once, with the rules
