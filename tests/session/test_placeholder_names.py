"""``placeholder_names``: the placeholders a payload's strings use, found with or without the quick check."""

from __future__ import annotations

from blackbox_mitm.session.environment import placeholder_names


def test_the_names_in_nested_strings_are_found() -> None:
    payload = {"messages": [{"content": "cd <env:home>/src and <env:user>"}], "n": 1, "tools": [{"x": ["<env:tmp>"]}]}
    assert placeholder_names(payload) == {"home", "user", "tmp"}


def test_a_payload_without_placeholders_has_none() -> None:
    assert placeholder_names({"messages": [{"content": "env: <home> not a placeholder"}], "big": 1.5}) == set()


def test_a_key_is_not_a_string_value() -> None:
    assert placeholder_names({"<env:home>": "value"}) == set()


def test_what_orjson_cannot_write_is_still_searched() -> None:
    assert placeholder_names({"a": "\ud800 <env:home>", "b": 2**70}) == {"home"}
    assert placeholder_names({"a": "\ud800", "b": 2**70}) == set()
