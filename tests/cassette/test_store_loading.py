"""Loading refuses what it cannot trust, naming the file, the JSON path and what to do; saving is atomic."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cassette_builders import CASSETTES, save, weather_trace, write_json

from blackbox_mitm.cassette import dump_trace, load_trace, parse_trace, save_trace
from blackbox_mitm.errors import CassetteError, CassetteExistsError


def _valid() -> dict[str, Any]:
    return dict(weather_trace("run-1").to_json())  # a plain dict each test edits


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _delete(path: list[Any]) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return change


# (name, change to a valid cassette's JSON, JSON path in the message, words in the message)
REFUSALS: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    ("missing version", _delete(["version"]), "$.version", "`version` field is missing"),
    ("v1", _set(["version"], 1), "$.version", "re-record the run"),
    ("version 3", _set(["version"], 3), "$.version", "unsupported trace format version 3"),
    ("version as a string", _set(["version"], "2"), "$.version", "unsupported trace format version '2'"),
    ("version true", _set(["version"], True), "$.version", "unsupported trace format version True"),
    ("id is a number", _set(["id"], 7), "$.id", "`id` must be a string, found a number"),
    ("createdAt is a string", _set(["createdAt"], "yesterday"), "$.createdAt", "`createdAt` must be a number"),
    ("parentId is a number", _set(["parentId"], 3), "$.parentId", "`parentId` must be a string"),
    ("steps is an object", _set(["steps"], {}), "$.steps", "`steps` must be an array"),
    ("a step is a string", _set(["steps", 1], "step"), "$.steps[1]", "a step must be an object"),
    ("index is a string", _set(["steps", 2, "index"], "2"), "$.steps[2].index", "`index` must be an integer"),
    ("index out of order", _set(["steps", 2, "index"], 3), "$.steps[2].index", "out of order (expected 2)"),
    ("unknown step type", _set(["steps", 2, "type"], "thought"), "$.steps[2].type", "unknown step type 'thought'"),
    ("timestamp is a string", _set(["steps", 1, "timestamp"], "noon"), "$.steps[1].timestamp", "`timestamp` must be a number"),
    ("no payload", _delete(["steps", 1, "payload"]), "$.steps[1].payload", "has no `payload`"),
    ("prevHash is a number", _set(["steps", 1, "prevHash"], 5), "$.steps[1].prevHash", "`prevHash` must be a string or null"),
    ("no hash", _delete(["steps", 4, "hash"]), "$.steps[4].hash", "`hash` is missing"),
    ("step id is null", _set(["steps", 0, "id"], None), "$.steps[0].id", "`id` must be a string, found null"),
]


@pytest.mark.parametrize(("name", "change", "where", "words"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_load_refuses_with_file_path_and_reason(
    tmp_path: Path, name: str, change: Callable[[dict[str, Any]], None], where: str, words: str
) -> None:
    data = _valid()
    change(data)
    path = write_json(tmp_path / "bad-cassette.json", data)
    with pytest.raises(CassetteError) as info:
        load_trace(path)
    message = str(info.value)
    assert str(path) in message
    assert f"at {where}:" in message
    assert words in message
    assert info.value.where == where


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"", "the file is empty"),
        (b"  \n\t", "the file is empty"),
        (b"not json at all", "is not valid JSON"),
        (b"[1, 2", "is truncated"),
        (b'"just a string"', "expected a JSON object, found a string"),
        (b'{"version": 2, "id": NaN}', "is not valid JSON"),
    ],
)
def test_load_refuses_files_that_are_not_cassettes(tmp_path: Path, content: bytes, words: str) -> None:
    path = tmp_path / "odd.json"
    path.write_bytes(content)
    with pytest.raises(CassetteError, match=words) as info:
        load_trace(path)
    assert str(path) in str(info.value)


def test_a_truncated_cassette_says_so_and_suggests_recover(tmp_path: Path) -> None:
    raw = dump_trace(weather_trace())
    path = tmp_path / "cut.json"
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(CassetteError) as info:
        load_trace(path)
    assert "is truncated" in str(info.value) and "blackbox recover" in str(info.value)
    assert str(path) in str(info.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="no such file") as info:
        load_trace(tmp_path / "nowhere.json")
    assert "nowhere.json" in str(info.value)


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    trace = weather_trace()
    trace.parentId, trace.forkedFromStepId = "parent-run", "parent-run:3"
    loaded = load_trace(save(trace, tmp_path / "run.json"))
    assert loaded == trace
    keys = list(json.loads((tmp_path / "run.json").read_text())["steps"][0])
    assert keys == ["id", "index", "type", "timestamp", "payload", "prevHash", "hash"]


def test_a_lone_surrogate_survives_save_and_load(tmp_path: Path) -> None:
    # JSON.stringify writes one ("\ud83d") for a JavaScript string cut inside an emoji.
    trace = weather_trace(result={"text": "cut \ud83d", "emoji": "😀"})
    loaded = load_trace(save(trace, tmp_path / "run.json"))
    assert loaded.steps[3].payload["result"]["text"] == "cut \ud83d"
    assert [s.hash for s in loaded.steps] == [s.expected_hash() for s in loaded.steps] == [s.hash for s in trace.steps]


@pytest.mark.parametrize("name", ["js_weather.json", "js_weather_sunny.json"])
def test_cassettes_written_in_javascript_load(name: str) -> None:
    trace = load_trace(CASSETTES / name, recover=False)
    assert len(trace.steps) == 7
    assert all(s.hash == s.expected_hash() for s in trace.steps)
    assert trace.steps[3].payload["result"] != {}


def test_save_refuses_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_bytes(b"precious")
    with pytest.raises(CassetteExistsError, match="already exists") as info:
        save_trace(weather_trace(), path)
    assert str(path) in str(info.value)
    assert path.read_bytes() == b"precious"
    save_trace(weather_trace(), path, overwrite=True)
    assert load_trace(path).id == "weather-1"


def test_save_writes_a_temporary_file_then_renames_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    moves: list[tuple[str, str]] = []
    real_link, real_replace = os.link, os.replace

    def link(src: Any, dst: Any) -> None:
        assert Path(dst).exists() is False and Path(src).read_bytes() == dump_trace(trace)
        moves.append(("link", Path(src).name))
        real_link(src, dst)

    def replace(src: Any, dst: Any) -> None:
        moves.append(("replace", Path(src).name))
        real_replace(src, dst)

    monkeypatch.setattr(os, "link", link)
    monkeypatch.setattr(os, "replace", replace)
    trace = weather_trace()
    save_trace(trace, tmp_path / "new.json")
    save_trace(trace, tmp_path / "new.json", overwrite=True)
    assert [m[0] for m in moves] == ["link", "replace"]
    assert all(name.startswith(".new.json.") and name.endswith(".tmp") for _, name in moves)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.json"]  # no temporary file left behind


def test_a_failed_write_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full_disk(fd: int, data: Any) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full_disk)  # the os module store.py writes with
    with pytest.raises(OSError, match="No space left"):
        save_trace(weather_trace(), tmp_path / "run.json")
    assert list(tmp_path.iterdir()) == []


def test_parse_trace_accepts_str_and_bytes() -> None:
    raw = dump_trace(weather_trace())
    assert parse_trace(raw) == parse_trace(raw.decode("utf-8"))
