"""tests/once.py: a session's shared work is done by the first asker only, and a failure keeps nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from once import once, shared, write_once

ROOT = Path(__file__).resolve().parent


def test_the_second_asker_reads_the_first_ones_result(tmp_path: Path) -> None:
    calls: list[int] = []

    def make() -> dict[str, int]:
        calls.append(1)
        return {"n": len(calls)}

    assert once(tmp_path, "key", make) == {"n": 1}
    assert once(tmp_path, "key", make) == {"n": 1}
    assert once(tmp_path, "other", make) == {"n": 2}
    assert len(calls) == 2


def test_a_value_comes_back_as_made_paths_and_finished_processes_included(tmp_path: Path) -> None:
    made = subprocess.CompletedProcess(["agent"], 0, "Paris: cloudy\n", "")
    value = {"cassette": tmp_path / "run.json", "rec": made}
    assert once(tmp_path, "key", lambda: value) is value
    again: dict[str, Any] = once(tmp_path, "key", dict)  # read back from the shared folder, not made again
    assert again["cassette"] == tmp_path / "run.json"
    assert (again["rec"].args, again["rec"].returncode, again["rec"].stdout) == (["agent"], 0, "Paris: cloudy\n")


def test_shared_makes_in_the_session_folder_of_its_name(tmp_path_factory: pytest.TempPathFactory) -> None:
    folders: list[Path] = []

    def make(folder: Path) -> Path:
        folders.append(folder)
        (folder / "run.json").write_text("{}")
        return folder / "run.json"

    first = shared(tmp_path_factory, "once-shared-test", make)
    assert shared(tmp_path_factory, "once-shared-test", make) == first
    assert folders == [first.parent] and first.parent.name == "once-shared-test" and first.read_text() == "{}"


def test_a_failed_make_keeps_nothing_and_the_next_asker_runs_it(tmp_path: Path) -> None:
    def fails() -> None:
        raise AssertionError("the recording failed")

    with pytest.raises(AssertionError, match="the recording failed"):
        once(tmp_path, "key", fails)
    assert once(tmp_path, "key", lambda: "made") == "made"


def test_processes_asking_at_once_share_one_make(tmp_path: Path) -> None:
    """Four processes ask together; make (which appends to a file) runs in one of them only."""
    log = tmp_path / "made.log"
    code = (
        f"import sys, time; sys.path.insert(0, {str(ROOT)!r}); from once import once; from pathlib import Path\n"
        f"def make():\n    time.sleep(0.3)\n    open({str(log)!r}, 'a').write('x')\n    return 'done'\n"
        f"print(once(Path({str(tmp_path)!r}), 'key', make))\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(4)]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    assert outs == ["done\n"] * 4
    assert log.read_text() == "x"


def test_write_once_leaves_a_file_that_holds_the_text_alone(tmp_path: Path) -> None:
    path = write_once(tmp_path / "client.py", "print(1)\n")
    before = path.stat().st_mtime_ns
    assert write_once(path, "print(1)\n").stat().st_mtime_ns == before
    assert write_once(path, "print(2)\n").read_text() == "print(2)\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["client.py"]
