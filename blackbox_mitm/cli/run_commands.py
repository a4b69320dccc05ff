"""``blackbox record``, ``replay``, ``proxy`` and ``certs``: running agents through the proxy."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import orjson

from blackbox_mitm.cli import UsageProblem, main
from blackbox_mitm.errors import BlackboxError

log = logging.getLogger("blackbox")


def setup_logging(verbose: bool = False) -> None:
    logger = logging.getLogger("blackbox")
    if not any(h.get_name() == "blackbox-stderr" for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.set_name("blackbox-stderr")
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
    logger.setLevel(logging.INFO if verbose else logging.WARNING)


def common_proxy_options[F: Callable[..., Any]](f: F) -> F:
    f = click.option(
        "--confdir",
        type=click.Path(file_okay=False),
        default=None,
        help="mitmproxy's confdir, where the CA lives (default ~/.mitmproxy or $BLACKBOX_CONFDIR).",
    )(f)
    f = click.option(
        "--host", "hosts", multiple=True, metavar="HOST", help="another OpenAI- or Anthropic-compatible host to intercept (repeatable)."
    )(f)
    f = click.option("-v", "--verbose", is_flag=True, help="log refusals, provider errors and non-model endpoints as they happen.")(f)
    return f


@main.command(context_settings={"ignore_unknown_options": True})
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="the cassette to write")
@click.option(
    "--map-remote",
    "map_remote",
    multiple=True,
    metavar="SPEC",
    help=r"mitmproxy map_remote spec, e.g. '|https://api\.openai\.com|http://127.0.0.1:9000' (repeatable).",
)
@click.option("--overwrite", is_flag=True, help="replace an existing cassette")
@common_proxy_options
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def record(
    output: str,
    map_remote: tuple[str, ...],
    overwrite: bool,
    confdir: str | None,
    hosts: tuple[str, ...],
    verbose: bool,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND through the proxy and record its model calls to a cassette.

    \b
    blackbox record -o runs/weather.json -- python agent.py "What's the weather in Paris?"
    """
    from blackbox_mitm.proxy.wrap import proxy_for, run_command
    from blackbox_mitm.session.build import record_session

    setup_logging(verbose)
    _check_map_remote(map_remote)
    try:
        session = record_session(output, overwrite=overwrite)
    except BlackboxError as exc:
        raise UsageProblem(str(exc)) from exc
    runner = proxy_for(session, replaying=False, hosts=hosts, confdir=confdir, map_remote=map_remote)
    try:
        runner.start()
    except BlackboxError as exc:
        assert session.recorder is not None
        session.recorder.discard()
        raise UsageProblem(str(exc)) from exc
    try:
        code = run_command(command, runner, confdir=confdir)
    finally:
        runner.stop()
    assert session.recorder is not None
    path = session.recorder.finish(output, exit_code=code, in_flight=session.in_flight)
    rec = session.recorder
    click.echo(
        f"blackbox: recorded {path} — {len(rec.trace.steps)} steps, {rec.model_calls} model calls (run {rec.trace.id}; the command exited {code})",
        err=True,
    )
    for note in (*session.refused, *session.notes):
        click.echo(f"blackbox: note: {note}", err=True)
    sys.exit(code)


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("cassette", type=click.Path(dir_okay=False))
@click.option(
    "--match",
    type=click.Choice(["strict", "sequence"]),
    default="strict",
    show_default=True,
    help="strict compares every request with the recording; sequence serves the answers in order.",
)
@click.option("--report", type=click.Path(dir_okay=False), default=None, help="write the replay status as JSON to this file")
@click.option(
    "--stream-delay-ms",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="pause between replayed stream events (for agents whose UI depends on incremental delivery)",
)
@click.option("--allow-network", is_flag=True, help="let traffic to other hosts through (default: offline, nothing leaves the machine)")
@common_proxy_options
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def replay(
    cassette: str,
    match: str,
    report: str | None,
    stream_delay_ms: int,
    allow_network: bool,
    confdir: str | None,
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
    from blackbox_mitm.matcher import render_report, verdict
    from blackbox_mitm.proxy.wrap import proxy_for, run_command
    from blackbox_mitm.session.build import replay_report, replay_session

    setup_logging(verbose)
    try:
        session = replay_session(cassette, match=match)
    except BlackboxError as exc:
        raise UsageProblem(str(exc)) from exc
    runner = proxy_for(session, replaying=True, hosts=hosts, confdir=confdir, offline=not allow_network, stream_delay_ms=stream_delay_ms)
    try:
        runner.start()
    except BlackboxError as exc:
        raise UsageProblem(str(exc)) from exc
    try:
        code = run_command(command, runner, confdir=confdir, replaying=True)
    finally:
        runner.stop()
    assert session.replay is not None
    status = replay_report(session)
    status["exit_code"] = code
    if report:
        Path(report).write_bytes(orjson.dumps(status, option=orjson.OPT_INDENT_2) + b"\n")
    if verdict(status) != "ok":
        click.echo(render_report(status), err=True)
        sys.exit(code or 1)
    served = status.get("model_calls_served", 0)
    click.echo(
        f"blackbox: replayed {cassette} — {served} of {len(session.replay.calls)} model calls served from the recording, no divergence",
        err=True,
    )
    sys.exit(code)


@main.command()
@click.option("--mode", type=click.Choice(["record", "replay"]), required=True)
@click.option("--cassette", required=True, type=click.Path(dir_okay=False))
@click.option(
    "--listen-host", default="127.0.0.1", show_default=True, help="bind address (127.0.0.1 unless you need a container to reach it)"
)
@click.option("--listen-port", default=8080, show_default=True, type=int)
@click.option("--match", type=click.Choice(["strict", "sequence"]), default="strict", show_default=True)
@click.option("--map-remote", "map_remote", multiple=True, metavar="SPEC")
@click.option("--overwrite", is_flag=True)
@click.option("--report", type=click.Path(dir_okay=False), default=None, help="replay: write the status as JSON here on shutdown")
@common_proxy_options
def proxy(
    mode: str,
    cassette: str,
    listen_host: str,
    listen_port: int,
    match: str,
    map_remote: tuple[str, ...],
    overwrite: bool,
    report: str | None,
    confdir: str | None,
    hosts: tuple[str, ...],
    verbose: bool,
) -> None:
    """A long-running proxy (for containers: HTTPS_PROXY=http://HOST:PORT). Stop it with Ctrl-C.

    The run ends when the proxy stops: a recording then gets its terminal event.
    """
    from blackbox_mitm.proxy.environment import ca_bundle, ensure_ca
    from blackbox_mitm.proxy.wrap import proxy_for
    from blackbox_mitm.session.build import finish_proxy_session, record_session, replay_session

    setup_logging(True)
    _check_map_remote(map_remote)
    try:
        session = record_session(cassette, overwrite=overwrite) if mode == "record" else replay_session(cassette, match=match)
    except BlackboxError as exc:
        raise UsageProblem(str(exc)) from exc
    runner = proxy_for(
        session,
        replaying=mode == "replay",
        hosts=hosts,
        confdir=confdir,
        map_remote=map_remote,
        listen_host=listen_host,
        listen_port=listen_port,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        runner.start()
    except BlackboxError as exc:
        if session.recorder is not None:
            session.recorder.discard()
        raise UsageProblem(str(exc)) from exc
    cert = ensure_ca(confdir)
    click.echo(f"blackbox proxy ({mode} {cassette}) listening on {runner.url}", err=True)
    click.echo(f"  export HTTPS_PROXY={runner.url} SSL_CERT_FILE={ca_bundle(confdir)} NODE_EXTRA_CA_CERTS={cert}", err=True)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        runner.stop()
        finish_proxy_session(session, report=report)


@main.command()
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


def _check_map_remote(specs: tuple[str, ...]) -> None:
    for spec in specs:
        if spec.endswith("|") and spec.count("|") > 2:
            raise click.BadParameter(
                f"{spec!r} ends with '|': mitmproxy would read its first part as a flow filter. Write it as |FROM-REGEX|TO-URL",
                param_hint="--map-remote",
            )
        if not spec or spec.count(spec[0]) < 2:
            raise click.BadParameter(f"{spec!r} is not a map_remote spec; write it as |FROM-REGEX|TO-URL", param_hint="--map-remote")
