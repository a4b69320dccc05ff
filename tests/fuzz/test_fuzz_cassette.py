"""Property-based: cassette loading, verifying, showing and diffing never raise anything but a ``CassetteError``.

Inputs: random bytes, random JSON documents, real cassettes (ours and the
JavaScript writer's) with their bytes mutated, and with one node of their JSON
replaced by a random value. A reader may refuse (``CassetteError``) or answer;
any other exception escaping is a bug.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fuzz_strategies import CASSETTES, json_values, mutated, replace_at, weather_trace
from hypothesis import given
from hypothesis import strategies as st

from blackbox_mitm.cassette import Trace, dump_trace, parse_trace
from blackbox_mitm.cassette.diff import first_divergence
from blackbox_mitm.cassette.jsonfile import decode_json
from blackbox_mitm.cassette.timeline import build_timeline, render_timeline
from blackbox_mitm.codecs.verified import verify_file, verify_trace
from blackbox_mitm.errors import CassetteError

OURS = dump_trace(weather_trace())
JS = (CASSETTES / "js_weather.json").read_bytes()
REAL = {"ours": OURS, "js": JS}
PARENT = parse_trace(OURS)


def _read_every_way(raw: bytes) -> None:
    """What every reader does with a file's bytes: load, verify (with the repeated-key rule), show, diff."""
    try:
        trace = parse_trace(raw)
    except CassetteError:
        return
    verify_trace(trace, source=raw)
    render_timeline(build_timeline(trace))
    first_divergence(PARENT, trace)
    first_divergence(trace, PARENT)


@given(st.binary(max_size=400))
def test_random_bytes(raw: bytes) -> None:
    _read_every_way(raw)


@given(json_values)
def test_random_json_documents(value: Any) -> None:
    _read_every_way(json.dumps(value).encode())


@given(st.sampled_from(sorted(REAL)), st.data())
def test_mutated_real_cassettes(which: str, data: st.DataObject) -> None:
    _read_every_way(data.draw(mutated(REAL[which])))


@given(st.sampled_from(sorted(REAL)), st.lists(st.integers(min_value=0, max_value=50), max_size=6), json_values)
def test_real_cassettes_with_one_node_replaced(which: str, path: list[int], new: Any) -> None:
    document = replace_at(decode_json(REAL[which]), path, new)
    _read_every_way(json.dumps(document).encode())


@given(st.lists(st.tuples(st.sampled_from(["model_input", "tool_result", "metadata"]), json_values), min_size=1, max_size=5))
def test_any_recorded_payloads_round_trip_and_verify(steps: list[tuple[str, Any]]) -> None:
    # Whatever JSON a run records, the file it writes loads back to the same hashes, and the
    # chain verifies (shape and neutrality rules aside: random payloads break those at will).
    trace = Trace.new("fuzz-run", created_at=1)
    for n, (kind, payload) in enumerate(steps):
        trace.append(kind, payload, timestamp=2 + n)
    raw = dump_trace(trace)
    loaded = parse_trace(raw)
    assert [s.hash for s in loaded.steps] == [s.hash for s in trace.steps]
    chain = {"prev_hash", "hash", "index", "id", "duplicate_key", "empty"}
    assert [p for p in verify_trace(loaded, source=raw) if p.code in chain] == []


@given(st.data())
def test_verify_file_of_mutated_cassettes(tmp_path_factory: Any, data: st.DataObject) -> None:
    path: Path = tmp_path_factory.mktemp("fuzz") / "run.json"
    path.write_bytes(data.draw(mutated(JS)))
    try:
        verify_file(path)
    except CassetteError:
        pass
