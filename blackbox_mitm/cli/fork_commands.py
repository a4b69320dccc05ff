"""``blackbox fork`` (edit a recorded run at a step and let the agent carry on) and ``blackbox forks`` (list them)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import orjson

from blackbox_mitm.cli.base import UsageProblem, command, setup_logging
from blackbox_mitm.cli.compare_options import CompareOptions, compare_options, default_or
from blackbox_mitm.cli.options import (
    RunOptions,
    map_remote_option,
    match_option,
    output_option,
    overwrite_option,
    proxy_options,
    run_options,
)

if TYPE_CHECKING:
    from blackbox_mitm.cassette.trace import Trace
    from blackbox_mitm.session.engine import Session
    from blackbox_mitm.session.fork import ForkPlan

__all__ = ["fork", "forks"]


def _json_arg(value: str | None, option: str) -> Any:
    from blackbox_mitm.session.fork import NO_EDIT

    if value is None:
        return NO_EDIT
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise UsageProblem(f'{option} must be JSON ({exc}); quote it for the shell, e.g. {option} \'{{"forecast": "sun"}}\'') from exc


def _script(script: str | None, live: bool) -> list[Any] | None:
    if live and script is not None:
        raise UsageProblem("--live and --script both say where calls after the cut go: give one of them")
    if script is None:
        return None
    try:
        answers = orjson.loads(Path(script).read_bytes())
    except orjson.JSONDecodeError as exc:
        raise UsageProblem(f"--script {script} is not JSON ({exc}): it must be a JSON list of answers") from exc
    if not isinstance(answers, list):
        raise UsageProblem(f"--script {script} must be a JSON list of answers, one per model call")
    return answers


@command(wraps_command=True)
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
@match_option("strict: the steps before the cut must re-run as recorded; sequence serves them in order.")
@output_option("the child cassette")
@map_remote_option("mitmproxy map_remote spec for the live upstream (as for record)")
@overwrite_option("replace an existing child cassette")
@compare_options
@run_options
@proxy_options
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
    output: Path,
    map_remote: tuple[str, ...],
    overwrite: bool,
    compare: CompareOptions,
    run: RunOptions,
    hosts: tuple[str, ...],
    verbose: bool,
    command: tuple[str, ...],
) -> None:
    """Re-run COMMAND against PARENT with one fact changed at step N, and record the branch.

    \b
    blackbox fork runs/weather.json --at 3 --tool-result '{"forecast": "sun", "celsius": 24}' \\
        -o runs/sunny.json -- python agent.py "What's the weather in Paris?"
    """
    from blackbox_mitm.codecs.verified import load_verified
    from blackbox_mitm.matcher import render_report
    from blackbox_mitm.proxy.lifecycle import ProxySettings, proxy_run
    from blackbox_mitm.session.fork import discard_reason, plan_fork

    setup_logging(verbose)
    parent_trace = load_verified(parent)
    answers = _script(script, live)
    edits = {"tool_result": _json_arg(tool_result, "--tool-result"), "response": _json_arg(response, "--response")}
    plan = plan_fork(parent_trace, at=list(at), live_after=live_after, **edits)
    found = compare.settings(hosts=hosts, match=default_or("match", match))  # the prefix is compared as a replay compares
    session = _child_session(plan, output, found, answers, parent, overwrite=overwrite)
    settings = ProxySettings(hosts=found.host_specs, confdir=run.confdir, map_remote=map_remote, offline=False)
    with proxy_run(session, settings=settings, keep=discard_reason) as live_run:
        code = live_run.run_command(command, extra_env={"BLACKBOX_FORK_PARENT": parent_trace.id, "BLACKBOX_FORK_STEP": str(plan.cut)})
    assert session.replay is not None and session.recorder is not None
    if live_run.discarded is not None:
        click.echo(render_report(session.replay.status()), err=True)
        click.echo(f"blackbox fork: {live_run.discarded}; no child was written", err=True)
        sys.exit(code or 1)
    _say_forked(parent_trace, plan, session, live_run.cassette, scripted=script is not None)
    sys.exit(code)


def _child_session(plan: ForkPlan, output: Path, found: Any, script: list[Any] | None, parent: str, *, overwrite: bool) -> Session:
    """The fork's session: the prefix compared as a replay compares (``found``), then the script's answers or upstream."""
    from blackbox_mitm.cassette.media import load_media
    from blackbox_mitm.session.fork import fork_session

    return fork_session(
        plan,
        output,
        match=found.match.value,
        tail="script" if script is not None else "upstream",
        script=script,
        overwrite=overwrite,
        rules=found.rules,
        redactor=found.redactor,
        pace=found.pace.value,
        order_gap_ms=found.order_gap.value,
        environment=found.environment,
        parent_media=load_media(parent, plan.parent),  # the copied steps' images and documents, and what the prefix serves
    )


def _say_forked(parent: Trace, plan: ForkPlan, session: Session, path: Path | None, *, scripted: bool) -> None:
    from blackbox_mitm.cassette.diff import first_divergence

    assert session.recorder is not None
    child = session.recorder.trace
    div = first_divergence(parent, child)
    where = "none" if div is None else f"step {div.index} ({div.kind})"
    n_after = session.scripted_calls if scripted else session.forwarded_calls
    after = f"{n_after} {'scripted' if scripted else 'live'} model call{'' if n_after == 1 else 's'}"
    click.echo(
        f"blackbox: forked {parent.id} at step {plan.cut} -> {path} — {len(child.steps)} steps, "
        f"{after} after the cut; first divergence from the parent: {where}",
        err=True,
    )
    for note in (*session.refused, *session.notes):
        click.echo(f"blackbox: note: {note}", err=True)


@command()
@click.argument("parent", type=click.Path(dir_okay=False))
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="print the listing as JSON")
def forks(parent: str, directory: str | None, as_json: bool) -> None:
    """List the forks of PARENT found in DIRECTORY (default: PARENT's folder), newest first, each diffed against it."""
    from blackbox_mitm.session.lineage import list_forks, render_forks

    listing = list_forks(Path(parent), Path(directory) if directory else None)
    if as_json:
        click.echo(orjson.dumps(listing, option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(render_forks(listing))
