"""``blackbox fork`` (edit a recorded run at a step and let the agent carry on) and ``blackbox forks`` (list them)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import orjson

from blackbox_mitm.cli import UsageProblem, main
from blackbox_mitm.cli.run_commands import _check_map_remote, common_proxy_options, setup_logging
from blackbox_mitm.errors import BlackboxError


def _json_arg(value: str | None, option: str) -> Any:
    if value is None:
        return None
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        _refuse(f'{option} must be JSON ({exc}); quote it for the shell, e.g. {option} \'{{"forecast": "sun"}}\'')


def _refuse(message: str) -> None:
    click.echo(f"blackbox fork: {message}", err=True)
    sys.exit(2)


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("parent", type=click.Path(dir_okay=False))
@click.option("--at", "at", type=int, multiple=True, metavar="N", help="the step to edit")
@click.option(
    "--tool-result", "tool_result", default=None, metavar="JSON", help="replacement result for the tool_result step N (what the model sees)"
)
@click.option("--response", "response", default=None, metavar="JSON", help="replacement model answer for the model_output step N")
@click.option("--live", is_flag=True, help="after the cut, send model calls to the real upstream (the default without --script)")
@click.option(
    "--script",
    "script",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="after the cut, answer model calls from this JSON list of answers",
)
@click.option("--live-after", "live_after", type=int, default=None, metavar="N", help="rewind: replay steps 0..N exactly, then go live")
@click.option("--match", type=click.Choice(["strict", "sequence"]), default="strict", show_default=True)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="the child cassette")
@click.option(
    "--map-remote", "map_remote", multiple=True, metavar="SPEC", help="mitmproxy map_remote spec for the live upstream (as for record)"
)
@click.option("--overwrite", is_flag=True)
@common_proxy_options
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def fork(
    parent: str,
    at: tuple[int, ...],
    tool_result: str | None,
    response: str | None,
    live: bool,
    script: str | None,
    live_after: int | None,
    match: str,
    output: str,
    map_remote: tuple[str, ...],
    overwrite: bool,
    confdir: str | None,
    hosts: tuple[str, ...],
    verbose: bool,
    command: tuple[str, ...],
) -> None:
    """Re-run COMMAND against PARENT with one fact changed at step N, and record the branch.

    \b
    blackbox fork runs/weather.json --at 3 --tool-result '{"forecast": "sun", "celsius": 24}' \\
        -o runs/sunny.json -- python agent.py "What's the weather in Paris?"
    """
    from blackbox_mitm.cassette.diff import first_divergence
    from blackbox_mitm.cassette.verify import load_verified
    from blackbox_mitm.matcher import render_report
    from blackbox_mitm.proxy.wrap import proxy_for, run_command
    from blackbox_mitm.session.fork import _MISSING, fork_session, plan_fork

    setup_logging(verbose)
    _check_map_remote(map_remote)
    try:
        parent_trace = load_verified(parent)
    except BlackboxError as exc:
        _refuse(str(exc))
        raise AssertionError from exc  # unreachable
    if live and script is not None:
        _refuse("--live and --script both say where calls after the cut go: give one of them")
    answers: list[Any] | None = None
    if script is not None:
        try:
            answers = orjson.loads(Path(script).read_bytes())
        except orjson.JSONDecodeError as exc:
            _refuse(f"--script {script} is not JSON ({exc}): it must be a JSON list of answers")
        if not isinstance(answers, list):
            _refuse(f"--script {script} must be a JSON list of answers, one per model call")
    try:
        plan = plan_fork(
            parent_trace,
            at=list(at),
            tool_result=_MISSING if tool_result is None else _json_arg(tool_result, "--tool-result"),
            response=_MISSING if response is None else _json_arg(response, "--response"),
            live_after=live_after,
        )
        session = fork_session(plan, output, match=match, tail="script" if script else "upstream", script=answers, overwrite=overwrite)
    except BlackboxError as exc:
        _refuse(str(exc))
        raise AssertionError from exc  # unreachable
    runner = proxy_for(session, replaying=False, hosts=hosts, confdir=confdir, map_remote=map_remote, offline=False)
    recorder = session.recorder
    assert recorder is not None
    try:
        runner.start()
    except BlackboxError as exc:
        recorder.discard()
        raise UsageProblem(str(exc)) from exc
    try:
        code = run_command(
            command, runner, confdir=confdir, extra_env={"BLACKBOX_FORK_PARENT": parent_trace.id, "BLACKBOX_FORK_STEP": str(plan.cut)}
        )
    finally:
        runner.stop()
    assert session.replay is not None
    status = session.replay.status()
    before_cut = {c.input_step for c in session.replay.calls if c.output_step <= plan.cut}
    missed = sorted(before_cut & set(status["incomplete"]))
    if (session.diverged_in_prefix and match == "strict") or missed:
        # The prefix is copied only once the agent has re-run it (spec: Fork Policy).
        recorder.discard()
        click.echo(render_report(status), err=True)
        why = (
            "diverged from"
            if session.diverged_in_prefix
            else f"stopped before re-running (model calls at steps {', '.join(map(str, missed))} of)"
        )
        click.echo(f"blackbox fork: the agent {why} the recorded steps before the cut (step {plan.cut}); no child was written", err=True)
        sys.exit(code or 1)
    path = recorder.finish(output, exit_code=code, in_flight=session.in_flight)
    child = recorder.trace
    div = first_divergence(parent_trace, child)
    where = "none" if div is None else f"step {div.index} ({div.kind})"
    n_after = session.scripted_calls if script else session.forwarded_calls
    after = f"{n_after} {'scripted' if script else 'live'} model call{'' if n_after == 1 else 's'}"
    click.echo(
        f"blackbox: forked {parent_trace.id} at step {plan.cut} -> {path} — {len(child.steps)} steps, "
        f"{after} after the cut; first divergence from the parent: {where}",
        err=True,
    )
    for note in (*session.refused, *session.notes):
        click.echo(f"blackbox: note: {note}", err=True)
    sys.exit(code)


@main.command()
@click.argument("parent", type=click.Path(dir_okay=False))
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="print the listing as JSON")
def forks(parent: str, directory: str | None, as_json: bool) -> None:
    """List the forks of PARENT found in DIRECTORY (default: PARENT's folder), newest first, each diffed against it."""
    from blackbox_mitm.session.lineage import list_forks, render_forks

    try:
        listing = list_forks(Path(parent), Path(directory) if directory else None)
    except BlackboxError as exc:
        click.echo(f"blackbox forks: {exc}", err=True)
        sys.exit(2)
    if as_json:
        click.echo(orjson.dumps(listing, option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(render_forks(listing))
