"""Goldens that update themselves: ``blackbox test --update`` re-records, from where it parted, each golden the agent left.

A golden whose replay diverged, overran its recording or stopped early is
re-run as a rewind (``blackbox fork GOLDEN --live-after N``, a process of its
own): the recorded calls before the first one the agent did not make as
recorded are replayed strictly, every later call goes to the real provider (or
wherever ``--map-remote`` sends it) with the user's own key. ``N``
(``rewind_point``) is the model_output step of the last recorded call before
that one, so the tool round the agent now runs differently is recorded afresh;
``-1`` when the first call already differs (every call live).

The new run replaces the golden in its file (``install``): its ``parentId`` names the old
run, and the old file is kept, moved to ``<goldens>/.history/<name>.<old run
id>.json`` (its exchanges file with it), where ``blackbox forks`` finds the new
golden as its fork and ``blackbox diff`` compares them. Nothing is replaced
when the live re-run fails, ends in ``run_failed``, or is discarded (its
replayed prefix diverged): the golden stays as it was and the update counts as
failed. A golden that passed is never opened for writing. The golden's
settings file (``NAME.blackbox.toml``) stays: it belongs to the name.

``update_refusal`` is the guard shared with the pytest plugin and the Node
tape: with ``CI`` set, updating is refused unless asked for as ``ci``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blackbox_mitm.cassette import compression
from blackbox_mitm.cassette.diff import first_divergence
from blackbox_mitm.cassette.render import render_diff
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.codecs.verified import load_verified
from blackbox_mitm.errors import CassetteError
from blackbox_mitm.golden.process import run_process
from blackbox_mitm.golden.runner import DEFAULT_TIMEOUT, GoldenResult, substitute
from blackbox_mitm.golden.settings import SuiteSettings
from blackbox_mitm.golden.suite import SUFFIX, GoldenCase, load_verified_readonly
from blackbox_mitm.matcher.recorded import recorded_calls_of
from blackbox_mitm.proxy.environment import default_confdir

__all__ = ["HISTORY", "UPDATABLE", "UpdateResult", "install", "rewind_point", "update_golden", "update_refusal"]

HISTORY = ".history"
UPDATABLE = ("divergence", "overrun", "incomplete")  # the agent took another path; other failures are not re-recorded
DIFF_TAIL = 3  # steps of each side shown after the first divergence in the summary


@dataclass(slots=True)
class UpdateResult:
    """One golden after ``--update``: ``kept`` (it passed), ``updated`` (re-recorded) or ``failed`` (left as it was)."""

    case: GoldenCase
    outcome: str
    message: str
    kept_as: Path | None = None  # the old golden, in the history folder
    path: Path | None = None  # the new golden
    diff: str = ""


def update_refusal(mode: str | None, environ: Mapping[str, str]) -> str | None:
    """Why updating must not run here (``None``: it may). ``mode``: ``None`` (no update), ``"divergent"`` or ``"ci"``."""
    if mode is None or mode == "ci" or not environ.get("CI"):
        return None
    return (
        "CI is set: updating goldens in CI is refused, so a CI job never re-records silently; "
        "run --update on a developer machine, or pass --update=ci to update anyway"
    )


def rewind_point(trace: Trace, status: Mapping[str, Any] | None) -> int:
    """The ``--live-after`` step that re-runs live from the first recorded call the agent did not make as recorded.

    That call is the divergence's step, else the first never-asked-for call, else (an
    overrun) the end of the recording; the point is the output step of the last call
    before it, or -1 when there is none.
    """
    status = status or {}
    first = status.get("first_divergence")
    incomplete = [s for s in status.get("incomplete") or [] if isinstance(s, int)]
    if isinstance(first, Mapping) and isinstance(first.get("step"), int):
        parted = int(first["step"])
    elif incomplete:
        parted = min(incomplete)
    else:
        parted = len(trace.steps)
    before = [c.output_step for c in recorded_calls_of(trace) if c.input_step < parted]
    return max(before, default=-1)


def _live_env(case: GoldenCase, base: Mapping[str, str]) -> dict[str, str]:
    """The re-run's environment: the user's own (with the provider key: the calls after the rewind are live) and the run's facts."""
    env = dict(base)
    env["BLACKBOX_RUN"] = case.run or ""
    env["BLACKBOX_RUN_INPUT"] = case.input.replace("\0", "")
    env["BLACKBOX_CASSETTE"] = str(case.path.resolve())
    return env


