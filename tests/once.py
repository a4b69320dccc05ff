"""Work that every pytest-xdist worker of a session would otherwise repeat, done once for the whole session.

A module- or session-scoped fixture is made once per worker: under ``make test``'s ``-n 3 --dist worksteal``
a module whose tests land on three workers records its runs three times. ``once(folder, key, make)`` runs
``make`` in the first worker to ask and keeps its result (pickled: paths, finished processes, a test module's
dataclasses) in ``folder``, a folder of the session's own that every worker shares (``session_folder``); any
other worker asking for the same key waits for it under a file lock and reads the same result. A ``make``
that raises keeps nothing: the next asker runs it again (and fails the same way, with its own traceback).

``shared(tmp_path_factory, name, make)`` is the usual form for a module's recording: ``make(folder)`` records
into the shared folder ``name`` and returns what the module's tests read, once for the whole session.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
from collections.abc import Callable
from pathlib import Path

import pytest


def session_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """``name`` in the folder this test session's workers share, and no other session's.

    Under xdist each worker's basetemp is a folder of the session's own (pytest-N/popen-gwK): its parent is
    shared by the session's workers. Without xdist basetemp itself is the session's.
    """
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    folder.mkdir(exist_ok=True)
    return folder


def name_for(key: str) -> str:
    """A file name of ``key``'s own, the same in every worker."""
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def once[T](folder: Path, key: str, make: Callable[[], T]) -> T:
    """``make()``'s result, computed once in ``folder`` for ``key`` by whichever worker asks first."""
    digest = name_for(key)
    done = folder / f"{digest}.pickle"
    with (folder / f"{digest}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if done.exists():
                result: T = pickle.loads(done.read_bytes())
                return result
            result = make()
            partial = done.with_suffix(".partial")
            partial.write_bytes(pickle.dumps(result))
            partial.replace(done)
            return result
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def shared[T](tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], T]) -> T:
    """``make(folder)`` once a session, ``folder`` being the session's shared folder ``name`` (see the module's doc)."""
    folder = session_folder(tmp_path_factory, name)
    return once(folder, "made", lambda: make(folder))


def write_once(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` unless it already holds it, atomically: another worker may be running it."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    return path
