"""Numbers a cassette cannot hold are refused by name; the encoder shared by the journal and the final save never fails on one."""

from __future__ import annotations

import json

import orjson
import pytest

from blackbox_mitm.cassette.canonical import canonical_bytes
from blackbox_mitm.cassette.store import encode_json
from blackbox_mitm.errors import BlackboxUnsupportedError
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
