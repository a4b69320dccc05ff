"""``blackbox verify``, ``show``, ``diff`` and ``recover``: reading, checking and repairing cassettes.

Exit codes: 0 valid / identical / recovered; 1 a cassette failed verification or
two runs differ; 2 a file could not be read, or a usage error. None of these
commands recovers a journal on its own (``load_trace(recover=False)``): only
``recover`` writes, when asked.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from blackbox_mitm.cassette.journal import journal_path, recover_journal
from blackbox_mitm.cassette.load import load_trace
from blackbox_mitm.cassette.records import ExchangeRow, MediaRow
from blackbox_mitm.cassette.render import render_diff, render_verify, steps_text
from blackbox_mitm.cassette.timeline import build_timeline, render_timeline, summarize_step
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.cli.base import UsageProblem, command
from blackbox_mitm.cli.compare_options import CompareOptions
from blackbox_mitm.cli.paths import OutputFile, check_output_path
from blackbox_mitm.codecs.verified import diff_verified, verify_file
from blackbox_mitm.errors import CassetteError

_FILE = click.Path(dir_okay=False, path_type=Path)


@command()
@click.argument("files", nargs=-1, required=True, type=_FILE)
@click.option("--all", "show_all", is_flag=True, help="list every problem of a failing cassette, not only the first")
def verify(files: tuple[Path, ...], show_all: bool) -> None:
    """Check cassettes: format version, hash chain, and provider neutrality.

    Prints `OK FILE (N steps)` or `FAIL FILE: step I: reason` per file. Exit 0 when
    every file is valid, 1 when one is not, 2 when one cannot be read.
    """
    status = 0
    for path in files:
        try:
            result = verify_file(path)
        except CassetteError as exc:
            click.echo(f"ERROR {exc}{_journal_hint(path)}")
            status = 2
            continue
        if not result.ok:
            status = max(status, 1)
        click.echo("\n".join(render_verify(result, str(path), show_all=show_all)))
    sys.exit(status)


@command()
@click.argument("file", type=_FILE)
@click.option("--json", "as_json", is_flag=True, help="print the timeline as JSON")
def show(file: Path, as_json: bool) -> None:
    """Print a run's timeline: one line per step, with the time since the run started.

    \b
    blackbox show runs/weather.json
    """
    trace = _load(file)
    timeline = build_timeline(trace)
    listed = _exchanges_of(file, trace)
    media = _media_of(file, trace)
    if as_json:
        _echo_json(
            {
                **timeline.to_json(),
                **({"exchanges": listed[0], "notKept": listed[1]} if listed else {}),
                **({"media": media} if media else {}),
            }
        )
    else:
        click.echo(render_timeline(timeline), nl=False)
        if listed:
            from blackbox_mitm.cassette.exchanges import render_exchanges

            click.echo(render_exchanges(*listed), nl=False)
        if media:
            from blackbox_mitm.cassette.media import render_media

            click.echo(render_media(media), nl=False)


def _media_of(file: Path, trace: Trace) -> list[MediaRow] | None:
    """The run's stored media as rows (None: it keeps none); a media file that does not verify is a usage problem."""
    from blackbox_mitm.cassette.media import load_media, media_rows

    try:
        document = load_media(file, trace)
    except CassetteError as exc:
        raise UsageProblem(str(exc)) from exc
    return media_rows(document) if document is not None else None


def _exchanges_of(file: Path, trace: Trace) -> tuple[list[ExchangeRow], list[str]] | None:
    """The run's other HTTP exchanges as rows (None: it kept none); a file that does not verify is a usage problem."""
    from blackbox_mitm.cassette.exchanges import exchange_rows, exchanges_ref_of, load_exchanges

    ref = exchanges_ref_of(trace)
    if ref is None:
        return None
    try:
        document = load_exchanges(file, ref)
    except CassetteError as exc:
        raise UsageProblem(str(exc)) from exc
    origin = min([trace.createdAt, *(s.timestamp for s in trace.steps[:1])])
    return exchange_rows(document, origin), [str(n) for n in document.get("notKept") or []]


