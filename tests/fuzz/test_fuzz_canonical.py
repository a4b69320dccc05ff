"""Property-based: canonical JSON is total on JSON values, reads back to the same value, and is a fixed point.

For values whose keys are plain ASCII letters and whose numbers are integers a
double holds exactly, the canonical form is exactly ``json.dumps`` with sorted
keys and no whitespace (the spec's definition, with nothing JavaScript-specific
in play). Deep nesting, up to the 1,024 levels a cassette may hold, takes the
slow path without recursion.
"""

from __future__ import annotations

import json
from typing import Any

from fuzz_strategies import json_values
from hypothesis import given
from hypothesis import strategies as st

from blackbox_mitm.cassette.canonical import canonical_bytes, step_hash
from blackbox_mitm.cassette.jsonfile import MAX_DEPTH, decode_json

plain = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**53), max_value=2**53) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ", max_size=6), inner, max_size=4)
    ),
    max_leaves=25,
)


@given(json_values)
def test_canonical_json_reads_back_and_is_a_fixed_point(value: Any) -> None:
    out = canonical_bytes(value)
    again = decode_json(out)
    assert canonical_bytes(again) == out
    assert len(step_hash(0, "metadata", 1, value, None)) == 64


@given(plain)
def test_canonical_json_is_sorted_compact_json(value: Any) -> None:
    assert canonical_bytes(value) == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@given(st.integers(min_value=1, max_value=MAX_DEPTH), st.sampled_from(["list", "dict"]), st.sampled_from([1.0, 1, "x", None]))
def test_deep_values_have_a_canonical_form(depth: int, kind: str, leaf: Any) -> None:
    value: Any = leaf
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    out = canonical_bytes(value)
    inner = "1" if leaf in (1, 1.0) else json.dumps(leaf)
    expected = ("[" * depth + inner + "]" * depth) if kind == "list" else ('{"k":' * depth + inner + "}" * depth)
    assert out == expected.encode()
