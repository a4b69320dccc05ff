"""Converting a cassette file between plain, gzip and zstd (``blackbox compress`` / ``decompress``).

``convert`` reads a cassette in whatever form its name says, checks that it is a
cassette (it must load), and writes it in the form the output's name says. The
JSON text is kept byte for byte, so the copy's hashes and formatting are the
original's; ``compact`` writes it again on one line instead (the same steps and
hashes: the chain is over canonical payloads, not the file's whitespace). The
output is never replaced unless asked (``overwrite``), and the original is
removed only when asked (``replace``), after the copy has been read back and
found to hold the same JSON text.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from blackbox_mitm.cassette import compression
from blackbox_mitm.cassette.journal import journal_path
from blackbox_mitm.cassette.jsonfile import read_file
from blackbox_mitm.cassette.store import dump_trace, parse_trace, write_atomic
from blackbox_mitm.errors import CassetteError

__all__ = ["Converted", "convert", "default_output"]


@dataclass(frozen=True, slots=True)
class Converted:
    """What ``convert`` did: the two files, their sizes on disk, and the run's step count."""

    source: Path
    output: Path
    source_bytes: int
    output_bytes: int
    steps: int
    removed: bool


def default_output(source: Path, kind: str) -> Path:
    """``run.json`` -> ``run.json.zst`` (``kind`` zstd or gzip); ``run.json.gz`` -> ``run.json`` (``kind`` plain)."""
    plain = compression.plain_name(source)
    return plain.with_name(plain.name + compression.SUFFIX_OF[kind])


def convert(
    source: str | os.PathLike[str], output: str | os.PathLike[str], *, compact: bool = False, overwrite: bool = False, replace: bool = False
) -> Converted:
    """Write the cassette ``source`` to ``output`` in the form ``output``'s name asks for (see the module docstring)."""
    src, out = Path(source), Path(output)
    if out.absolute() == src.absolute() or (out.exists() and src.exists() and out.samefile(src)):
        raise CassetteError("the output is the input file itself; name another output file", path=str(out))
    if journal_path(src).exists():
        raise CassetteError(
            f"an interrupted recording's journal ({journal_path(src).name}) is beside it; run `blackbox recover` on it first",
            path=str(src),
        )
    stored = read_file(src)
    plain = compression.decode(src, stored)
    trace = parse_trace(plain, path=str(src))  # a cassette, not any JSON
    text = dump_trace(trace, compact=True) if compact else plain
    data = compression.encode(out, text)
    write_atomic(out, data, overwrite=overwrite)
    removed = False
    if replace:
        if compression.decode(out, read_file(out)) != text:
            raise CassetteError("the written copy does not read back the same; the original is kept", path=str(out))
        src.unlink()
        removed = True
    return Converted(src, out, len(stored), len(data), len(trace.steps), removed)
