"""``blackbox record``, ``replay`` and ``certs``: running an agent's command through the proxy.

Each builds a session, lives one ``proxy.lifecycle.proxy_run`` and reports how
it ended; errors become exit codes in ``cli.base``. The long-running
``blackbox proxy`` is in ``cli.proxy_commands``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from blackbox_mitm.cli.base import command, setup_logging
from blackbox_mitm.cli.compare_options import CompareOptions, compare_options, default_or, record_options
from blackbox_mitm.cli.exchange_options import ExchangeOptions, exchange_options
from blackbox_mitm.cli.options import (
    RunOptions,
    compact_option,
    map_remote_option,
    match_option,
    output_option,
    overwrite_option,
    proxy_options,
    report_option,
    run_options,
)

if TYPE_CHECKING:
    from blackbox_mitm.session.build import ReplayReport
    from blackbox_mitm.session.engine import Session

__all__ = ["certs", "record", "replay", "write_report"]


@command(wraps_command=True)
@output_option("the cassette to write (RUN.json, or compressed: RUN.json.gz, RUN.json.zst)")
@map_remote_option()
@overwrite_option()
@compact_option
@record_options
@exchange_options
@run_options
@proxy_options
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def record(
    output: Path,
    map_remote: tuple[str, ...],
    overwrite: bool,
    compact: bool,
    compare: CompareOptions,
    exchange: ExchangeOptions,
    run: RunOptions,
    hosts: tuple[str, ...],
    verbose: bool,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND through the proxy and record its model calls to a cassette.

    \b
    blackbox record -o runs/weather.json -- python agent.py "What's the weather in Paris?"
    """
    from blackbox_mitm.proxy.lifecycle import ProxySettings, proxy_run
    from blackbox_mitm.session.build import record_session

    setup_logging(verbose)
    found = compare.settings(hosts=hosts, **exchange.flags())  # the project config, --redact and --exchanges
    session = record_session(
        output,
        overwrite=overwrite,
        compact=compact,
        redactor=found.redactor,
        environment=found.environment,
        **exchange.session_kwargs(found),
    )
    settings = ProxySettings(hosts=found.host_specs, confdir=run.confdir, map_remote=map_remote)
    with proxy_run(session, settings=settings) as live:
        code = live.run_command(command)
    sys.exit(_recorded(session, live.cassette, code))


def _recorded(session: Session, cassette: Path | None, code: int) -> int:
    """Say what the recording holds (and what it does not); the exit code: COMMAND's, or 1 if a call went unrecorded."""
    rec = session.recorder
    assert rec is not None
    problems = session.problems()
    unrecorded = f", {len(problems)} refused or not recorded" if problems else ""
    click.echo(
        f"blackbox: recorded {cassette} — {len(rec.trace.steps)} steps, {rec.model_calls} model calls{unrecorded} "
        f"(run {rec.trace.id}; the command exited {code})",
        err=True,
    )
    _notes(session)
    _exchange_notes(rec.exchanges, cassette)
    _media_notes(rec.media, cassette)
    for problem in (*session.failed_writes, *session.unrecorded):
        click.echo(f"blackbox: error: {problem}", err=True)
    if code == 0 and problems:
        click.echo("blackbox: the recording does not hold every call the agent made: exit 1 (see the notes above)", err=True)
        return 1
    return code


