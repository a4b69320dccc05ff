"""Adjacent messages that are one turn (``matcher.turns``): google-genai's streamed chat history, compared joined.

google-genai sends a streamed answer back as one model content per chunk it got,
and a replay's chunks are not the provider's. Under ``CompareRules.one_turn``
(the Gemini codec's ``ONE_TURN_ROLES``) the same turn in other pieces matches —
through both digests, the plain ``request_digest`` and the memoized
``PieceDigester`` — while anything else that differs still differs, and a
divergence report names the agent's own message.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from blackbox_mitm.codecs import gemini, one_turn_roles, openai_chat
from blackbox_mitm.codecs.base import CallIds
from blackbox_mitm.matcher.difference import first_difference
from blackbox_mitm.matcher.digests import PieceDigester
from blackbox_mitm.matcher.masks import NO_RULES, CompareRules, Mask
from blackbox_mitm.matcher.normalize import compared_view, request_digest
from blackbox_mitm.matcher.turns import fold_turns, turn_spans, with_one_turn

FOLD = replace(CompareRules.build(), one_turn=("assistant",))
ANSWER = "Zurich sits at the northern end of Lake Zurich, where the Limmat leaves the lake."


def _chat(*turn: Any, after: str = "And the weather?") -> dict[str, Any]:
    """A request whose first model turn is ``turn``: one message per piece (a string, a list of parts, or a message)."""
    pieces = [t if isinstance(t, dict) and "role" in t else {"role": "assistant", "content": t} for t in turn]
    return {
        "model": "gemini-2.5-flash",
        "messages": [{"role": "user", "content": "Tell me about Zurich."}, *pieces, {"role": "user", "content": after}],
    }


def _same(a: dict[str, Any], b: dict[str, Any], rules: CompareRules = FOLD) -> bool:
    """Both digests agree with each other, and say whether ``a`` and ``b`` match."""
    plain = request_digest(a, rules) == request_digest(b, rules)
    memo = PieceDigester(rules)
    assert memo.digest(a) == request_digest(a, rules) and memo.digest(b) == request_digest(b, rules)
    assert (memo.digest(a) == memo.digest(b)) == plain
    return plain


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def test_a_turn_in_other_pieces_matches_through_both_digests() -> None:
    recorded = _chat(*_pieces(ANSWER, 7))  # the provider's 12 chunks
    replayed = _chat(*_pieces(ANSWER, 64))  # a replay's 64-character pieces
    assert _same(recorded, replayed)
    assert _same(recorded, _chat(ANSWER))
    assert _same(_chat("ab", "c"), _chat("abc"))


def test_without_the_fold_the_pieces_are_compared() -> None:
    recorded, replayed = _chat(*_pieces(ANSWER, 7)), _chat(*_pieces(ANSWER, 64))
    assert not _same(recorded, replayed, CompareRules.build())
    assert not _same(recorded, replayed, NO_RULES)


def test_another_text_still_differs() -> None:
    assert not _same(_chat("ab", "c"), _chat("abd"))
    assert not _same(_chat("ab", "c"), _chat("ab"))
    assert not _same(_chat("ab", "c"), _chat("ab c"))


def test_a_call_between_texts_is_not_joined_across() -> None:
    call = {"type": "tool_use", "toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Zurich"}}
    split = _chat("Let me ", "check.", [call], "Done.")
    assert _same(split, _chat("Let me check.", [call], "Done."))
    assert _same(split, _chat([{"type": "text", "text": "Let me check."}, call, {"type": "text", "text": "Done."}]))
    assert not _same(split, _chat("Let me check.Done.", [call]))  # the text after the call stays after it
    assert not _same(split, _chat([call], "Let me check.Done."))
    view = compared_view(split, FOLD)["messages"][1]
    assert view == {"role": "assistant", "content": [{"type": "text", "text": "Let me check."}, call, {"type": "text", "text": "Done."}]}


def test_another_role_ends_the_turn_and_other_roles_are_not_folded() -> None:
    two_turns = {
        "messages": [{"role": "assistant", "content": "a"}, {"role": "user", "content": "x"}, {"role": "assistant", "content": "b"}]
    }
    assert not _same(two_turns, {"messages": [{"role": "assistant", "content": "ab"}, {"role": "user", "content": "x"}]})
    users = {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}
    assert not _same(users, {"messages": [{"role": "user", "content": "ab"}]})  # only the declared roles


def test_an_empty_piece_and_a_thought_only_chunk_join_the_turn() -> None:
    # A thought part is dropped from the history (``""`` is left); a closing chunk may be empty text.
    assert _same(_chat("", "ab", "c", ""), _chat("abc"))


def test_text_parts_with_more_than_text_are_not_joined() -> None:
    cited = {"type": "text", "text": "c", "citations": [{"url": "https://example.com"}]}
    assert not _same(_chat("ab", [cited]), _chat([{"type": "text", "text": "abc", "citations": [{"url": "https://example.com"}]}]))


def test_a_mask_sees_the_joined_text() -> None:
    rules = replace(CompareRules.build([Mask("pgid", r"PGID: \d+")]), one_turn=("assistant",))
    assert _same(_chat("Process Group PG", "ID: 4711 done"), _chat("Process Group PGID: 99 done"), rules)


def test_nothing_in_the_request_is_changed() -> None:
    recorded = _chat("ab", "c")
    messages = list(recorded["messages"])
    compared_view(recorded, FOLD)
    PieceDigester(FOLD).digest(recorded)
    assert recorded["messages"] == messages and len(messages) == 4
    assert fold_turns(messages, ()) is messages and fold_turns([messages[0]], ("assistant",)) == [messages[0]]


def test_the_spans_name_the_original_messages() -> None:
    messages = _chat("a", "b", "c")["messages"]
    assert turn_spans(messages, ("assistant",)) == [(0, 1), (1, 4), (4, 5)]
    assert turn_spans(messages, ()) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]
    odd = [{"role": "assistant", "content": "a"}, {"role": "assistant", "content": 7}, "not a message"]
    assert turn_spans(odd, ("assistant",)) == [(0, 1), (1, 2), (2, 3)]  # a content that is neither text nor parts stays apart


def test_a_divergence_names_the_agents_message_and_both_spans() -> None:
    recorded = _chat(*_pieces(ANSWER, 7), after="And the weather?")
    got = _chat(*_pieces(ANSWER, 64), after="And the wind?")
    d = first_difference(recorded, got, FOLD)
    assert d is not None and d.field == "content" and d.role == "user"
    assert d.message == 3  # the agent's request: its question follows its 2 model messages
    assert (d.recorded_messages, d.got_messages) == (14, 4)  # the requests' own counts
    assert (
        d.note
        == "this is message 13 of the recording's request and message 3 of the agent's request (adjacent assistant messages before it are compared as one turn)"
    )

    changed = _chat(*_pieces(ANSWER.replace("Limmat", "Sihl"), 64))
    d = first_difference(recorded, changed, FOLD)
    assert d is not None and d.field == "content" and d.message == 1 and d.role == "assistant"
    assert d.at_char == ANSWER.index("Limmat")  # in the turn's joined text
    assert (
        d.note
        == "adjacent assistant messages are compared as one turn: this is messages 1-12 of the recording's request and messages 1-2 of the agent's request"
    )
    assert "message 1 (assistant): content differs" in d.headline()


def test_a_missing_turn_is_named_in_the_recordings_indices() -> None:
    recorded = {
        "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]
    }
    d = first_difference(recorded, {"messages": [{"role": "user", "content": "q"}]}, FOLD)
    assert d is not None and d.field == "missing" and d.message == 1
    assert d.note is not None and "messages 1-2 of the recording's request" in d.note


def test_the_gemini_codec_declares_the_fold_and_openai_chat_does_not() -> None:
    rules = CompareRules.build()
    assert with_one_turn(rules, one_turn_roles(gemini)).one_turn == ("assistant",)
    assert with_one_turn(rules, one_turn_roles(openai_chat)) is rules
    folded = with_one_turn(rules, one_turn_roles(gemini))
    assert with_one_turn(folded, one_turn_roles(gemini)) is folded  # once


def test_a_streamed_gemini_history_decodes_to_one_message_per_content_and_matches_whole() -> None:
    """The codec keeps one message per content (the cassette is what was sent); the fold compares them as one."""

    def request(*pieces: str) -> dict[str, Any]:
        model = [{"role": "model", "parts": [{"text": p}]} for p in pieces]
        contents = [{"role": "user", "parts": [{"text": "hi"}]}, *model, {"role": "user", "parts": [{"text": "more"}]}]
        decoded = gemini.decode_request(
            json.dumps({"contents": contents}).encode(), CallIds(), path="/v1beta/models/gemini-2.5-flash:generateContent"
        )
        return dict(decoded.model_input)

    chunks, whole = request("Hel", "lo ", "there"), request("Hello there")
    assert len(chunks["messages"]) == 5 and len(whole["messages"]) == 3
    assert _same(chunks, whole)
    assert not _same(chunks, whole, CompareRules.build())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=4), st.data())
def test_any_cut_of_a_history_matches_any_other(answers: list[str], data: st.DataObject) -> None:
    """Each model turn cut at random places, twice: the two requests match, by both digests."""

    def cut(text: str) -> list[str]:
        points = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=5)))
        return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True) if a < b]

    def history() -> dict[str, Any]:
        messages: list[Any] = []
        for n, answer in enumerate(answers):
            messages.append({"role": "user", "content": f"question {n}"})
            messages += [{"role": "assistant", "content": piece} for piece in cut(answer)]
        return {"messages": messages}

    assert _same(history(), history())
