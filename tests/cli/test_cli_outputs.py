"""Outputs that cannot be written are refused before the agent starts: exit 2, a named reason, nothing run.

``-o`` of record and fork, ``replay --report``, ``proxy --cassette``, ``recover``'s
cassette and ``test --junit``. Permission cases run the real command as an
unprivileged user (``unshare -U`` when the tests run as root, who may write anywhere).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "session"))
from fork_parent import weather_cassette

from blackbox_mitm.cli import main
from blackbox_mitm.cli.paths import check_output_path
from blackbox_mitm.errors import OutputPathError

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def agent(marker: Path) -> list[str]:
    """A wrapped command that leaves a file behind if it ever runs."""
    return ["--", sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]


def commands(out: str, tmp_path: Path) -> dict[str, list[str]]:
    """Each command with ``out`` as its output file."""
    parent = weather_cassette(tmp_path / "parent.json")
    return {
        "record -o": ["record", "-o", out],
        "fork -o": ["fork", str(parent), "--at", "3", "--tool-result", "{}", "-o", out],
        "replay --report": ["replay", str(parent), "--report", out],
        "test --junit": ["test", "--goldens", str(tmp_path), "--junit", out],
        "proxy --cassette": ["proxy", "--mode", "record", "--cassette", out, "--listen-port", "1"],
        "recover": ["recover", out],
    }


WRAPS = {"record -o", "fork -o", "replay --report", "test --junit"}


@pytest.fixture
def dangling(tmp_path: Path) -> Path:
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "missing" / "target.json")
    return link


@pytest.mark.parametrize("which", ["record -o", "fork -o", "replay --report", "test --junit", "proxy --cassette", "recover"])
@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("empty", "an empty file name"),
        ("directory", "a directory, not a file"),
        ("dangling", "a symbolic link to"),
        ("fifo", "not a regular file"),
        ("file-as-folder", "is not a folder"),
    ],
)
def test_an_unwritable_output_is_refused_before_anything_runs(tmp_path: Path, which: str, case: str, says: str) -> None:
    marker = tmp_path / "agent-ran"
    out = {
        "empty": "",
        "directory": str(tmp_path),
        "dangling": str(tmp_path / "link.json"),
        "fifo": str(tmp_path / "pipe"),
        "file-as-folder": str(tmp_path / "plain.txt" / "run.json"),
    }[case]
    (tmp_path / "link.json").symlink_to(tmp_path / "missing" / "target.json")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "plain.txt").write_text("x")
    args = commands(out, tmp_path)[which]
    result = cli(*args, *(agent(marker) if which in WRAPS else []))
    assert result.exit_code == 2, result.output
    if which == "proxy --cassette" and case == "directory":
        says = "is a directory"  # click's own check of the input/output --cassette
    assert says in result.output
    assert not marker.exists()
    assert not (tmp_path / "missing").exists() and not list(tmp_path.glob("*.journal"))


def test_a_dangling_link_names_where_it_points(dangling: Path) -> None:
    with pytest.raises(OutputPathError) as caught:
        check_output_path(dangling)
    assert str(caught.value) == f"{dangling}: a symbolic link to {dangling.parent / 'missing' / 'target.json'}, which does not exist"
    assert caught.value.hint == "remove the link, or name the file it should point to"


def test_missing_folders_are_fine_when_the_nearest_existing_one_is_writable(tmp_path: Path) -> None:
    assert check_output_path(tmp_path / "a" / "b" / "run.json") == tmp_path / "a" / "b" / "run.json"
    assert not (tmp_path / "a").exists()  # checking creates nothing
    existing = tmp_path / "run.json"
    existing.write_text("{}")
    assert check_output_path(existing) == existing  # replacing it is --overwrite's business, not this check's


# -- permissions: the real command as a user who may not write there ---------------------------------


def _unprivileged(args: list[str]) -> subprocess.CompletedProcess[str]:
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("unshare") is None or subprocess.run(["unshare", "-U", "true"], capture_output=True).returncode != 0:
            pytest.skip("running as root without user namespaces: no way to be denied a write")
        prefix = ["unshare", "-U"]  # root's files, but no capability to override their modes
    return subprocess.run([*prefix, sys.executable, "-m", "blackbox_mitm", *args], capture_output=True, text=True, timeout=60, cwd=ROOT)


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[dict[str, Path]]:
    readonly = tmp_path / "readonly"
    readonly.mkdir()
    closed = tmp_path / "closed"
    (closed / "inner").mkdir(parents=True)
    readonly.chmod(0o555)
    closed.chmod(0o000)
    try:
        yield {"readonly": readonly / "run.json", "closed": closed / "inner" / "run.json"}
    finally:
        readonly.chmod(0o755)
        closed.chmod(0o755)


@pytest.mark.parametrize("which", ["record -o", "fork -o", "replay --report", "test --junit", "recover"])
@pytest.mark.parametrize(("case", "says"), [("readonly", "is not writable"), ("closed", "permission denied")])
def test_a_folder_the_user_may_not_write_is_refused_before_anything_runs(
    tmp_path: Path, locked: dict[str, Path], which: str, case: str, says: str
) -> None:
    marker = tmp_path / "agent-ran"
    args = commands(str(locked[case]), tmp_path)[which]
    proc = _unprivileged([*args, *(agent(marker) if which in WRAPS else [])])
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not marker.exists()
