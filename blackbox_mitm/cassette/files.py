"""The files of a recording, and who holds them: a cassette's journal path, file identities, a live owner.

Shared by the journal (which writes and holds them) and its recovery (which
reads them), so that neither imports the other's insides. Plain Python.
"""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

from blackbox_mitm.cassette import compression
from blackbox_mitm.errors import CassetteError

__all__ = ["HEADER_LIMIT", "INTERRUPTED", "file_identity", "journal_path", "live_owner", "owner_text", "regular_file"]

INTERRUPTED = "recording_interrupted"  # the run_failed reason of a recovered recording
HEADER_LIMIT = 1 << 20  # how much of a journal's first line is read to name its owner


def journal_path(cassette: str | os.PathLike[str]) -> Path:
    p = Path(cassette)
    return p.with_name(p.name + ".journal")


def file_identity(path: Path) -> list[int] | None:
    """[device, inode, mtime ns, size] of the file at ``path`` (not following a final symlink), or None."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return [st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size]


def live_owner(jpath: Path) -> str | None:
    """When a live recording holds ``jpath``'s lock: who it is ("run X, process P"); None when no one does.

    Raises ``CassetteError`` for a journal path that is not a regular file.
    """
    try:
        fd = os.open(jpath, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        regular_file(fd, jpath)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return owner_text(os.pread(fd, HEADER_LIMIT, 0))
        return None
    finally:
        os.close(fd)


def regular_file(fd: int, path: Path) -> None:
    """Raise ``CassetteError`` when the open journal ``fd`` is not a regular file."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        raise CassetteError("this journal is not a regular file; move it aside", path=str(path))


def owner_text(head: bytes) -> str:
    """Who a journal's first line says is recording: ``a recording (run X, process P)``."""
    from blackbox_mitm.cassette.jsonfile import decode_json

    try:
        header = decode_json(compression.first_line(head))  # a compressed journal: its first member
        owner = header.get("owner") or {}
        run = header.get("trace", {}).get("id")
    except (ValueError, AttributeError):
        return "a recording"
    parts = [f"run {run}" if isinstance(run, str) else None, f"process {owner['pid']}" if isinstance(owner.get("pid"), int) else None]
    named = ", ".join(p for p in parts if p)
    return f"a recording ({named})" if named else "a recording"
