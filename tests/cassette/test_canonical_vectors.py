"""Canonical JSON and step hashes are byte-identical to Node's (vectors in tests/fixtures/canonical)."""

from __future__ import annotations

import hashlib
import json
import math
import random
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cassette_builders import FIXTURES

from blackbox_mitm.cassette import Trace, canonical_bytes, step_hash
from blackbox_mitm.cassette import canonical as canonical_module
from blackbox_mitm.cassette.canonical import js_number
from blackbox_mitm.cassette.store import decode_json

VECTORS_DIR = FIXTURES / "canonical"
VECTORS = json.loads((VECTORS_DIR / "vectors.json").read_text(encoding="utf-8"))
VALUES = VECTORS["values"]
STEPS = VECTORS["steps"]


def test_the_vectors_cover_the_hard_cases() -> None:
    names = " ".join(v["name"] for v in VALUES)
    for needle in (
        "negative zero",
        "1e21",
        "1e-7",
        "smallest subnormal",
        "largest double",
        "2**53 + 1",
        "lone",
        "U+FFFF",
        "integer-like keys",
        "control",
        "empty object",
    ):
        assert needle in names


@pytest.mark.parametrize("vector", VALUES, ids=[v["name"] for v in VALUES])
def test_canonical_bytes_match_node(vector: dict[str, Any]) -> None:
    # The standard library keeps lone surrogates and integers past 64 bits exactly as written.
    value = json.loads(vector["json"])
    expected = vector["canonical"].encode("utf-8")
    assert canonical_bytes(value) == expected
    assert hashlib.sha256(canonical_bytes(value)).hexdigest() == vector["sha256"]


@pytest.mark.parametrize("vector", VALUES, ids=[v["name"] for v in VALUES])
def test_values_read_from_a_cassette_file_serialize_the_same(vector: dict[str, Any]) -> None:
    # What the loader builds (orjson: big integers become floats; the fallback: lone surrogates).
    assert canonical_bytes(decode_json(vector["json"].encode("utf-8"))) == vector["canonical"].encode("utf-8")


@pytest.mark.parametrize("vector", VALUES, ids=[v["name"] for v in VALUES])
def test_the_slow_path_alone_matches_node(vector: dict[str, Any]) -> None:
    assert canonical_module._slow(json.loads(vector["json"])) == vector["canonical"].encode("utf-8")


@pytest.mark.parametrize("step", STEPS, ids=[f"{s['index']}-{s['type']}" for s in STEPS])
def test_step_hash_matches_node(step: dict[str, Any]) -> None:
    payload = json.loads(step["payloadJson"])
    assert step_hash(step["index"], step["type"], step["timestamp"], payload, step["prevHash"]) == step["hash"]
    assert hashlib.sha256(step["canonical"].encode("utf-8")).hexdigest() == step["hash"]


def test_appending_the_vector_steps_reproduces_nodes_chain() -> None:
    trace = Trace.new("vectors", created_at=0)
    for step in STEPS:
        appended = trace.append(step["type"], json.loads(step["payloadJson"]), timestamp=step["timestamp"])
        assert (appended.prevHash, appended.hash) == (step["prevHash"], step["hash"])


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1.0, "1"),
        (0.1, "0.1"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-7, "1e-7"),
        (1e-6, "0.000001"),
        (-0.0, "0"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (123456789012345680000, "123456789012345680000"),
        (2**53 + 1, "9007199254740992"),
        (-(2**53) - 1, "-9007199254740992"),
        (2**53, "9007199254740992"),
        (-1.5e-10, "-1.5e-10"),
        (100.5, "100.5"),
        (math.nan, "null"),
        (math.inf, "null"),
    ],
)
def test_js_number(number: int | float, text: str) -> None:
    assert js_number(number) == text


