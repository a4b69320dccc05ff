"""``blackbox golden add|list|remove`` (the suite folder) and ``blackbox test`` (replay every golden under CMD, JUnit out).

Exit codes of ``blackbox test``: 0 every golden passed; 1 one failed or was an
error, or the suite is empty (unless ``--allow-empty``); 2 a usage error — no
such goldens folder, a ``--run`` that names nothing, a bad option.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

import click
import orjson

from blackbox_mitm.cassette.compression import CompressedCassetteError
from blackbox_mitm.cli.base import UsageProblem, command, group
from blackbox_mitm.cli.compare_options import CompareOptions, compare_options, mask_options
from blackbox_mitm.cli.options import RunOptions, map_remote_option, run_options
from blackbox_mitm.cli.paths import OutputFile
from blackbox_mitm.errors import BlackboxError
from blackbox_mitm.golden.batch import run_suite
from blackbox_mitm.golden.junit import junit_bytes, write_junit
from blackbox_mitm.golden.progress import Progress
from blackbox_mitm.golden.runner import DEFAULT_TIMEOUT
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

if TYPE_CHECKING:
    from blackbox_mitm.golden.runner import GoldenResult
    from blackbox_mitm.golden.settings import SuiteSettings
    from blackbox_mitm.golden.shared import ProxyServer, Serve
    from blackbox_mitm.golden.suite import GoldenCase
    from blackbox_mitm.session.router import RunRouter

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


@group()
def golden() -> None:
    """Manage the golden suite: a folder of verified cassettes that `blackbox test` replays."""


# A cassette refused is an outcome (1); one that cannot even be read (a compression bomb past the cap) is 2, as everywhere.
@golden.command("add", exit_codes={BlackboxError: 1, CompressedCassetteError: 2})
@click.argument("cassette", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--name", default=None, callback=_check_name, help="the golden's name (default: the cassette's file name)")
@click.option("--overwrite", is_flag=True, help="replace a golden of the same name")
@mask_options
@_goldens_option
def golden_add(cassette: Path, name: str | None, overwrite: bool, compare: CompareOptions, goldens: Path) -> None:
    """Copy CASSETTE into the suite, after checking that it verifies.

    --mask, --no-mask, --no-default-masks and --pace are kept beside it (NAME.blackbox.toml): `blackbox test` replays it with them.

    \b
    blackbox golden add runs/weather.json --name weather
    """
    from blackbox_mitm.golden.settings import write_settings

    compare.settings()  # a bad pattern is refused before anything is copied
    info = add_golden(cassette, goldens, name=name, overwrite=overwrite)
    kept = write_settings(
        info.path, masks=compare.masks, pace=compare.pace, default_masks=not compare.no_default_masks, no_mask=compare.no_mask
    )
    click.echo(f"added golden {info.name} (run {info.run}, {info.steps} steps, {info.model_calls} model calls) as {info.path}")
    if kept is not None:
        click.echo(f"its replay settings are in {kept}")


@golden.command("list")
@click.option("--json", "as_json", is_flag=True, help="print the list as JSON")
@_goldens_option
def golden_list(as_json: bool, goldens: Path) -> None:
    """List the goldens: name, run id, steps, model calls and the run's input.

    \b
    blackbox golden list
    """
    infos = list_goldens(goldens)
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


@golden.command("remove", exit_codes={GoldenError: 1, NoSuiteError: 2})
@click.argument("name")
@_goldens_option
def golden_remove(name: str, goldens: Path) -> None:
    """Delete the golden NAME (its name, or its run id) from the suite.

    \b
    blackbox golden remove weather
    """
    path = remove_golden(goldens, name)
    click.echo(f"removed golden {path}")


@command("test", wraps_command=True)
@_goldens_option
@click.option("--junit", type=OutputFile(), default=None, help="write the JUnit XML here (default: stdout)")
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
@click.option("--shard", default=None, metavar="K/N", help="run only shard K of N (stable by golden name), for CI matrices")
@click.option(
    "--proxy-per-golden",
    is_flag=True,
    help="give each golden its own `blackbox replay` process and proxy (slower; by default all share one proxy)",
)
@click.option(
    "--update",
    is_flag=False,
    flag_value="divergent",
    default=None,
    type=click.Choice(["divergent", "ci"]),
    help="re-record each golden that diverges, live from where it parted, in its place (the old one kept in .history/); "
    "refused with CI set unless given as --update=ci",
)
@map_remote_option("with --update: mitmproxy map_remote spec for the live re-runs (as for record)")
@compare_options
@run_options
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def test_command(
    goldens: Path,
    junit: Path | None,
    timeout: float,
    allow_empty: bool,
    runs: tuple[str, ...],
    jobs: int,
    shard: str | None,
    proxy_per_golden: bool,
    update: str | None,
    map_remote: tuple[str, ...],
    compare: CompareOptions,
    run: RunOptions,
    command: tuple[str, ...],
) -> None:
    """Replay every golden strictly under COMMAND and report the results as JUnit XML.

    Each golden's command runs with the replay's environment plus BLACKBOX_RUN
    (the run id), BLACKBOX_RUN_INPUT (the run's first user message) and
    BLACKBOX_CASSETTE; {run}, {input} and {cassette} in its arguments are
    replaced by the same values. All goldens go through one proxy, each its own
    run named in the proxy URL (HTTPS_PROXY=http://<golden>@127.0.0.1:PORT).
    With --update, each golden that diverged is re-recorded live from where it
    parted, in its place; the old one is kept in the suite's .history/ folder.

    \b
    blackbox test --junit reports/goldens.xml -- python agent.py --task "{input}"
    """
    from blackbox_mitm.golden.update import update_refusal

    dataclasses.replace(compare, no_mask=()).settings()  # exit 2 on a bad flag or project config, before anything runs
    refusal = update_refusal(update, os.environ)
    if refusal is not None:
        raise UsageProblem(refusal)
    cases = _suite_cases(runs, goldens, shard)
    suite_settings = _suite_settings(compare, cases)
    say = functools.partial(click.echo, err=junit is None)  # with the XML on stdout, people read stderr
    if not cases:
        _empty_suite(junit, "the --run cassettes" if runs else str(goldens), allow_empty, say)
    stream = sys.stderr if junit is None else sys.stdout
    results, elapsed = _run_cases(cases, command, jobs, timeout, run.confdir, stream, not proxy_per_golden, suite_settings)
    _emit(junit_bytes(results, duration=elapsed), junit)
    all_passed = _summary(results, elapsed, junit, say)
    if update is not None and not all_passed:
        sys.exit(_update(results, command, timeout, run.confdir, map_remote, suite_settings, say))
    sys.exit(0 if all_passed else 1)


def _suite_settings(compare: CompareOptions, cases: list[GoldenCase]) -> SuiteSettings:
    """The comparison flags every golden's replay gets; a --no-mask name none of ``cases`` has a mask of is refused."""
    from blackbox_mitm.golden.settings import SuiteSettings

    c = compare
    found = SuiteSettings(c.masks, c.no_default_masks, c.redact, c.pace, c.order_gap, c.no_env_substitution, c.no_mask)
    unknown = found.unknown_no_mask([case.path for case in cases])
    if unknown is not None:  # a name may be one golden's own mask: it is left out of those that have it
        raise UsageProblem(f"--no-mask: no golden, config or built-in rule has a mask named {unknown!r} (blackbox masks lists them)")
    return found


def _suite_cases(runs: tuple[str, ...], goldens: Path, shard: str | None) -> list[GoldenCase]:
    """The goldens to test: the --run ones or the folder's, only shard K of N with --shard."""
    cases = resolve_runs(runs, goldens) if runs else collect(goldens)
    if shard is None:
        return cases
    from blackbox_mitm.golden.shards import parse_shard, shard_cases

    k, n = parse_shard(shard)
    return shard_cases(cases, k, n)


def _empty_suite(junit: Path | None, where: str, allow_empty: bool, say: Callable[[str], None]) -> NoReturn:
    """An empty report, then exit: 0 with --allow-empty, 1 otherwise (a suite that tests nothing fails)."""
    _emit(junit_bytes([]), junit)
    if allow_empty:
        say(f"blackbox test: no goldens in {where}; passing because of --allow-empty")
        sys.exit(0)
    say(f"blackbox test: no goldens in {where} — a suite that tests nothing fails (pass --allow-empty to let it pass)")
    sys.exit(1)


def _run_cases(
    cases: list[GoldenCase],
    command: tuple[str, ...],
    jobs: int,
    timeout: float,
    confdir: str | None,
    stream: TextIO,
    shared_proxy: bool,
    settings: SuiteSettings,
) -> tuple[list[GoldenResult], float]:
    """Every golden's replay and the seconds they took, with progress on ``stream``.

    An interrupt stops the commands still running and writes no report.
    """
    from blackbox_mitm.proxy.environment import ca_bundle

    ca_bundle(confdir)  # once, before parallel replays could race to create the CA
    started = time.monotonic()
    serve = _shared_proxy(confdir) if shared_proxy else None
    try:
        with _sigterm_as_exit(), Progress(len(cases), stream, live=_is_terminal(stream)) as progress:
            results = run_suite(
                cases,
                command,
                jobs=jobs,
                timeout=timeout,
                confdir=confdir,
                on_result=progress.finish,
                on_start=progress.start,
                serve=serve,
                settings=settings,
            )
    except (KeyboardInterrupt, SystemExit):
        click.echo("blackbox test: interrupted; the commands still running were stopped and no report was written", err=True)
        raise
    return results, time.monotonic() - started


def _summary(results: Any, elapsed: float, junit: Path | None, say: Any) -> bool:
    """Print the suite's one-line summary; whether every golden passed."""
    passed = sum(r.passed for r in results)
    failed = sum(r.outcome == "failure" for r in results)
    errors = sum(r.outcome == "error" for r in results)
    noun = "golden" if len(results) == 1 else "goldens"
    tail = f"; JUnit report: {junit}" if junit is not None else ""
    say(f"blackbox test: {len(results)} {noun}, {passed} passed, {failed} failed, {errors} errors in {elapsed:.1f} s{tail}")
    return bool(passed == len(results))


def _update(results: Any, command: Any, timeout: float, confdir: str | None, map_remote: Any, settings: Any, say: Any) -> int:
    """``--update``: re-record the goldens that diverged (golden.update); 0 when none is left failing."""
    from blackbox_mitm.golden.update import update_all, update_line

    updates = update_all(results, command, say=say, timeout=timeout, confdir=confdir, map_remote=map_remote, settings=settings)
    say(f"blackbox test --update: {update_line(updates)}")
    return 0 if all(u.outcome != "failed" for u in updates) else 1


def _shared_proxy(confdir: str | None) -> Serve:
    """Start the suite's one proxy (in proxy/, the only place that imports mitmproxy)."""
    from blackbox_mitm.proxy.lifecycle import ProxySettings
    from blackbox_mitm.proxy.shared import serve_router

    def serve(router: RunRouter) -> AbstractContextManager[ProxyServer]:
        return serve_router(router, settings=ProxySettings(confdir=confdir))

    return serve


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


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


@group("junit")
def junit() -> None:
    """JUnit reports of `blackbox test`: merge the shards of a CI matrix."""


@junit.command("merge")
@click.option("-o", "--output", type=OutputFile(), required=True, help="the merged JUnit file to write")
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True, path_type=Path))
def junit_merge(output: Path, reports: tuple[Path, ...]) -> None:
    """Merge REPORTS (one per shard) into one JUnit file with summed counts.

    \b
    blackbox junit merge -o goldens.xml shard-1.xml shard-2.xml shard-3.xml
    """
    from blackbox_mitm.golden.shards import merge_junit

    write_junit(output, merge_junit(reports))
    click.echo(f"blackbox junit: merged {len(reports)} reports into {output}", err=True)
