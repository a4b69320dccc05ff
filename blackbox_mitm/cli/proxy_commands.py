"""``blackbox proxy``: a long-running proxy for containers, one run (--cassette) or a run per client (--cassette-dir).

It ends its run (or each client's) when it stops, on Ctrl-C or SIGTERM, and says
what became of it; errors become exit codes in ``cli.base``.
"""

from __future__ import annotations

import dataclasses
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from blackbox_mitm.cli.base import command, setup_logging
from blackbox_mitm.cli.compare_options import CompareOptions, compare_options, default_or
from blackbox_mitm.cli.options import confdir_option, map_remote_option, match_option, overwrite_option, proxy_options, report_option
from blackbox_mitm.cli.run_commands import write_report

if TYPE_CHECKING:
    from blackbox_mitm.proxy.lifecycle import ProxySettings
    from blackbox_mitm.session.engine import Session

__all__ = ["proxy"]


@command()
@click.option("--mode", type=click.Choice(["record", "replay"]), required=True)
@click.option("--cassette", default=None, type=click.Path(dir_okay=False), help="the one run's cassette")
@click.option(
    "--cassette-dir",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="serve many runs: DIR/<run>.json, each client naming its run in HTTPS_PROXY=http://<run>@HOST:PORT",
)
@click.option(
    "--listen-host", default="127.0.0.1", show_default=True, help="bind address (127.0.0.1 unless you need a container to reach it)"
)
@click.option("--listen-port", default=8080, show_default=True, type=int)
@match_option()
@map_remote_option()
@overwrite_option()
@report_option("replay: write the status as JSON here on shutdown")
@compare_options
@confdir_option
@proxy_options
def proxy(
    mode: str,
    cassette: str | None,
    cassette_dir: Path | None,
    listen_host: str,
    listen_port: int,
    match: str,
    map_remote: tuple[str, ...],
    overwrite: bool,
    report: Path | None,
    compare: CompareOptions,
    confdir: str | None,
    hosts: tuple[str, ...],
    verbose: bool,
) -> None:
    """A long-running proxy (for containers: HTTPS_PROXY=http://HOST:PORT). Stop it with Ctrl-C.

    The run ends when the proxy stops: a recording then gets its terminal event.
    With --cassette-dir each run is its own (DIR/<run>.json): a replay's report is
    written to DIR/<run>.report.json when the proxy stops.
    """
    _check_proxy_target(cassette, cassette_dir, report, compare)
    if cassette_dir is not None:
        shared = compare.settings(hosts=hosts)  # the project config's hosts and the flags'
        _proxy_dir(
            mode,
            cassette_dir,
            match=match,
            overwrite=overwrite,
            hosts=shared.host_specs,
            confdir=confdir,
            map_remote=map_remote,
            listen_host=listen_host,
            listen_port=listen_port,
            verbose=verbose,
            environment=shared.environment,  # the proxy's own, for every run
        )
        return
    assert cassette is not None
    from blackbox_mitm.proxy.lifecycle import ProxySettings

    setup_logging(True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # from the start: a SIGTERM always ends the run cleanly
    found = compare.settings(hosts=hosts, match=default_or("match", match))  # the project config and the flags
    session = _proxy_session(mode, cassette, found, overwrite=overwrite)
    settings = ProxySettings(
        hosts=found.host_specs, confdir=confdir, map_remote=map_remote, listen_host=listen_host, listen_port=listen_port
    )
    _serve_one_run(session, settings, f"{mode} {cassette}", stop=stop, report=report)


def _check_proxy_target(cassette: str | None, cassette_dir: Path | None, report: Path | None, compare: CompareOptions) -> None:
    """One run (--cassette) or one run per client (--cassette-dir), with only the options that fit it."""
    if (cassette is None) == (cassette_dir is None):
        raise click.UsageError("name either --cassette FILE (one run) or --cassette-dir DIR (one run per client)")
    if cassette_dir is None:
        return
    if report is not None:
        raise click.UsageError("--report is for one run: with --cassette-dir each replay's report is written to DIR/<run>.report.json")
    if dataclasses.replace(compare, no_env_substitution=False) != CompareOptions():
        raise click.UsageError(
            "--mask, --no-default-masks, --redact, --pace and --order-gap are for one run (--cassette), not --cassette-dir"
        )


def _proxy_session(mode: str, cassette: str, found: Any, *, overwrite: bool) -> Session:
    """The one run's session, from the project config and the flags (``found``). The proxy's own environment stands
    for the agent's (docs/cassette.md): start it where the agent runs."""
    from blackbox_mitm.cli.paths import check_output_path
    from blackbox_mitm.session.build import record_session, replay_session_from

    if mode == "record":
        exchanges = {k: v.value for k, v in found.exchange_settings().items()}  # the project config's (or the defaults)
        return record_session(
            check_output_path(cassette), overwrite=overwrite, redactor=found.redactor, environment=found.environment, **exchanges
        )
    return replay_session_from(cassette, found, found.environment)


def _serve_one_run(session: Session, settings: ProxySettings, what: str, *, stop: threading.Event, report: Path | None) -> None:
    """Serve ``session`` until ``stop`` (Ctrl-C, SIGTERM), then say what became of the run."""
    from blackbox_mitm.matcher import render_report
    from blackbox_mitm.proxy.environment import ca_bundle, ensure_ca
    from blackbox_mitm.proxy.lifecycle import proxy_run

    with proxy_run(session, settings=settings) as live:
        cert = ensure_ca(settings.confdir)
        click.echo(f"blackbox proxy ({what}) listening on {live.url}", err=True)
        click.echo(f"  export HTTPS_PROXY={live.url} SSL_CERT_FILE={ca_bundle(settings.confdir)} NODE_EXTRA_CA_CERTS={cert}", err=True)
        live.wait(stop)
    if session.recorder is not None:
        rec = session.recorder
        click.echo(f"blackbox: recorded {len(rec.trace.steps)} steps ({rec.model_calls} model calls) to {live.cassette}", err=True)
    elif live.report is not None:
        if report:
            write_report(report, live.report)
        click.echo(render_report(live.report), err=True)


def _proxy_dir(
    mode: str,
    directory: Path,
    *,
    match: str,
    overwrite: bool,
    hosts: tuple[str, ...],
    confdir: str | None,
    map_remote: tuple[str, ...],
    listen_host: str,
    listen_port: int,
    verbose: bool,
    environment: Any = None,
) -> None:
    """``blackbox proxy --cassette-dir``: one proxy, a run per client, each ended and reported on its own."""
    from blackbox_mitm.proxy.environment import ca_bundle, ensure_ca
    from blackbox_mitm.proxy.lifecycle import ProxySettings
    from blackbox_mitm.proxy.shared import finish_runs, serve_router, wait_for_stop
    from blackbox_mitm.session.router import RunRouter

    setup_logging(verbose)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # from the start: a SIGTERM always ends the runs cleanly
    router = RunRouter(directory, mode=mode, match=match, overwrite=overwrite, environment=environment)
    settings = ProxySettings(hosts=hosts, confdir=confdir, map_remote=map_remote, listen_host=listen_host, listen_port=listen_port)
    with serve_router(router, settings=settings) as proxy:
        cert = ensure_ca(confdir)
        named = proxy.url.replace("http://", "http://<run>@")
        click.echo(f"blackbox proxy ({mode}, one run per client, cassettes {directory}/<run>.json) listening on {proxy.url}", err=True)
        click.echo(f"  export HTTPS_PROXY={named} SSL_CERT_FILE={ca_bundle(confdir)} NODE_EXTRA_CA_CERTS={cert}", err=True)
        wait_for_stop(stop)
    lines = finish_runs(router, report_dir=directory if mode == "replay" else None)
    for line in lines:
        click.echo(f"blackbox: {line}", err=True)
    if not lines:
        click.echo("blackbox: no client named a run; nothing was recorded or replayed", err=True)
