"""The folders ``blackbox mcp`` reads, and the only way a tool's run name becomes a file: a lookup in them.

A run is named as ``list_runs`` shows it — ``LABEL/FILE`` (``runs/weather.json``),
a bare file name, or a run id — and is looked up among the files found in the
named folders; a path is never built from it. A name with ``..``, an absolute
path, a backslash or a control character is refused outright, and a file that is
a symbolic link leading out of its folder is never read. Folders are flat, as
``blackbox forks`` and the goldens folder are: files in subfolders are not runs.

Default folders: the goldens folder (``tests/goldens``, as ``blackbox golden``)
and ``runs/``, in the working directory, and the project config's ``mcp_dirs``
(relative to the config file's folder). What was read of a file (a summary, its
verification) is kept while the file's size and modification time stay the same.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blackbox_mitm.errors import BlackboxError

__all__ = ["CASSETTE_SUFFIXES", "Entry", "Folder", "Folders", "RunNameRefused", "default_folders"]

CASSETTE_SUFFIXES = (".json", ".json.gz", ".json.zst")
_BAD_NAME = re.compile(r"[\x00-\x1f\x7f\\]")


class RunNameRefused(BlackboxError, ValueError):
    """A run name that is not one of the folders' files or runs: a path out of them, or nothing found."""


@dataclass(frozen=True, slots=True)
class Folder:
    """A named folder: ``label`` as shown (``runs``), ``root`` the real directory it is."""

    label: str
    root: Path


@dataclass(frozen=True, slots=True)
class Entry:
    """One file of a folder: how it is shown, its real path, its stat key (size, mtime), and whether it escapes."""

    folder: Folder
    name: str
    path: Path
    key: tuple[int, int]
    escapes: bool

    @property
    def shown(self) -> str:
        return f"{self.folder.label}/{self.name}"


def default_folders(cwd: Path | None = None, config_dirs: Sequence[str] = (), config_root: Path | None = None) -> list[Path]:
    """``tests/goldens`` and ``runs`` in ``cwd``, then the config's ``mcp_dirs`` (relative to ``config_root``)."""
    from blackbox_mitm.golden.suite import DEFAULT_GOLDENS

    here = cwd if cwd is not None else Path.cwd()
    out = [here / DEFAULT_GOLDENS, here / "runs"]
    base = config_root if config_root is not None else here
    out += [base / d for d in config_dirs]
    return out


@dataclass(slots=True)
class Folders:
    """The named folders (missing ones are noted, not fatal) and what has been read of their files."""

    folders: list[Folder]
    missing: list[str] = field(default_factory=list)
    _cache: dict[tuple[str, str], tuple[tuple[int, int], Any]] = field(default_factory=dict)

    @classmethod
    def open(cls, paths: Sequence[Path], *, cwd: Path | None = None) -> Folders:
        here = (cwd if cwd is not None else Path.cwd()).resolve()
        folders: list[Folder] = []
        missing: list[str] = []
        seen: set[Path] = set()
        for p in paths:
            label = _label(p, here)
            if not p.is_dir():
                missing.append(label)
                continue
            root = p.resolve()
            if root not in seen:
                seen.add(root)
                folders.append(Folder(label, root))
        return cls(folders, missing)

    def describe(self) -> str:
        """The folders in words, with the missing ones."""
        shown = ", ".join(f.label for f in self.folders) or "none"
        gone = f" (not found, so not read: {', '.join(self.missing)})" if self.missing else ""
        return f"folders read: {shown}{gone}"

    def entries(self, suffixes: Sequence[str] = CASSETTE_SUFFIXES) -> list[Entry]:
        """Every file of the folders whose name ends in one of ``suffixes``: newest first, then by name (stat only)."""
        found = [e for folder in self.folders for e in _scan(folder, tuple(suffixes))]
        found.sort(key=lambda e: (-e.key[1], e.shown))
        return found

    def cached(self, entry: Entry, what: str, compute: Callable[[Entry], Any]) -> Any:
        """``compute(entry)``, kept while the file's size and mtime stay the same."""
        slot = (str(entry.path), what)
        hit = self._cache.get(slot)
        if hit is not None and hit[0] == entry.key:
            return hit[1]
        value = compute(entry)
        self._cache[slot] = (entry.key, value)
        return value

    def resolve(self, name: str, *, by_id: Callable[[Entry], str | None]) -> Entry:
        """The file a run name names: ``LABEL/FILE``, a bare file name, or a run id (``by_id`` reads a file's).

        Raises ``RunNameRefused`` for a name that could reach out of the folders, one
        that is a link out of its folder, and one that names nothing here.
        """
        _check_name(name)
        entries = self.entries()
        hits = [e for e in entries if name == e.shown] or [e for e in entries if name == e.name]
        if len({e.path for e in hits}) > 1:
            where = ", ".join(sorted({e.folder.label for e in hits}))
            raise RunNameRefused(f"{len(hits)} files are called {_echo(name)} (in {where}): name one as LABEL/FILE, as list_runs shows it")
        if not hits:
            hits = [e for e in entries if not e.escapes and by_id(e) == name]
        if not hits:
            raise RunNameRefused(
                f"no run {_echo(name)} in the folders; list_runs shows what there is",
                hint="name a run as list_runs shows it: LABEL/FILE, a file name, or a run id",
            )
        entry = hits[0]
        if entry.escapes:
            raise RunNameRefused(f"{entry.shown} is a symbolic link to a file outside its folder: refused, only the named folders are read")
        return entry

    def __iter__(self) -> Iterator[Folder]:
        return iter(self.folders)


def _check_name(name: str) -> None:
    if not name or not name.strip():
        raise RunNameRefused("a run name is needed: list_runs shows the runs")
    parts = name.split("/")
    if name.startswith(("/", "~")) or ".." in parts or _BAD_NAME.search(name) or re.match(r"^[A-Za-z]:", name):
        raise RunNameRefused(
            f"refused run name {_echo(name)}: runs are named as list_runs shows them (LABEL/FILE, a file name or a run id); "
            "a path that leads out of the named folders is never read"
        )


def _echo(name: str) -> str:
    """The caller's run name, quoted and bounded, for a refusal."""
    return repr(name if len(name) <= 120 else name[:120] + "…")


def _scan(folder: Folder, suffixes: tuple[str, ...]) -> Iterator[Entry]:
    try:
        with os.scandir(folder.root) as it:
            items = list(it)
    except OSError:
        return
    for item in items:
        if not item.name.endswith(suffixes):
            continue
        try:
            st = os.stat(item.path)  # follows a link: a dangling one is skipped
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        path = Path(item.path)
        escapes = item.is_symlink() and not path.resolve().is_relative_to(folder.root)
        yield Entry(folder, item.name, path, (st.st_size, st.st_mtime_ns), escapes)


def _label(p: Path, cwd: Path) -> str:
    """The folder as the user named it, relative to the working directory when it is inside it."""
    if p.is_absolute():
        rel = os.path.relpath(p, cwd)
        return p.as_posix() if rel.startswith("..") else rel.replace(os.sep, "/")
    return os.path.normpath(p).replace(os.sep, "/")
