"""What the fuzz tests share: the hypothesis profiles, JSON values, mutations of real bytes, the cassette builders.

Profiles: a bounded budget in the normal run, a long one under `make fuzz`.
``BLACKBOX_FUZZ=long`` (what ``make fuzz`` sets) runs 5,000 examples a test with
fresh random draws; the default, ``ci``, runs 100 examples a test, derandomized
(the same examples every run, so a failure in CI reproduces on any machine). No
deadline in either: the machine is shared, and timing is not what is tested.
(A module, not a conftest.py: a second conftest module would shadow the
``from conftest import ...`` of the other test folders.)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile("ci", max_examples=100, deadline=None, derandomize=True, database=None, suppress_health_check=_QUIET)
settings.register_profile("long", max_examples=5_000, deadline=None, suppress_health_check=_QUIET)
settings.load_profile(os.environ.get("BLACKBOX_FUZZ", "ci"))

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cassette"))
from cassette_builders import CASSETTES, weather_trace  # noqa: E402

__all__ = ["CASSETTES", "json_values", "mutated", "replace_at", "weather_trace"]

# Strings as JSON carries them, lone surrogates included (a JavaScript writer cutting an emoji in half).
texts = st.text(max_size=20) | st.builds(lambda a, b: a + "\ud83d" + b, st.text(max_size=5), st.text(max_size=5))
keys = st.text(max_size=8) | st.sampled_from(["0", "10", "id", "type", "payload", "usage", "toolCallId", "\uffff", "😀"])
numbers = (
    st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.0, -0.0, 1e21, 1e-7, 2**53 + 1, 1.5e300])
)
scalars = st.none() | st.booleans() | numbers | texts
json_values: st.SearchStrategy[Any] = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4), max_leaves=25
)

_SPLICES = [
    b"",
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b"\\",
    b",",
    b":",
    b"null",
    b"1e400",
    b"-0",
    b"\\ud83d",
    b"\xff",
    b"\x00",
    b"\n",
    b'"usage":1,',
    b"[" * 2000,
    b"data: ",
    b"event: error\n",
    b"\n\n",
    b'data: {"choices":[{"delta":{}}]}\n\n',
]


@st.composite
def mutated(draw: st.DrawFn, original: bytes, *, most: int = 4) -> bytes:
    """``original`` with a few edits: bytes replaced, inserted, deleted, a slice repeated, or cut short."""
    data = bytearray(original)
    for _ in range(draw(st.integers(min_value=1, max_value=most))):
        at = draw(st.integers(min_value=0, max_value=len(data)))
        kind = draw(st.sampled_from(["flip", "insert", "delete", "repeat", "truncate"]))
        if kind == "flip" and at < len(data):
            data[at] = draw(st.integers(min_value=0, max_value=255))
        elif kind == "insert":
            data[at:at] = draw(st.sampled_from(_SPLICES) | st.binary(max_size=8))
        elif kind == "delete":
            del data[at : at + draw(st.integers(min_value=1, max_value=64))]
        elif kind == "repeat":
            end = at + draw(st.integers(min_value=1, max_value=200))
            data[at:at] = data[at:end]
        elif kind == "truncate":
            del data[at:]
    return bytes(data)


def replace_at(value: Any, path: list[int], new: Any) -> Any:
    """``value`` with the node reached by ``path`` (child numbers, in order) replaced by ``new``."""
    if not path or not isinstance(value, (dict, list)) or not value:
        return new
    n = path[0] % len(value)
    if isinstance(value, list):
        copy = list(value)
        copy[n] = replace_at(copy[n], path[1:], new)
        return copy
    key = list(value)[n]
    return {**value, key: replace_at(value[key], path[1:], new)}