def update_golden(
    result: GoldenResult,
    command: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    confdir: str | os.PathLike[str] | None = None,
    map_remote: Sequence[str] = (),
    settings: SuiteSettings | None = None,
    base_env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> UpdateResult:
    """Re-record ``result``'s golden from where its replay parted (see the module docstring); a passed one is kept as is."""
    case = result.case
    if result.passed:
        return UpdateResult(case, "kept", "it passed; left as it was")
    if result.kind not in UPDATABLE:
        return UpdateResult(
            case,
            "failed",
            f"not updated: it failed ({result.kind}: {result.message}); only a golden whose agent took another path is re-recorded",
        )
    try:
        old = load_verified_readonly(case.path)
    except CassetteError as exc:
        return UpdateResult(case, "failed", f"not updated: {exc}")
    point = rewind_point(old, result.status)
    with tempfile.TemporaryDirectory(prefix="blackbox-update-") as tmp:
        out = Path(tmp) / f"{case.name}{SUFFIX}"
        argv = _fork_argv(case, point, out, command, confdir=confdir, map_remote=map_remote, settings=settings)
        try:
            proc = run_process(argv, env=_live_env(case, os.environ if base_env is None else base_env), timeout=timeout, cwd=cwd)
        except OSError as exc:
            return UpdateResult(case, "failed", f"not updated: the live re-run could not be started: {exc}")
        said = proc.stderr.text().strip().splitlines()
        why = said[-1] if said else f"it exited {proc.exit_code}"
        if proc.timed_out:
            return UpdateResult(case, "failed", f"not updated: the live re-run did not finish within {timeout:g} s")
        if not out.is_file():
            return UpdateResult(case, "failed", f"not updated: the live re-run wrote no run ({why})")
        new = load_verified(out)
        failed = _failure(new)
        if failed is not None:
            return UpdateResult(case, "failed", f"not updated: the live re-run failed ({failed}): a golden is a run that worked")
        kept, path = install(case.path, old, out)
    div = first_divergence(old, new)
    message = f"re-recorded, replayed up to step {point} and live after it; the old golden is kept as {kept}"
    return UpdateResult(case, "updated", message, kept, path, render_diff(str(kept), old, str(path), new, div, DIFF_TAIL))


def _fork_argv(
    case: GoldenCase,
    point: int,
    out: Path,
    command: Sequence[str],
    *,
    confdir: str | os.PathLike[str] | None,
    map_remote: Sequence[str],
    settings: SuiteSettings | None,
) -> list[str]:
    """``blackbox fork GOLDEN --live-after=POINT -o OUT ... -- COMMAND``: the live re-run, compared as the suite compares."""
    argv = [sys.executable, "-m", "blackbox_mitm", "fork", str(case.path), f"--live-after={point}", "-o", str(out)]
    argv += ["--confdir", str(confdir if confdir is not None else default_confdir())]
    argv += [f"--map-remote={spec}" for spec in map_remote]
    argv += (settings or SuiteSettings()).replay_args(case.path)
    return [*argv, "--", *substitute(command, case)]


def _failure(trace: Trace) -> str | None:
    last = trace.steps[-1].payload if trace.steps else None
    if isinstance(last, dict) and last.get("event") == "run_failed":
        code = last.get("exitCode")
        return f"{last.get('reason') or 'run_failed'}" + (f", exit code {code}" if code is not None else "")
    return None


def install(golden: Path, old: Trace, new_file: Path) -> tuple[Path, Path]:
    """Put ``new_file`` in ``golden``'s place (compressed as it was); the old one moves to the history folder. (kept, new path)."""
    from blackbox_mitm.cassette.exchanges import exchanges_ref_of

    folder = golden.parent
    history = folder / HISTORY
    history.mkdir(exist_ok=True)
    name = compression.plain_name(golden).name.removesuffix(SUFFIX)
    kept = history / f"{name}.{old.id}{SUFFIX}{compression.SUFFIX_OF[compression.kind_of(golden)]}"
    staged = folder / f".{name}.update{SUFFIX}"
    staged.write_bytes(compression.encode(golden, new_file.read_bytes()))  # on the goldens' file system: two renames swap them
    ref = exchanges_ref_of(old)
    if ref is not None and (folder / str(ref["file"])).is_file():
        os.replace(folder / str(ref["file"]), history / str(ref["file"]))
    os.replace(golden, kept)
    os.replace(staged, golden)
    return kept, golden


def update_all(results: Sequence[GoldenResult], command: Sequence[str], *, say: Any = print, **options: Any) -> list[UpdateResult]:
    """``update_golden`` for each result in turn (their live calls cost money: one at a time), each reported by ``say``."""
    updates: list[UpdateResult] = []
    for result in results:
        if result.passed:
            updates.append(UpdateResult(result.case, "kept", "it passed; left as it was"))
            continue
        say(f"blackbox test: updating {result.case.name}: {result.kind} — re-running it live from where it parted")
        update = update_golden(result, command, **options)
        say(f"blackbox test: {update.case.name}: {update.message}")
        if update.diff:
            say("what changed (blackbox diff of the old golden and the new):\n" + update.diff.rstrip("\n"))
        updates.append(update)
    return updates


def update_line(updates: Sequence[UpdateResult]) -> str:
    """``N goldens: K unchanged, U updated, F not updated``."""
    counts = {k: sum(u.outcome == k for u in updates) for k in ("kept", "updated", "failed")}
    noun = "golden" if len(updates) == 1 else "goldens"
    return (
        f"{len(updates)} {noun}: {counts['kept']} passed and left as they were, {counts['updated']} updated, {counts['failed']} not updated"
    )
