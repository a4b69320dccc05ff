"""Every reader refuses hostile input at once with a named error: deep nesting, FIFOs, devices, huge numbers, ...

The readers are the commands that open a cassette: verify, show, diff, replay,
fork (and recover, for journals, at the end). Each is run through click's
CliRunner in a thread with a deadline, so a reader that hangs fails the test
instead of hanging it.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cassette_builders import save, weather_trace
from click.testing import CliRunner, Result

from blackbox_mitm.cassette import journal_path, load_trace, recover_journal
from blackbox_mitm.cassette.jsonfile import MAX_DEPTH
from blackbox_mitm.cassette.verify import UnverifiedCassetteError
from blackbox_mitm.cli import main
from blackbox_mitm.codecs.verified import load_verified, verify_file
from blackbox_mitm.errors import CassetteError

DEEP = 10_000


def run_bounded(*args: str | Path, seconds: float = 30) -> Result:
    """Run `blackbox ARGS` in-process; fail (instead of hanging) when it does not return in time."""
    box: dict[str, Any] = {}

    def target() -> None:
        box["result"] = CliRunner().invoke(main, [str(a) for a in args])

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"blackbox {' '.join(map(str, args))} hung"
    result: Result = box["result"]
    return result


def _text(trace_id: str, created: str, payload: str) -> str:
    step = f'{{"id":"{trace_id}:0","index":0,"type":"tool_result","timestamp":1,"payload":{payload},"prevHash":null,"hash":"00"}}'
    return f'{{"version":2,"id":"{trace_id}","createdAt":{created},"steps":[{step}]}}'


def _deep(path: Path) -> Path:
    path.write_text(_text("deep", "1", "[" * DEEP + "]" * DEEP))
    return path


def _deep_surrogate(path: Path) -> Path:
    # A lone surrogate sends the parse to the standard library, which recurses: still a named error.
    path.write_text(_text("\\ud83d", "1", "[" * DEEP + "]" * DEEP))
    return path


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _dev_zero(path: Path) -> Path:
    path.symlink_to("/dev/zero")
    return path


def _directory(path: Path) -> Path:
    path.mkdir()
    return path


def _infinite_created(path: Path) -> Path:
    path.write_text(_text("inf", "1e400", "{}"))
    return path


def _infinite_in_payload(path: Path) -> Path:
    path.write_text(_text("\\ud83d", "1", '{"result": -1e999}'))
    return path


BAD_INPUTS: dict[str, tuple[Callable[[Path], Path], str]] = {
    "10k deep": (_deep, f"nested more than {MAX_DEPTH:,} levels deep"),
    "10k deep, lone surrogate": (_deep_surrogate, f"nested more than {MAX_DEPTH:,} levels deep"),
    "fifo": (_fifo, "is a FIFO (named pipe), not a regular file"),
    "/dev/zero": (_dev_zero, "is a character device, not a regular file"),
    "directory": (_directory, "directory"),
    "createdAt 1e400": (_infinite_created, "too large for a double"),
    "-1e999 in a payload": (_infinite_in_payload, "too large for a double"),
}

READERS: dict[str, Callable[[Path, Path], list[str | Path]]] = {
    "verify": lambda bad, good: ["verify", bad],
    "show": lambda bad, good: ["show", bad],
    "diff a": lambda bad, good: ["diff", bad, good],
    "diff b": lambda bad, good: ["diff", good, bad],
    "replay": lambda bad, good: ["replay", bad, "--", "true"],
    "fork": lambda bad, good: ["fork", bad, "--at", "3", "--tool-result", "{}", "-o", bad.parent / "child.json", "--", "true"],
}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("bad_input", list(BAD_INPUTS))
def test_every_reader_refuses_hostile_input_with_a_named_error(tmp_path: Path, reader: str, bad_input: str) -> None:
    make, expected = BAD_INPUTS[bad_input]
    bad = make(tmp_path / "bad.json")
    good = save(weather_trace(), tmp_path / "good.json")
    result = run_bounded(*READERS[reader](bad, good))
    assert result.exit_code == 2, result.output
    assert expected in result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, (RecursionError, MemoryError))
    assert not (tmp_path / "child.json").exists()


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = save(weather_trace(), tmp_path / "run.json")
    monkeypatch.setenv("BLACKBOX_MAX_CASSETTE_BYTES", "100")
    with pytest.raises(CassetteError, match=r"more than the 100 a reader accepts.*BLACKBOX_MAX_CASSETTE_BYTES"):
        load_trace(path, recover=False)
    monkeypatch.delenv("BLACKBOX_MAX_CASSETTE_BYTES")
    assert len(load_trace(path, recover=False).steps) == 7


def test_a_timestamp_outside_a_dates_range_is_refused(tmp_path: Path) -> None:
    path = save(weather_trace(), tmp_path / "run.json")
    data = json.loads(path.read_text())
    data["steps"][2]["timestamp"] = 1e300
    path.write_text(json.dumps(data))
    with pytest.raises(CassetteError, match=r"steps\[2\]\.timestamp: `timestamp` is 1e\+300, not a time"):
        load_trace(path, recover=False)
    result = verify_file(path)
    assert [p.code for p in result.problems] == ["format"]


# -- a run with no steps ------------------------------------------------------------------


def test_a_cassette_without_steps_fails_verify_and_replay_says_it_holds_no_calls(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"version": 2, "id": "empty", "createdAt": 1, "steps": []}))
    result = verify_file(path)
    assert [p.code for p in result.problems] == ["empty"]
    assert "a run has steps" in result.problems[0].reason
    out = run_bounded("verify", path)
    assert out.exit_code == 1 and "holds no steps" in out.output
    with pytest.raises(UnverifiedCassetteError, match="holds no calls to replay"):
        load_verified(path, recover=False)
    replay = run_bounded("replay", path, "--", "true")
    assert replay.exit_code == 2 and "holds no calls to replay" in replay.output


# -- repeated keys --------------------------------------------------------------------------


def _duplicate(path: Path, where: str, *, surrogate: bool = False) -> Path:
    """The weather run with one key written twice (the last value is the one the hash covers)."""
    trace = weather_trace("\ud83d" if surrogate else "weather-1")
    save(trace, path)
    text = path.read_text()
    if where == "payload":
        old = '"forecast": "rain"'
        text = text.replace(old, '"forecast": "sunny and 40 °C", ' + old, 1)
    elif where == "step":
        old = '"type": "tool_result"'
        text = text.replace(old, '"type": "model_output", ' + old, 1)
    else:
        text = text.replace('"createdAt"', '"createdAt": 5, "createdAt"', 1)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("where", "path_named"),
    [("payload", "$.steps[3].payload.result"), ("step", "$.steps[3]"), ("trace", "$")],
)
@pytest.mark.parametrize("surrogate", [False, True], ids=["orjson", "lone surrogate"])
def test_a_repeated_key_is_refused_naming_the_key_and_its_path(tmp_path: Path, where: str, path_named: str, surrogate: bool) -> None:
    path = _duplicate(tmp_path / "dup.json", where, surrogate=surrogate)
    result = verify_file(path)
    assert [p.code for p in result.problems] == ["duplicate_key"], result.problems
    key = {"payload": "forecast", "step": "type", "trace": "createdAt"}[where]
    assert f'the key "{key}" appears twice' in result.problems[0].reason
    assert result.problems[0].where == path_named
    with pytest.raises(UnverifiedCassetteError, match="appears twice"):
        load_verified(path, recover=False)


def test_a_file_that_only_spells_strings_differently_is_not_a_repeat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from blackbox_mitm.cassette import verify as verify_module
    from blackbox_mitm.cassette.jsonfile import find_duplicate_key

    searched: list[bytes] = []
    real = find_duplicate_key  # what verify.py imported

    def searching(raw: bytes) -> Any:
        searched.append(raw)
        return real(raw)

    monkeypatch.setattr(verify_module, "find_duplicate_key", searching)
    path = save(weather_trace(result={"said": 'it is "wet"'}), tmp_path / "run.json")
    text = path.read_text()
    assert text.count('\\"wet\\"') == 2  # in the tool result and in the next model_input
    assert verify_file(path).ok and not searched  # the quote count rules a repeat out: no slow search
    # \u0022 is a quote written another way: the same strings, the same hashes, no repeated key.
    path.write_text(text.replace('\\"wet\\"', "\\u0022wet\\u0022"))
    assert "\\u0022wet" in path.read_text()
    assert verify_file(path).ok and not searched
    # An unknown extra field is ignored: more strings in the file than in the cassette, still no repeat.
    path.write_text(path.read_text().replace('"version": 2,', '"version": 2, "note": "written by hand",', 1))
    assert verify_file(path).ok and len(searched) == 1


# -- journals ---------------------------------------------------------------------------------


def _journal(cassette: Path, trace_id: str = "rec-1") -> list[bytes]:
    from blackbox_mitm.cassette import Journal, Trace

    source = weather_trace(trace_id)
    trace = Trace.new(trace_id, created_at=source.createdAt)
    journal = Journal(cassette, trace, fsync=False)
    for s in source.steps[:4]:
        journal.append([trace.append(s.type, s.payload, timestamp=s.timestamp)])
    journal.close()
    return journal_path(cassette).read_bytes().split(b"\n")


def test_recover_refuses_another_runs_steps_and_keeps_the_journal(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    mine = _journal(cassette, "rec-1")
    theirs = _journal(tmp_path / "other.json", "other-run")
    # The header is this run's, the steps are the other run's (same content, their ids).
    journal_path(cassette).write_bytes(b"\n".join([mine[0], *theirs[1:]]))
    before = journal_path(cassette).read_bytes()
    with pytest.raises(CassetteError, match=r"carries the id 'other-run:0', not this run's 'rec-1:0'.*journal is kept"):
        recover_journal(cassette, quiet=True)
    assert journal_path(cassette).read_bytes() == before and not cassette.exists()
    result = run_bounded("recover", cassette)
    assert result.exit_code == 2 and "another run's steps" in result.output


def test_recover_refuses_a_journal_changed_in_the_middle(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    lines = _journal(cassette)
    lines[2] = lines[2].replace(b'"index":1', b'"index":7')
    journal_path(cassette).write_bytes(b"\n".join(lines))
    with pytest.raises(CassetteError, match="line 3 of the journal is not a batch of this run's steps"):
        recover_journal(cassette, quiet=True)
    assert journal_path(cassette).exists() and not cassette.exists()


@pytest.mark.parametrize("bad", ["10k deep line", "fifo"])
def test_recover_refuses_a_hostile_journal_by_name(tmp_path: Path, bad: str) -> None:
    cassette = tmp_path / "run.json"
    if bad == "fifo":
        os.mkfifo(journal_path(cassette))
        expected = "not a regular file"
    else:
        lines = _journal(cassette)
        deep = b"[" * DEEP + b"]" * DEEP
        journal_path(cassette).write_bytes(b"\n".join([*lines[:2], deep, *lines[2:]]))
        expected = f"nested more than {MAX_DEPTH:,} levels deep"
    result = run_bounded("recover", cassette)
    assert result.exit_code == 2 and expected in result.output, result.output
    assert journal_path(cassette).exists() and not cassette.exists()


@pytest.mark.parametrize("depth", [1, 253, 254, 255, 256, 1023, 1024, 1025, 3000])
@pytest.mark.parametrize("limit", [254, 1022, 1024])
def test_the_depth_check_counts_levels_exactly(depth: int, limit: int) -> None:
    from blackbox_mitm.cassette.jsonfile import _deeper_than

    value: Any = "leaf"
    for n in range(depth):
        value = [value] if n % 2 else {"k": value}
    assert _deeper_than(value, limit) is (depth > limit)