@command(wraps_command=True)
@click.argument("cassette", type=click.Path(dir_okay=False))
@match_option()
@report_option("write the replay status as JSON to this file")
@click.option(
    "--stream-delay-ms",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="pause between replayed stream events (for agents whose UI depends on incremental delivery)",
)
@click.option("--allow-network", is_flag=True, help="let traffic to other hosts through (default: offline, nothing leaves the machine)")
@click.option(
    "--clock",
    type=click.Choice(["live", "recorded"]),
    default="live",
    show_default=True,
    help="recorded: COMMAND's clock starts at the recorded run's start (libfaketime; dynamically linked programs only)",
)
@compare_options
@run_options
@proxy_options
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def replay(
    cassette: str,
    match: str,
    report: Path | None,
    stream_delay_ms: int,
    allow_network: bool,
    clock: str,
    compare: CompareOptions,
    run: RunOptions,
    hosts: tuple[str, ...],
    verbose: bool,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND with its model calls answered from CASSETTE: no network, no API key.

    Exits non-zero with a report when the agent diverged from the recording,
    made more calls than it holds, or stopped early; otherwise with COMMAND's status.

    \b
    blackbox replay runs/weather.json -- python agent.py "What's the weather in Paris?"
    """
    from blackbox_mitm.proxy.lifecycle import ProxySettings, proxy_run
    from blackbox_mitm.session.build import replay_session_from

    setup_logging(verbose)
    found = compare.settings(hosts=hosts, match=default_or("match", match))  # the project config and the flags
    extra_env, environment = None, found.environment
    if clock == "recorded":
        extra_env, environment = _recorded_clock(cassette, environment)
    session = replay_session_from(cassette, found, environment)
    settings = ProxySettings(hosts=found.host_specs, confdir=run.confdir, offline=not allow_network, stream_delay_ms=stream_delay_ms)
    with proxy_run(session, settings=settings) as live:
        code = live.run_command(command, extra_env=extra_env)
    sys.exit(_replayed(session, live.report, cassette, report, code))


def _replayed(session: Session, status: ReplayReport | None, cassette: str, report: Path | None, code: int) -> int:
    """Write the report and say how the replay went; the exit code: COMMAND's, or non-zero when it diverged."""
    from blackbox_mitm.matcher import render_report, verdict

    assert status is not None and session.replay is not None
    if report:
        write_report(report, status)
    if verdict(status) != "ok":
        click.echo(render_report(status), err=True)
        return code or 1
    served = status.get("model_calls_served", 0)
    others = f"; {status['exchanges_served']} other HTTP exchanges served" if status.get("exchanges_served") else ""
    click.echo(
        f"blackbox: replayed {cassette} — {served} of {len(session.replay.calls)} model calls served from the recording, no divergence{others}",
        err=True,
    )
    return code


@command()
@click.option(
    "--confdir", type=click.Path(file_okay=False), default=None, help="mitmproxy's confdir (default ~/.mitmproxy or $BLACKBOX_CONFDIR)"
)
def certs(confdir: str | None) -> None:
    """Print where the CA is (creating it if missing) and the export lines for a shell."""
    from blackbox_mitm.proxy.environment import ca_bundle, ensure_ca, node_preload_path

    cert = ensure_ca(confdir)
    bundle = ca_bundle(confdir)
    click.echo(f"# the CA certificate (public; the private key stays in {cert.parent}):")
    click.echo(f"# {cert}")
    click.echo(f"export SSL_CERT_FILE={bundle}")
    click.echo(f"export REQUESTS_CA_BUNDLE={bundle}")
    click.echo(f"export CURL_CA_BUNDLE={bundle}")
    click.echo(f"export CODEX_CA_CERTIFICATE={bundle}")
    click.echo(f"export NODE_EXTRA_CA_CERTS={cert}")
    click.echo(f'export NODE_OPTIONS="--require {node_preload_path()}"')
    click.echo("# then point the agent at the proxy, e.g.: export HTTPS_PROXY=http://127.0.0.1:8080")


def write_report(path: Path, status: Mapping[str, Any]) -> None:
    """The status as indented JSON, readable by its owner only (it may quote prompts), replacing the file whole."""
    import orjson

    from blackbox_mitm.cassette.store import write_atomic

    write_atomic(path, orjson.dumps(status, option=orjson.OPT_INDENT_2) + b"\n", overwrite=True)


def _exchange_notes(book: Any, cassette: Path | None) -> None:
    """What the recording kept of the other HTTP traffic, and what it did not keep (and why)."""
    if book is None or cassette is None or not (book.entries or book.not_kept):
        return
    from blackbox_mitm.cassette.exchanges import exchanges_path

    click.echo(
        f"blackbox: kept {len(book.entries)} other HTTP exchanges ({book.kept_bytes:,} bytes of bodies) in {exchanges_path(cassette)}",
        err=True,
    )
    for line in book.not_kept:
        click.echo(f"blackbox: note: not kept: {line}", err=True)


def _media_notes(book: Any, cassette: Path | None) -> None:
    """What the recording kept of the run's images, documents and audio, and what it did not (over the cap)."""
    if book is None or cassette is None or not (book.items or book.not_kept):
        return
    from blackbox_mitm.cassette.media import media_path

    if book.items and media_path(cassette).exists():
        click.echo(
            f"blackbox: kept {len(book.items)} media items ({book.kept_bytes:,} bytes) once each in {media_path(cassette)}", err=True
        )
    for line in book.lines():
        click.echo(f"blackbox: note: media not kept: {line}", err=True)


def _recorded_clock(cassette: str, environment: Any) -> tuple[dict[str, str], Any]:
    """``--clock recorded``: the command's clock variables, and the live environment as of the recorded start."""
    import dataclasses
    import datetime as dt

    from blackbox_mitm.cassette import load_trace
    from blackbox_mitm.proxy.clock import faketime_env, reach_back

    start_ms = load_trace(cassette, recover=False).createdAt
    extra = faketime_env(start_ms)  # ClockUnavailable (exit 2) before anything runs
    reach_back(start_ms)
    if environment is not None:  # the agent's dates are the recorded day's now
        environment = dataclasses.replace(environment, now=dt.datetime.fromtimestamp(float(start_ms) / 1000).astimezone())
    return extra, environment


def _notes(session: Session) -> None:
    for note in (*session.refused, *session.notes):
        click.echo(f"blackbox: note: {note}", err=True)