def test_plain_text_with_numbers_stays_on_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_slow_path(value: Any) -> bytes:
        raise AssertionError("the slow path ran")

    monkeypatch.setattr(canonical_module, "_slow", no_slow_path)
    payload = {
        "text": "Step 1. Open the file. 2. Read v1.2e3; id 12345678901234567890",
        "n": 3,
        "emoji": "😀",
        "list": [1, 2],
        "t": 0.2,
        "c": 12.5,
    }
    assert canonical_bytes(payload) == json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def test_the_slow_path_walks_only_the_way_to_what_needs_rewriting(monkeypatch: pytest.MonkeyPatch) -> None:
    visited: list[Any] = []
    real = canonical_module._visit

    def spy(value: Any, out: list[bytes], stack: list[Any], *, whole: bool) -> None:
        visited.append(value)
        real(value, out, stack, whole=whole)

    monkeypatch.setattr(canonical_module, "_visit", spy)
    history = [{"role": "user", "content": f"message {n}"} for n in range(500)]
    payload = {"messages": history, "params": {"temperature": 1.0, "maxTokens": 10}, "model": "m"}
    out = canonical_bytes(payload)
    # The payload's fields, and the two params inside "params": never the 500 messages one by one.
    assert len(visited) <= 6
    expected = {**payload, "params": {"temperature": 1, "maxTokens": 10}}
    assert out == json.dumps(expected, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@pytest.mark.parametrize("value", [{"a": 1.0}, [-0.0], [1e16], [2**60], {"10": 1, "9": 2}, {"\uffff": 1, "😀": 2}, "x\ud800"])
def test_values_that_need_rewriting_take_the_slow_path(monkeypatch: pytest.MonkeyPatch, value: Any) -> None:
    calls = []
    real = canonical_module._slow

    def spy(v: Any) -> bytes:
        calls.append(v)
        return real(v)

    monkeypatch.setattr(canonical_module, "_slow", spy)
    canonical_bytes(value)
    assert calls


def test_the_one_pass_gate_lets_through_everything_the_exact_checks_catch() -> None:
    # _needs_rewrite runs the exact number and index-key checks only where the one RE2 pass matched: that pass must
    # match every text they would flag (else a value needing the slow path would skip it).
    rng = random.Random(28)
    alphabet = b'0123456789.e+-":,}]{[a'
    texts = [bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 24))) for _ in range(30000)]
    texts += [b"[1.0]", b"1.0", b"[1e+16]", b"[1e-7]", b'{"10":1}', b'{"0":1}', b"[12345678901234567]", b"[-1234567890123456]"]
    flagged = [t for t in texts if canonical_module._number_or_index_key(t)]
    assert len(flagged) > 500
    assert [t for t in flagged if canonical_module._ANY_CANDIDATE.search(t) is None] == []


# -- live cross-check with Node: random values, built in Python, serialized on both sides ---------

_KEYS = [
    "a",
    "b",
    "B",
    "_",
    "é",
    "\uffff",
    "\ue000",
    "😀",
    "\U00010000",
    "0",
    "2",
    "10",
    "01",
    "-1",
    "4294967294",
    "4294967295",
    "",
    "toolCallId",
    "\ud800",
]
_CHARS = ["a", "Z", " ", '"', "\\", "/", "\n", "\t", "\x00", "\x1f", "\x7f", "é", "€", "\u2028", "\uffff", "😀", "\ud83d", "\ude00", "天"]


def _random_number(rng: random.Random) -> int | float:
    choice = rng.randrange(6)
    if choice == 0:
        return rng.randint(-1000, 1000)
    if choice == 1:
        return rng.choice([2**53, 2**53 + 1, 2**64, 2**70, -(2**63) - 1, 10**21, 123456789012345678901])
    if choice == 2:
        return rng.choice([0.0, -0.0, 1.0, 0.1, 1e21, 1e-7, 5e-324, 1.7976931348623157e308, 1e16, 0.000001, 123e-20])
    if choice == 3:
        return round(rng.uniform(-1e6, 1e6), rng.randrange(0, 8))
    while True:  # any finite double, from its bits
        x: float = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if math.isfinite(x):
            return x


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(7 if depth < 4 else 4)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return _random_number(rng)
    if kind in (2, 3):
        return "".join(rng.choice(_CHARS) for _ in range(rng.randrange(6)))
    if kind == 4:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(_KEYS): _random_value(rng, depth + 1) for _ in range(rng.randrange(6))}


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH; the committed vectors are the real test")
def test_random_values_match_node_live(tmp_path: Path) -> None:
    rng = random.Random(20241130)
    values = [_random_value(rng) for _ in range(400)]
    # ASCII-escaped JSON carries lone surrogates and exact big integers to Node.
    lines = "\n".join(json.dumps(v, ensure_ascii=True) for v in values) + "\n"
    proc = subprocess.run(
        ["node", str(VECTORS_DIR / "generate.js"), "--lines"], input=lines, capture_output=True, text=True, timeout=60, check=True
    )
    answers = [json.loads(line) for line in proc.stdout.split("\n") if line]  # not splitlines(): U+2028 is data
    assert len(answers) == len(values)
    for value, answer in zip(values, answers, strict=True):
        ours = canonical_bytes(value)
        assert ours == answer["canonical"].encode("utf-8"), value
        assert hashlib.sha256(ours).hexdigest() == answer["sha256"]
