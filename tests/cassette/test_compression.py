"""Compressed cassettes (RUN.json.gz, RUN.json.zst): round trips, the plain twin's verdict, cut-off journals, bad input.

Also the step-by-step loader (``cassette.stepwise``) that every load goes through:
it must return exactly what a whole-document parse returns, or step aside.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import orjson
import pytest
import zstandard
from cassette_builders import CASSETTES, weather_trace

from blackbox_mitm.cassette import Journal, Trace, journal_path, load_trace, recover_journal, save_trace
from blackbox_mitm.cassette.compression import CompressedCassetteError, decode, encode, kind_of
from blackbox_mitm.cassette.convert import convert
from blackbox_mitm.cassette.stepwise import load_stepwise
from blackbox_mitm.cassette.store import parse_trace
from blackbox_mitm.codecs.verified import load_verified, verify_file, verify_trace
from blackbox_mitm.errors import CassetteError, CassetteExistsError

SUFFIXES = (".gz", ".zst")


def _decompress(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".gz":
        return gzip.decompress(data)
    return zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True).read()


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_saved_cassette_is_compressed_by_its_name_and_loads_back_identical(tmp_path: Path, suffix: str) -> None:
    trace = weather_trace()
    plain = save_trace(trace, tmp_path / "run.json")
    packed = save_trace(trace, tmp_path / f"run.json{suffix}")
    assert packed.read_bytes()[:2] != b"{\n"  # really compressed
    assert _decompress(packed) == plain.read_bytes()  # the plain twin's bytes, read by the standard tools
    assert load_trace(packed).to_json() == load_trace(plain).to_json()


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_compressed_cassette_verifies_exactly_as_its_plain_twin(tmp_path: Path, suffix: str) -> None:
    trace = weather_trace()
    trace.steps[3].payload["result"]["celsius"] = 30  # a tampered step: the hash no longer matches
    plain = save_trace(trace, tmp_path / "run.json")
    packed = save_trace(trace, tmp_path / f"run.json{suffix}")
    a, b = verify_file(plain), verify_file(packed)
    assert [p.to_json() for p in a.problems] == [p.to_json() for p in b.problems]
    assert [p.code for p in b.problems] == ["hash"]


def test_the_javascript_fixture_verifies_compressed(tmp_path: Path) -> None:
    src = CASSETTES / "js_weather.json"
    for suffix in SUFFIXES:
        out = tmp_path / f"js.json{suffix}"
        convert(src, out)
        assert _decompress(out) == src.read_bytes()
        assert verify_file(out).ok
        assert load_verified(out).to_json() == load_verified(src).to_json()


def test_compact_output_keeps_every_hash(tmp_path: Path) -> None:
    trace = weather_trace()
    out = save_trace(trace, tmp_path / "run.json.zst", compact=True)
    text = _decompress(out)
    assert text.count(b"\n") == 1  # one line
    assert verify_file(out).ok
    assert [s.hash for s in load_trace(out).steps] == [s.hash for s in trace.steps]


@pytest.mark.parametrize("suffix", ["", *SUFFIXES])
def test_a_compressed_journal_is_written_one_member_per_batch_and_finished_compressed(tmp_path: Path, suffix: str) -> None:
    cassette = tmp_path / f"run.json{suffix}"
    source = weather_trace("rec-1")
    trace = Trace.new("rec-1", created_at=source.createdAt)
    journal = Journal(cassette, trace, fsync=False)
    for s in source.steps:
        journal.append([trace.append(s.type, s.payload, timestamp=s.timestamp)])
    if suffix:
        raw = journal_path(cassette).read_bytes()
        magic = b"\x1f\x8b" if suffix == ".gz" else b"\x28\xb5\x2f\xfd"
        assert raw.count(magic) >= len(source.steps) + 1  # the header, then one member per batch
    journal.finish()
    assert kind_of(cassette) == {"": "plain", ".gz": "gzip", ".zst": "zstd"}[suffix]
    assert load_verified(cassette).to_json()["steps"] == source.to_json()["steps"]


def _record(cassette: Path, batches: list[int]) -> Trace:
    source = weather_trace("rec-1")
    trace = Trace.new("rec-1", created_at=source.createdAt)
    journal = Journal(cassette, trace, fsync=False)
    steps = iter(source.steps)
    for size in batches:
        journal.append([trace.append(s.type, s.payload, timestamp=s.timestamp) for s in (next(steps) for _ in range(size))])
    journal.close()  # killed: no finish()
    return trace


@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("cut", [1, 5, 20])
def test_a_compressed_journal_whose_last_member_is_cut_off_loses_only_that_batch(tmp_path: Path, suffix: str, cut: int) -> None:
    cassette = tmp_path / f"run.json{suffix}"
    recorded = _record(cassette, [1, 3, 2])
    jpath = journal_path(cassette)
    raw = jpath.read_bytes()
    jpath.write_bytes(raw[: len(raw) - cut])  # kill -9 in the middle of the last write

    out, count = recover_journal(cassette, quiet=True)
    trace = load_trace(out, recover=False)
    assert count == 5  # batches of 1 and 3, then the marker
    assert [s.hash for s in trace.steps[:4]] == [s.hash for s in recorded.steps[:4]]
    assert "1 incomplete write dropped" in trace.steps[-1].payload["message"]
    assert verify_trace(trace) == []
    assert out.read_bytes()[:1] != b"{"  # the recovered cassette is compressed as its name says


def test_a_loader_meeting_a_compressed_journal_recovers_it(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json.zst"
    _record(cassette, [1, 3])
    trace = load_trace(cassette)
    assert trace.steps[-1].payload["reason"] == "recording_interrupted"
    assert not journal_path(cassette).exists()


def test_a_gz_that_is_not_gzip_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "run.json.gz"
    bad.write_bytes((CASSETTES / "js_weather.json").read_bytes())
    with pytest.raises(CompressedCassetteError, match=r"not gzip data, though its name ends in \.gz"):
        load_trace(bad)
    with pytest.raises(CompressedCassetteError, match="not gzip"):
        verify_file(bad)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_truncated_compressed_cassette_is_named(tmp_path: Path, suffix: str) -> None:
    out = save_trace(weather_trace(), tmp_path / f"run.json{suffix}")
    out.write_bytes(out.read_bytes()[:-10])
    with pytest.raises(CompressedCassetteError, match="cut short"):
        load_trace(out)


def test_a_compressed_file_under_a_plain_name_is_named(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    out.write_bytes(gzip.compress((CASSETTES / "js_weather.json").read_bytes()))
    with pytest.raises(CassetteError, match=r"gzip-compressed but its name does not say so; rename it to end in run\.json\.gz"):
        load_trace(out)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_zip_bomb_stops_at_the_cap(tmp_path: Path, suffix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = tmp_path / f"bomb.json{suffix}"
    bomb.write_bytes(encode(bomb, b"[" + b" " * (64 << 20) + b"]"))
    assert bomb.stat().st_size < 1 << 20
    monkeypatch.setenv("BLACKBOX_MAX_CASSETTE_BYTES", str(8 << 20))
    with pytest.raises(CompressedCassetteError, match=r"decompresses to more than the 8,388,608 bytes.*BLACKBOX_MAX_CASSETTE_BYTES"):
        load_trace(bomb)
    with pytest.raises(CompressedCassetteError, match="compression bomb"):
        decode(bomb, bomb.read_bytes(), limit=1 << 20)


def test_convert_never_overwrites_and_keeps_the_original_unless_asked(tmp_path: Path) -> None:
    src = save_trace(weather_trace(), tmp_path / "run.json")
    out = tmp_path / "run.json.zst"
    convert(src, out)
    with pytest.raises(CassetteExistsError):
        convert(src, out)
    done = convert(src, out, overwrite=True, replace=True)
    assert done.removed and not src.exists() and out.exists()
    with pytest.raises(CassetteError, match="the output is the input file itself"):
        convert(out, out, overwrite=True)


def test_convert_refuses_what_is_not_a_cassette(tmp_path: Path) -> None:
    src = tmp_path / "notes.json"
    src.write_text('{"hello": 1}')
    with pytest.raises(CassetteError, match="version"):
        convert(src, tmp_path / "notes.json.zst")
    assert not (tmp_path / "notes.json.zst").exists()


# -- the step-by-step loader --------------------------------------------------------------


def _twin(text: bytes, tmp_path: Path) -> tuple[object, object]:
    path = tmp_path / "t.json"
    path.write_bytes(text)
    read = load_stepwise(path)
    whole = parse_trace(text)
    return (read[0].to_json() if read else None), whole.to_json()


def test_stepwise_reads_pretty_and_compact_files_exactly_as_a_whole_parse(tmp_path: Path) -> None:
    trace = weather_trace()
    for compact in (False, True):
        text = orjson.dumps(trace.to_json(), option=0 if compact else orjson.OPT_INDENT_2)
        got, want = _twin(text, tmp_path)
        assert got == want


def test_stepwise_is_not_fooled_by_a_payload_that_quotes_the_next_step_id(tmp_path: Path) -> None:
    trace = Trace.new("t", created_at=1)
    trace.append("tool_result", {"toolCallId": "call-0", "toolName": "x", "result": [{"a": 1}, {"id": "t:1"}, {"id": "t:1"}]}, timestamp=2)
    trace.append("metadata", {"event": "run_completed", "status": "success", "result": '}, {"id": "t:2"'}, timestamp=3)
    for option in (0, orjson.OPT_INDENT_2):
        got, want = _twin(orjson.dumps(trace.to_json(), option=option), tmp_path)
        assert got == want


def test_stepwise_steps_aside_for_other_key_orders_and_lets_the_whole_parse_answer(tmp_path: Path) -> None:
    data = weather_trace().to_json()
    reordered = {"steps": data["steps"], **{k: v for k, v in data.items() if k != "steps"}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(reordered, indent=2))
    assert load_stepwise(path) is None
    assert load_trace(path).to_json() == data
    broken = tmp_path / "b.json"
    data["steps"][2]["index"] = 7
    broken.write_text(json.dumps(data, indent=2))
    assert load_stepwise(broken) is None
    with pytest.raises(CassetteError, match=r"step index 7 is out of order"):
        load_trace(broken)


def test_stepwise_counts_quotes_so_a_repeated_key_is_still_found(tmp_path: Path) -> None:
    text = orjson.dumps(weather_trace().to_json(), option=orjson.OPT_INDENT_2)
    text = text.replace(b'"type": "tool_call",', b'"type": "tool_call",\n      "type": "tool_call",', 1)
    path = tmp_path / "dup.json.zst"
    path.write_bytes(encode(path, text))
    assert load_stepwise(path) is not None
    with pytest.raises(CassetteError, match="appears twice in one object"):
        load_verified(path)
