"""Loading a cassette: recovering its journal first when a recording broke off, then reading it step by step.

Above ``store`` (which parses and saves) and ``recovery`` (which saves through
``store``), so that neither imports the other.
"""

from __future__ import annotations

import os
from pathlib import Path

from blackbox_mitm.cassette import compression
from blackbox_mitm.cassette.files import journal_path
from blackbox_mitm.cassette.jsonfile import read_file
from blackbox_mitm.cassette.recovery import recover_journal
from blackbox_mitm.cassette.stepwise import load_stepwise
from blackbox_mitm.cassette.store import parse_trace
from blackbox_mitm.cassette.trace import Trace

__all__ = ["load_trace", "load_trace_bytes"]


def load_trace(path: str | os.PathLike[str], *, recover: bool = True) -> Trace:
    """Load and structurally validate a cassette (hashes are ``verify``'s job)."""
    return load_trace_bytes(path, recover=recover)[0]


def load_trace_bytes(path: str | os.PathLike[str], *, recover: bool = True) -> tuple[Trace, bytes]:
    """``load_trace``, and the file's bytes (``verify`` counts their quotes to rule out repeated keys)."""
    p = Path(path)
    if recover and journal_path(p).exists():
        recover_journal(p)
    read = load_stepwise(p)  # step by step: the trace and a stand-in for the bytes, in bounded memory
    if read is not None:
        return read
    raw = compression.decode(p, read_file(p))  # RUN.json.gz / RUN.json.zst: the plain bytes, size-capped
    return parse_trace(raw, path=str(p)), raw