@command()
@click.argument("a", type=_FILE)
@click.argument("b", type=_FILE)
@click.option("--json", "as_json", is_flag=True, help="print the comparison as JSON")
@click.option("--tail", default=10, show_default=True, metavar="N", help="steps of each run to list after the divergence (0: all)")
@click.option(
    "--mask",
    "masks",
    multiple=True,
    metavar="REGEX",
    help="compare as strict replay does, ignoring what REGEX matches (repeatable; with the built-in masks and the config's)",
)
@click.option("--masked", is_flag=True, help="compare as strict replay does, through the built-in masks and the config's")
@click.option("--no-default-masks", is_flag=True, help="with --mask or --masked: leave the built-in masks out")
@click.option("--no-mask", "no_mask", multiple=True, metavar="NAME", help="with --mask or --masked: leave the mask NAME out (repeatable)")
def diff(
    a: Path, b: Path, as_json: bool, tail: int, masks: tuple[str, ...], masked: bool, no_default_masks: bool, no_mask: tuple[str, ...]
) -> None:
    """Compare two runs: where they part, why, and how each goes on.

    Exit 0 when the runs are identical (every step's hash), 1 when they differ, 2 when a file cannot be read
    or does not verify (both hash chains are checked first). With --mask or --masked they are compared as
    strict replay compares requests: through the masks, timestamps and ids aside.
    """
    try:
        found = diff_verified(a, b)
    except CassetteError as exc:
        raise UsageProblem(f"{exc}{_journal_hint(Path(exc.path or a))}") from exc
    ta, tb, divergence = found.a, found.b, found.divergence
    if masks or masked:
        _masked_diff(a, ta, b, tb, CompareOptions(masks=masks, no_default_masks=no_default_masks, no_mask=no_mask), as_json)
    if as_json:
        _echo_json(
            {
                "a": {"path": str(a), "run": ta.id, "steps": len(ta.steps)},
                "b": {"path": str(b), "run": tb.id, "steps": len(tb.steps)},
                "identical": divergence is None,
                "firstDivergence": divergence.to_json() if divergence else None,
            }
        )
    else:
        click.echo(render_diff(str(a), ta, str(b), tb, divergence, tail), nl=False)
    sys.exit(0 if divergence is None else 1)


@command()
@click.argument("file", type=OutputFile())
def recover(file: Path) -> None:
    """Turn an interrupted recording's journal (FILE.journal) into a valid cassette.

    The cassette keeps every step whose write completed and ends in a
    `run_failed` marker (reason `recording_interrupted`).
    """
    if file.name.endswith(".journal"):
        file = file.with_name(file.name.removesuffix(".journal"))
    check_output_path(file)  # the cassette it writes: refused before the journal is touched
    out, steps = recover_journal(file, quiet=True)
    trace = load_trace(out, recover=False)
    last = trace.steps[-1]
    click.echo(f"recovered {out} ({steps} step{'s' if steps != 1 else ''}); it ends with step {last.index}: {summarize_step(last)}")
    click.echo(f"see it with: blackbox show {out}")


def _masked_diff(a: Path, ta: Trace, b: Path, tb: Trace, compare: CompareOptions, as_json: bool) -> None:
    from blackbox_mitm.matcher.compare_runs import masked_divergence

    rules = compare.settings().rules
    d = masked_divergence(ta, tb, rules)
    names = [m.name for m in rules.masks]
    if as_json:
        _echo_json({"a": str(a), "b": str(b), "masks": names, "same": d is None, "firstDifference": d.to_json() if d else None})
    else:
        click.echo(f"a: {a} (run {ta.id}, {steps_text(len(ta.steps))})\nb: {b} (run {tb.id}, {steps_text(len(tb.steps))})")
        click.echo(f"compared as strict replay compares requests, through the masks: {', '.join(names) or 'none'}")
        click.echo("\n".join(d.human_lines()) if d else "the same run under the masks (timestamps and ids aside)")
    sys.exit(0 if d is None else 1)


# -- helpers ----------------------------------------------------------------------------


def _load(path: Path) -> Trace:
    try:
        return load_trace(path, recover=False)
    except CassetteError as exc:
        raise UsageProblem(f"{exc}{_journal_hint(path)}") from exc


def _journal_hint(path: Path) -> str:
    if journal_path(path).exists():
        return f" (an interrupted recording's journal is beside it: `blackbox recover {path}` turns it into a cassette)"
    return ""


def _echo_json(data: Any) -> None:
    # backslashreplace writes a lone surrogate as \udXXX: a valid JSON escape for it.
    text = json.dumps(data, ensure_ascii=False, indent=2).encode("utf-8", "backslashreplace").decode("utf-8")
    click.echo(text)
