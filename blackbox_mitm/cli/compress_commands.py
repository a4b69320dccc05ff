"""``blackbox compress`` and ``decompress``: a cassette as ``RUN.json.zst`` / ``RUN.json.gz``, or back to ``RUN.json``.

Every command reads and writes compressed cassettes by their names already; these
two convert existing files (``cassette.convert``). Exit 0 when written, 2 when the
input cannot be read, the output exists (without ``--overwrite``), or the names
do not fit.
"""

from __future__ import annotations

from pathlib import Path

import click

from blackbox_mitm.cassette import compression
from blackbox_mitm.cassette.convert import Converted, convert, default_output
from blackbox_mitm.cli.base import UsageProblem, command
from blackbox_mitm.cli.options import compact_option, overwrite_option
from blackbox_mitm.cli.paths import OutputFile, check_output_path

__all__ = ["compress", "decompress"]

_FILE = click.Path(dir_okay=False, path_type=Path)
_replace_option = click.option("--replace", is_flag=True, help="remove the original once the new file is written and reads back the same")
_output_option = click.option("-o", "--output", type=OutputFile(), default=None, help="the file to write (default: beside FILE)")


@command()
@click.argument("file", type=_FILE)
@_output_option
@click.option("--gzip", "use_gzip", is_flag=True, help="gzip (RUN.json.gz) instead of zstd (RUN.json.zst), when no -o names the file")
@compact_option
@overwrite_option("replace an existing output file")
@_replace_option
def compress(file: Path, output: Path | None, use_gzip: bool, compact: bool, overwrite: bool, replace: bool) -> None:
    """Write a cassette compressed: FILE.zst (zstd, the default) or FILE.gz (--gzip), or -o OUT.

    The JSON text is kept byte for byte (or written on one line with --compact), so
    the compressed cassette verifies, shows, diffs and replays exactly as FILE does.

    \b
    blackbox compress runs/weather.json            # runs/weather.json.zst
    """
    out = output or default_output(file, compression.GZIP if use_gzip else compression.ZSTD)
    if compression.kind_of(out) == compression.PLAIN:
        raise UsageProblem(f"{out}: the output's name must end in .zst (zstd) or .gz (gzip); Blackbox picks the format by the name")
    _report("compressed", convert(file, check_output_path(out), compact=compact, overwrite=overwrite, replace=replace))


@command()
@click.argument("file", type=_FILE)
@_output_option
@overwrite_option("replace an existing output file")
@_replace_option
def decompress(file: Path, output: Path | None, overwrite: bool, replace: bool) -> None:
    """Write a compressed cassette (FILE.json.zst or FILE.json.gz) as plain JSON: FILE.json, or -o OUT.

    \b
    blackbox decompress runs/weather.json.zst      # runs/weather.json
    """
    if compression.kind_of(file) == compression.PLAIN:
        raise UsageProblem(f"{file}: not a compressed cassette by its name (.zst or .gz); there is nothing to decompress")
    out = output or default_output(file, compression.PLAIN)
    if compression.kind_of(out) != compression.PLAIN:
        raise UsageProblem(f"{out}: the output's name ends in .zst or .gz, which would compress it again; name a .json file")
    _report("decompressed", convert(file, check_output_path(out), overwrite=overwrite, replace=replace))


def _report(verb: str, done: Converted) -> None:
    small, big = sorted((done.source_bytes, done.output_bytes))
    ratio = f"{big / small:.1f}x {'smaller' if done.output_bytes < done.source_bytes else 'larger'}" if small else "empty"
    kept = "the original was removed" if done.removed else "the original is kept (--replace removes it)"
    click.echo(
        f"{verb} {done.source} ({done.source_bytes:,} bytes) -> {done.output} ({done.output_bytes:,} bytes, "
        f"{ratio}; {done.steps} step{'' if done.steps == 1 else 's'}); {kept}"
    )
