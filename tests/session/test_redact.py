"""Redaction rules and tool results in call order: the two transforms a payload goes through before it is hashed or matched."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from blackbox_mitm.session.redact import Redaction, RedactionError, Redactor, rule_name
from blackbox_mitm.session.transcript import order_tool_results

EMAIL = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"


def test_every_string_of_a_payload_is_redacted_and_keys_are_kept() -> None:
    redactor = Redactor.build([Redaction("email", EMAIL)])
    payload = {
        "systemPrompt": "Support for ada@example.com",
        "messages": [
            {"role": "user", "content": "Write to ada@example.com and bob@example.org"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "toolCallId": "call-0", "toolName": "mail", "toolInput": {"to": ["ada@example.com"]}}],
            },
        ],
        "ada@example.com": 3,
    }
    before = copy.deepcopy(payload)
    out = redactor.payload(payload)
    assert payload == before  # the input is not modified
    assert out["systemPrompt"] == "Support for <redacted:email>"
    assert out["messages"][0]["content"] == "Write to <redacted:email> and <redacted:email>"
    assert out["messages"][1]["content"][0]["toolInput"] == {"to": ["<redacted:email>"]}
    assert out["ada@example.com"] == 3  # a key stays: redacting keys could merge two into one
    assert "example.org" not in repr(out["messages"])


def test_unchanged_payloads_are_returned_as_they_are() -> None:
    redactor = Redactor.build([EMAIL])
    payload: dict[str, Any] = {"messages": [{"role": "user", "content": "no address here"}], "n": 1.5, "ok": True}
    assert redactor.payload(payload) is payload
    assert not redactor.found_in(payload)
    assert Redactor().payload(payload) is payload


def test_redacting_twice_is_redacting_once() -> None:
    redactor = Redactor.build([EMAIL, r"sk-[A-Za-z0-9]{8,}"])
    text = "key sk-abcdefgh123 for ada@example.com"
    once = redactor.text(text)
    assert once == f"key <redacted:{rule_name(r'sk-[A-Za-z0-9]{8,}')}> for <redacted:{rule_name(EMAIL)}>"
    assert redactor.text(once) == once


def test_an_unnamed_rule_is_named_after_its_pattern_wherever_it_is_given() -> None:
    first = Redactor.build([EMAIL, "sk-[a-z]+"])
    second = Redactor.build(["sk-[a-z]+", EMAIL], source="blackbox.toml")
    assert first.text("ada@example.com") == second.text("ada@example.com") == f"<redacted:{rule_name(EMAIL)}>"
    assert rule_name(EMAIL).startswith("redact-") and len(rule_name(EMAIL)) == 15


def test_overlapping_rules_take_the_longest_match_at_a_position() -> None:
    redactor = Redactor.build([Redaction("user", r"ada"), Redaction("email", EMAIL)])
    assert redactor.text("ada@example.com, ada") == "<redacted:email>, <redacted:user>"


@pytest.mark.parametrize(("pattern", "message"), [("[unclosed", "not a regular expression"), ("a?", "empty string"), ("", "empty pattern")])
def test_a_bad_rule_is_a_named_error(pattern: str, message: str) -> None:
    with pytest.raises(RedactionError, match=message):
        Redactor.build([pattern])


def test_names_must_be_unique_and_plain() -> None:
    with pytest.raises(RedactionError, match="two redaction rules"):
        Redactor.build([Redaction("a", "x"), Redaction("a", "y")])
    with pytest.raises(RedactionError, match="name"):
        Redaction("an email", EMAIL)


# -- tool results in call order ------------------------------------------------------------------


def _use(n: int) -> dict[str, Any]:
    return {"type": "tool_use", "toolCallId": f"call-{n}", "toolName": "Agent", "toolInput": {"n": n}}


def _result(n: int) -> dict[str, Any]:
    return {"type": "tool_result", "toolCallId": f"call-{n}", "toolName": "Agent", "result": f"done {n}"}


def _round(results: list[Any], uses: tuple[int, ...] = (0, 1, 2)) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "text", "text": "Three at once."}, *(_use(n) for n in uses)]},
            {"role": "user", "content": results},
        ]
    }


def test_results_are_put_in_the_order_of_the_calls_they_answer() -> None:
    sent = _round([_result(2), _result(0), _result(1)])
    before = copy.deepcopy(sent)
    out = order_tool_results(sent)
    assert [p["toolCallId"] for p in out["messages"][2]["content"]] == ["call-0", "call-1", "call-2"]
    assert sent == before


def test_text_parts_keep_their_places() -> None:
    reminder = {"type": "text", "text": "<system-reminder>…</system-reminder>"}
    out = order_tool_results(_round([_result(1), reminder, _result(0)]))
    assert out["messages"][2]["content"] == [_result(0), reminder, _result(1)]


def test_a_transcript_in_call_order_is_returned_as_is() -> None:
    sent = _round([_result(0), _result(1), _result(2)])
    assert order_tool_results(sent) is sent
    plain = {"messages": [{"role": "user", "content": "hi"}], "tools": []}
    assert order_tool_results(plain) is plain


def test_results_for_calls_the_turn_did_not_make_go_last_in_the_order_sent() -> None:
    out = order_tool_results(_round([_result(9), _result(1), _result(7), _result(0)], uses=(0, 1)))
    assert [p["toolCallId"] for p in out["messages"][2]["content"]] == ["call-0", "call-1", "call-9", "call-7"]


def test_each_round_is_ordered_against_its_own_assistant_turn() -> None:
    sent = _round([_result(1), _result(0)], uses=(0, 1))
    sent["messages"] += [
        {"role": "assistant", "content": [_use(3), _use(2)]},  # the model called 3 before 2
        {"role": "user", "content": [_result(2), _result(3)]},
    ]
    out = order_tool_results(sent)
    assert [p["toolCallId"] for p in out["messages"][2]["content"]] == ["call-0", "call-1"]
    assert [p["toolCallId"] for p in out["messages"][4]["content"]] == ["call-3", "call-2"]


def test_odd_shapes_are_left_alone() -> None:
    for odd in (
        {"messages": "text"},
        {"messages": [None, 3, {"role": "user", "content": [1, {"type": "tool_result", "toolCallId": ["x"]}]}]},
        {},
    ):
        assert order_tool_results(odd) is odd
