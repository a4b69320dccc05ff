"""verify's pre-scan (``neutrality.scan``) with its RE2 gates decides exactly as the plain scan did: the gates only skip
work on payloads where no exact test could match, never a payload one of them flags."""

from __future__ import annotations

import itertools
import re

import pytest

from blackbox_mitm.cassette import neutrality
from blackbox_mitm.cassette.credentials import QUERY_KEY, scheme_credential
from blackbox_mitm.cassette.facts import ProviderFacts
from blackbox_mitm.codecs import provider_facts

_SHAPES = tuple(re.compile(shape) for shape in neutrality._SECRET_SHAPES)


def _reference_scan(payload_json: bytes, facts: ProviderFacts) -> tuple[bool, bool]:
    """The scan as it was before the gates: every test on every payload, with Python's ``re`` alone."""
    if any(rx.search(payload_json) for rx in _SHAPES):
        return True, True
    if neutrality._ECHO_LEAD in payload_json and neutrality._echo_tag(facts.id_prefixes).search(payload_json.decode("utf-8", "replace")):
        return True, True
    lowered = payload_json.lower()
    words = any(word in lowered for word in neutrality._CREDENTIAL_WORDS)
    if (words or QUERY_KEY.search(lowered)) and scheme_credential(payload_json, lowered) is not None:
        return True, True
    return words or any(rx.search(payload_json) for rx in facts.suspect_structure), False


_PIECES = [
    b'{"messages":[{"role":"user","content":[{"type":"text","text":"hello"}]}]}',
    b"sk-" + b"A" * 32,
    b"sk-" + b"A" * 31,
    b"AIza" + b"0" * 35,
    b"gsk_" + b"x" * 40,
    b"AKIA" + b"Q" * 16,
    b"ASIA" + b"Z" * 15,
    b"ya29." + b"a" * 20,
    b"Bearer " + b"t" * 24,
    b"API_KEY",
    b"Api-Key: abc",
    b"apikey",
    b"AUTH_TOKEN=token abcdefghijklmnopqrstuv",
    b"Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==",
    b"https://x.test/v1?KEY=abcdefghijklmnop1234",
    b"https://x.test/v1&key=abcdefghijklmnop1234",
    b"monkey=banana",
    b'"id":"chatcmpl-abc"',
    b'"toolCallId":"toolu_01"',
    b'"toolCallId":"call-3"',
    b'"finish_reason":"stop"',
    b"<tool-use-id>toolu_0123abcd</tool-use-id>",
    "\u212a".encode() + b"ey=",  # the Kelvin sign folds to k for RE2, not for bytes.lower: a gate hit, no credential
    b"\xed\xa0\xbd half a surrogate",
]


@pytest.mark.parametrize("pieces", list(itertools.combinations(_PIECES, 2)) + [(p,) for p in _PIECES])
def test_the_gated_scan_decides_as_the_plain_scan(pieces: tuple[bytes, ...]) -> None:
    facts = provider_facts()
    payload = b" ".join(pieces)
    assert neutrality.scan(payload, facts) == _reference_scan(payload, facts)


def test_a_clean_payload_is_not_walked_and_a_leaked_key_is() -> None:
    facts = provider_facts()
    assert neutrality.scan(_PIECES[0], facts) == (False, False)
    assert neutrality.scan(b'{"text":"my key is sk-' + b"9" * 40 + b'"}', facts) == (True, True)


def test_each_structural_pattern_is_in_a_gate() -> None:
    gates = neutrality._structure_gates(provider_facts().suspect_structure)
    assert len(gates) == 2  # the two literal-led alternations in one RE2 pass; the lookahead one in Python
    assert gates[1] is provider_facts().suspect_structure[2]
