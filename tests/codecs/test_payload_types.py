"""The neutral payload types (``cassette.payloads``) describe what the codecs really produce.

mypy checks the codecs build ``ModelInput`` / ``ModelOutput`` values; this checks the
values themselves, at run time, for every recorded fixture of every registered codec:
each key is one the type declares, each required key is there, each value has the
declared kind (recursively, through messages, parts, tool definitions and calls).
"""

from __future__ import annotations

import base64
import json
import types
import typing
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict, Union, get_args, get_origin, get_type_hints

import pytest

from blackbox_mitm.cassette.payloads import OUTPUT_TYPES, ModelInput, ModelOutput
from blackbox_mitm.codecs import REGISTERED, parse_stream
from blackbox_mitm.codecs.base import CallIds
from blackbox_mitm.codecs.sse import parse_sse

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _problems(value: Any, hint: Any, where: str) -> list[str]:
    """Why ``value`` is not a ``hint`` (a TypedDict, a union, a list, a literal or a plain type)."""
    if hint is Any:
        return []
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        options = [_problems(value, h, where) for h in get_args(hint)]
        if any(not o for o in options):
            return []
        fitting = [o for h, o in zip(get_args(hint), options, strict=True) if isinstance(value, _kind(h))]
        return min(fitting or options, key=len)  # the option of the value's own kind says most
    if origin is Literal:
        return [] if value in get_args(hint) else [f"{where}: {value!r} is not one of {get_args(hint)}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: not a list"]
        return [p for i, item in enumerate(value) for p in _problems(item, get_args(hint)[0], f"{where}[{i}]")]
    if origin is dict:
        return [] if isinstance(value, dict) else [f"{where}: not an object"]
    if typing.is_typeddict(hint):
        if not isinstance(value, dict):
            return [f"{where}: not an object"]
        hints = get_type_hints(hint)
        # (read from the annotations: __required_keys__ cannot see NotRequired under postponed annotations)
        required = [k for k, h in get_type_hints(hint, include_extras=True).items() if get_origin(h) is not NotRequired]
        found = [f"{where}: {key!r} is not a key of {hint.__name__}" for key in value if key not in hints]
        found += [f"{where}: {key!r} is missing" for key in required if key not in value]
        return found + [p for key, h in hints.items() if key in value for p in _problems(value[key], h, f"{where}.{key}")]
    return [] if isinstance(value, hint) else [f"{where}: {type(value).__name__} is not {hint.__name__}"]


def _kind(hint: Any) -> type | tuple[type, ...]:
    origin = get_origin(hint)
    if typing.is_typeddict(hint) or origin is dict:
        return dict
    if origin is list:
        return list
    return hint if isinstance(hint, type) else object


def _cases() -> list[Any]:
    return [pytest.param(c, p, id=f"{c.NAME}-{p.stem}") for c in REGISTERED for p in sorted((FIXTURES / c.NAME).glob("*.json"))]


@pytest.mark.parametrize(("codec", "fixture"), _cases())
def test_decoded_payloads_are_what_their_types_say(codec: Any, fixture: Path) -> None:
    data = json.loads(fixture.read_text())
    ids = CallIds()
    for call in data.get("calls", [data]):
        bare, _, query = data.get("path", "").partition("?")
        request = codec.decode_request(json.dumps(call["request"]).encode(), ids, path=bare, query=query)
        assert _problems(request.model_input, ModelInput, "model_input") == []
        if "stream_base64" in call:  # binary framing (Bedrock's event stream)
            output = codec.decode_response(
                codec.aggregate_stream(parse_stream(codec, base64.b64decode(call["stream_base64"]))), ids, request
            )
        elif "stream" in call:
            output = codec.decode_response(codec.aggregate_stream(parse_sse(call["stream"].encode())), ids, request)
        else:
            output = codec.decode_response(json.dumps(call["response"]).encode(), ids, request)
        assert _problems(output, ModelOutput, "model_output") == []


def test_the_checker_finds_a_payload_that_does_not_fit() -> None:
    """The check above can fail: a stray key, a missing one and a wrong kind are each named."""
    bad = {"messages": [{"role": "user", "content": [{"type": "text", "txt": "hi"}]}], "tools": "none", "extra": 1}
    found = _problems(bad, ModelInput, "model_input")
    assert "model_input: 'extra' is not a key of ModelInput" in found
    assert "model_input.tools: not a list" in found
    assert any("'txt'" in p for p in found)


def test_output_types_are_the_shapes_of_model_output() -> None:
    literals = [get_args(get_type_hints(shape)["type"])[0] for shape in get_args(ModelOutput)]
    assert tuple(literals) == OUTPUT_TYPES


def test_not_required_keys_are_the_optional_ones() -> None:
    class Example(TypedDict):
        a: int
        b: NotRequired[str]

    assert _problems({"a": 1}, Example, "x") == []
    assert _problems({"b": "s"}, Example, "x") == ["x: 'a' is missing"]
