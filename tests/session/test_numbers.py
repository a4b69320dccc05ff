"""Numbers a cassette cannot hold are refused by name; the encoder shared by the journal and the final save never fails on one."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blackbox_mitm.cassette.canonical import canonical_bytes
from blackbox_mitm.cassette.store import encode_json
from blackbox_mitm.errors import BlackboxUnsupportedError
from blackbox_mitm.session import numbers
from blackbox_mitm.session.numbers import refuse_unrepresentable_numbers, unrepresentable_number


@pytest.mark.parametrize(
    ("body", "where", "text"),
    [
        (b'{"model": "m", "temperature": 1e400}', "body.temperature", "1e400"),
        (b'{"top_p": -1E+309}', "body.top_p", "-1E+309"),
        (b'{"a": [1, NaN]}', "body.a[1]", "NaN"),
        (b'{"a": {"b c": -Infinity}}', 'body.a["b c"]', "-Infinity"),
        (b'{"seed": ' + b"9" * 400 + b"}", "body.seed", "999999999999… (400 digits)"),
    ],
)
def test_a_number_no_double_holds_is_found_by_its_path(body: bytes, where: str, text: str) -> None:
    assert unrepresentable_number(body) == (where, text)
    with pytest.raises(BlackboxUnsupportedError) as caught:
        refuse_unrepresentable_numbers(body)
    assert caught.value.field == where and text in str(caught.value)


@pytest.mark.parametrize(
    "body",
    [b'{"temperature": 1e308}', b'{"t": "1e400 NaN Infinity in a string"}', b'{"n": 9007199254740993}', b"not json e999", b"{}"],
)
def test_numbers_a_double_holds_and_text_are_let_through(body: bytes) -> None:
    assert unrepresentable_number(body) is None


def test_the_encoder_never_fails_where_the_journal_wrote_and_writes_what_the_hash_counts() -> None:
    # One step's batch (orjson: inf is null) and another's (a lone surrogate: the standard library) ...
    inf_step = {"temperature": float("inf"), "n": float("nan"), "big": 10**400}
    surrogate_step = {"content": "half \ud83d"}
    assert encode_json([inf_step]) == b'[{"temperature":null,"n":null,"big":null}]'
    assert b"\\ud83d" in encode_json([surrogate_step])
    # ... and the final save holds both at once: it writes, and reads back to what the step hash was over.
    whole = encode_json({"steps": [inf_step, surrogate_step]}, indent=True)
    back = json.loads(whole)
    assert back["steps"][0] == {"temperature": None, "n": None, "big": None}
    assert canonical_bytes(back["steps"][0]) == canonical_bytes(inf_step) == orjson.dumps({"big": None, "n": None, "temperature": None})
    assert inf_step["temperature"] == float("inf")  # the value itself is not changed


# -- the orjson fast path (issue #28) agrees with the full check -------------------------------------------------

_NUMBER_TEXTS = st.one_of(
    st.integers(min_value=-(10**320), max_value=10**320).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1e400", "-1E+400", "1e308", "1.8e308", "2.5e-400", "NaN", "Infinity", "-Infinity", "1" + "0" * 308]),
)


def _slow_answer(body: bytes) -> tuple[str, str] | None:
    """What ``unrepresentable_number`` answered before the fast path: the substring checks, then the hooked parse."""
    if not numbers._might_hold_one(body):
        return None
    try:
        data = json.loads(body, parse_float=numbers._float, parse_int=numbers._int, parse_constant=numbers._Bad)
    except ValueError:
        return None
    return numbers._find(data)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "e000", "x\ud800"]), _NUMBER_TEXTS), max_size=4))
def test_the_orjson_fast_path_agrees_with_the_full_check(fields: list[tuple[str, str]]) -> None:
    body = ("{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in fields) + "}").encode("utf-8", "surrogatepass")
    assert numbers.unrepresentable_number(body) == _slow_answer(body)


def test_a_body_the_number_check_parsed_is_not_parsed_again_by_the_codec() -> None:
    # The check's orjson parse is handed to the codec's next parse of that very body (once): 120 KB parsed once.
    from unittest import mock

    import orjson

    from blackbox_mitm.codecs.common import jsonio
    from blackbox_mitm.session.numbers import refuse_unrepresentable_numbers

    body = b'{"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.5}'
    refuse_unrepresentable_numbers(body)
    with mock.patch.object(orjson, "loads", side_effect=AssertionError("parsed twice")):
        first = jsonio.load_object(body, "request", "openai")
    assert first == orjson.loads(body)
    again = jsonio.load_object(body, "request", "openai")  # handed over once: a second read parses afresh
    assert again == first and again is not first
    other = (body + b" ")[:-1]  # an equal body that is another object: never given the handed-over parse
    assert other == body and other is not body
    refuse_unrepresentable_numbers(body)
    handed = jsonio._handed.slot[1]
    assert jsonio.loads(other, "request", "openai") is not handed
    assert jsonio.loads(body, "request", "openai") is not handed  # the slot was spent on the other body's miss
