"""``blackbox golden add|list|remove`` (the suite folder) and ``blackbox test`` (replay every golden under CMD, JUnit out).

Exit codes of ``blackbox test``: 0 every golden passed; 1 one failed or was an
error, or the suite is empty (unless ``--allow-empty``); 2 a usage error — no
such goldens folder, a ``--run`` that names nothing, a bad option.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import orjson

from blackbox_mitm.cli import UsageProblem, main
from blackbox_mitm.errors import BlackboxError
from blackbox_mitm.golden.junit import junit_bytes, write_junit
from blackbox_mitm.golden.runner import DEFAULT_TIMEOUT, GoldenResult, run_suite
from blackbox_mitm.golden.suite import (
    DEFAULT_GOLDENS,
    GoldenError,
    GoldenInfo,
    NoSuiteError,
    add_golden,
    check_name,
    collect,
    list_goldens,
    remove_golden,
    resolve_runs,
)

_DIR = click.Path(file_okay=False, path_type=Path)
INPUT_SHOWN = 60  # characters of a run's input in `golden list`


def _goldens_option(f: Any) -> Any:
    return click.option(
        "--goldens",
        type=_DIR,
        default=DEFAULT_GOLDENS,
        show_default=True,
        help="the folder of golden cassettes (the suite)",
    )(f)


def _check_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return check_name(value)
    except GoldenError as exc:
        raise click.BadParameter(str(exc)) from exc


@main.group()
def golden() -> None:
    """Manage the golden suite: a folder of verified cassettes that `blackbox test` replays."""


@golden.command("add")
@click.argument("cassette", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--name", default=None, callback=_check_name, help="the golden's name (default: the cassette's file name)")
@click.option("--overwrite", is_flag=True, help="replace a golden of the same name")
@_goldens_option
def golden_add(cassette: Path, name: str | None, overwrite: bool, goldens: Path) -> None:
    """Copy CASSETTE into the suite, after checking that it verifies.

    \b
    blackbox golden add runs/weather.json --name weather
    """
    try:
        info = add_golden(cassette, goldens, name=name, overwrite=overwrite)
    except BlackboxError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"added golden {info.name} (run {info.run}, {info.steps} steps, {info.model_calls} model calls) as {info.path}")


@golden.command("list")
@click.option("--json", "as_json", is_flag=True, help="print the list as JSON")
@_goldens_option
def golden_list(as_json: bool, goldens: Path) -> None:
    """List the goldens: name, run id, steps, model calls and the run's input.

    \b
    blackbox golden list
    """
    try:
        infos = list_goldens(goldens)
    except NoSuiteError as exc:
        raise UsageProblem(str(exc)) from exc
    if as_json:
        click.echo(orjson.dumps([i.to_json() for i in infos], option=orjson.OPT_INDENT_2).decode())
        return
    if not infos:
        click.echo(f"no goldens in {goldens}; add one with `blackbox golden add RUN.json --goldens {goldens}`")
        return
    click.echo(_table(infos))


def _table(infos: list[GoldenInfo]) -> str:
    rows = [("NAME", "RUN", "STEPS", "CALLS", "INPUT")]
    for info in infos:
        if info.error is not None:
            rows.append((info.name, "-", "-", "-", f"ERROR: {info.error}"))
        else:
            rows.append((info.name, info.run or "", str(info.steps), str(info.model_calls), _short(info.input)))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join("  ".join([*(cell.ljust(w) for cell, w in zip(row[:4], widths, strict=True)), row[4]]).rstrip() for row in rows)


def _short(text: str) -> str:
    one_line = repr(text)[1:-1] if any(c in text for c in "\n\r\t") else text
    return one_line if len(one_line) <= INPUT_SHOWN else one_line[: INPUT_SHOWN - 1] + "…"


@golden.command("remove")
@click.argument("name")
@_goldens_option
def golden_remove(name: str, goldens: Path) -> None:
    """Delete the golden NAME (its name, or its run id) from the suite.

    \b
    blackbox golden remove weather
    """
    try:
        path = remove_golden(goldens, name)
    except NoSuiteError as exc:
        raise UsageProblem(str(exc)) from exc
    except GoldenError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"removed golden {path}")


@main.command("test", context_settings={"ignore_unknown_options": True})
@_goldens_option
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), default=None, help="write the JUnit XML here (default: stdout)")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    help="seconds each golden's command may run",
)
@click.option("--allow-empty", is_flag=True, help="pass when there are no goldens (by default an empty suite fails)")
@click.option(
    "--run",
    "runs",
    multiple=True,
    metavar="FILE",
    help="test this cassette (or the golden of this name) instead of the folder (repeatable)",
)
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="goldens run at once")
@click.option(
    "--confdir",
    type=click.Path(file_okay=False),
    default=None,
    help="mitmproxy's confdir, where the CA lives (default ~/.mitmproxy or $BLACKBOX_CONFDIR)",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def test_command(
    goldens: Path,
    junit: Path | None,
    timeout: float,
    allow_empty: bool,
    runs: tuple[str, ...],
    jobs: int,
    confdir: str | None,
    command: tuple[str, ...],
) -> None:
    """Replay every golden strictly under COMMAND and report the results as JUnit XML.

    Each golden's command runs with the replay's environment plus BLACKBOX_RUN
    (the run id), BLACKBOX_RUN_INPUT (the run's first user message) and
    BLACKBOX_CASSETTE; {run}, {input} and {cassette} in its arguments are
    replaced by the same values.

    \b
    blackbox test --junit reports/goldens.xml -- python agent.py --task "{input}"
    """
    try:
        cases = resolve_runs(runs, goldens) if runs else collect(goldens)
    except GoldenError as exc:
        raise UsageProblem(str(exc)) from exc
    # With the XML on stdout, people read stderr.
    say_err = junit is None

    def say(line: str) -> None:
        click.echo(line, err=say_err)

    if not cases:
        _emit(junit_bytes([]), junit)
        where = "the --run cassettes" if runs else str(goldens)
        if allow_empty:
            say(f"blackbox test: no goldens in {where}; passing because of --allow-empty")
            sys.exit(0)
        say(f"blackbox test: no goldens in {where} — a suite that tests nothing fails (pass --allow-empty to let it pass)")
        sys.exit(1)

    from blackbox_mitm.proxy.environment import ca_bundle

    ca_bundle(confdir)  # once, before parallel replays could race to create the CA
    started = time.monotonic()
    try:
        with _sigterm_as_exit():
            results = run_suite(cases, command, jobs=jobs, timeout=timeout, confdir=confdir, on_result=lambda r: say(_line(r)))
    except (KeyboardInterrupt, SystemExit):
        click.echo("blackbox test: interrupted; the commands still running were stopped and no report was written", err=True)
        raise
    elapsed = time.monotonic() - started
    _emit(junit_bytes(results, duration=elapsed), junit)
    passed = sum(r.passed for r in results)
    failed = sum(r.outcome == "failure" for r in results)
    errors = sum(r.outcome == "error" for r in results)
    noun = "golden" if len(results) == 1 else "goldens"
    tail = f"; JUnit report: {junit}" if junit is not None else ""
    say(f"blackbox test: {len(results)} {noun}, {passed} passed, {failed} failed, {errors} errors in {elapsed:.1f} s{tail}")
    sys.exit(0 if passed == len(results) else 1)


def _line(result: GoldenResult) -> str:
    name = result.case.testcase_name
    if result.passed:
        return f"PASS  {name} ({result.duration:.1f} s)"
    label = "FAIL " if result.outcome == "failure" else "ERROR"
    first, *rest = result.message.splitlines() or [""]
    lines = [f"{label} {name} [{result.kind}] {first}", *(f"      {line}" for line in rest)]
    return "\n".join(lines)


def _emit(data: bytes, junit: Path | None) -> None:
    if junit is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        write_junit(junit, data)
    except OSError as exc:
        raise click.ClickException(f"cannot write the JUnit report {junit}: {exc.strerror or exc}") from exc


@contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """SIGTERM (a CI job cancelled) unwinds like Ctrl-C, so the runs in flight are killed, not orphaned."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
