"""Running goldens: each a command under a timeout, judged from its exit and its run's replay report.

Two ways to run one (``batch.run_suite`` picks): through the suite's one shared proxy
(``golden.shared``, what ``blackbox test`` does), or as its own
``python -m blackbox_mitm replay GOLDEN --report TMP -- CMD`` process, one proxy
each (``run_golden``, kept for callers without a proxy to share). Either way the
command runs in its own process group, which is what a timeout kills, with its
output kept as bounded tails (``golden.process``). The run's JSON report and the
exit status then decide the outcome (``classify``):

    timeout     the command outlived --timeout (SIGTERM to the group, then SIGKILL)
    divergence  a request left the recorded path (the report's difference)
    overrun     more model calls than the recording holds
    exit        the command exited non-zero without being refused
    incomplete  the command exited 0 before making every recorded call
    refused     the command exited 0 but the replay refused a model call (the report names it)
    error       the golden cannot be read or verified (the command never runs),
                or the replay itself failed before it could report
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from blackbox_mitm.cassette.records import JSONObject
from blackbox_mitm.codecs import key_env_vars, placeholder_env_vars
from blackbox_mitm.config import ConfigError
from blackbox_mitm.golden.process import TAIL_BYTES, ProcessResult, TailBuffer, run_process
from blackbox_mitm.golden.settings import SuiteSettings
from blackbox_mitm.golden.suite import GoldenCase
from blackbox_mitm.proxy.environment import default_confdir

__all__ = [
    "DEFAULT_TIMEOUT",
    "FAILURE_KINDS",
    "TAIL_BYTES",
    "GoldenResult",
    "ProcessResult",
    "TailBuffer",
    "classify",
    "details_of",
    "golden_env",
    "run_golden",
    "run_process",
    "substitute",
]

DEFAULT_TIMEOUT = 300.0
FAILURE_KINDS = ("divergence", "incomplete", "overrun", "refused", "exit", "timeout")
_PLACEHOLDER = re.compile(r"\{(run|input|cassette)\}")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


@dataclass(slots=True)
class GoldenResult:
    """One golden's outcome: ``passed``, ``failure`` (with a kind in ``FAILURE_KINDS``) or ``error``."""

    case: GoldenCase
    outcome: str
    kind: str | None = None
    message: str = ""
    details: str = ""
    duration: float = 0.0
    stdout: TailBuffer = field(default_factory=TailBuffer)
    stderr: TailBuffer = field(default_factory=TailBuffer)
    command: list[str] = field(default_factory=list)
    status: JSONObject | None = None  # the replay report as the run wrote it (read back from its file)

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"


def substitute(command: Sequence[str], case: GoldenCase) -> list[str]:
    """``{run}``, ``{input}`` and ``{cassette}`` replaced in each argument (in one pass: values are not re-read)."""
    values = {"run": case.run or "", "input": _env_safe(case.input), "cassette": str(case.path.resolve())}
    return [_PLACEHOLDER.sub(lambda m: values[m[1]], arg) for arg in command]


def golden_env(case: GoldenCase, base: Mapping[str, str]) -> dict[str, str]:
    """The environment a golden's replay (and so its command) runs with.

    Besides the run's facts, the provider keys are replaced: a library that reads
    a provider key (every registered codec's ``KEY_ENV_VARS``) but ignores the proxy must not carry the real key out of a test
    run. The agent gets BLACKBOX_REPLAY_KEY when set, else a placeholder.
    """
    from blackbox_mitm.proxy.environment import REPLAY_PLACEHOLDER_KEY

    env = dict(base)
    env["BLACKBOX_RUN"] = case.run or ""
    env["BLACKBOX_RUN_INPUT"] = _env_safe(case.input)
    env["BLACKBOX_CASSETTE"] = str(case.path.resolve())
    key = base.get("BLACKBOX_REPLAY_KEY") or REPLAY_PLACEHOLDER_KEY
    for name in key_env_vars():  # no real credential reaches a golden's command
        env.pop(name, None)
    for name in placeholder_env_vars():
        env[name] = key
    return env


def _env_safe(text: str) -> str:
    """What can go into argv and the environment: no NUL, no lone surrogate (from a JavaScript recording)."""
    return _SURROGATE.sub("\ufffd", text.replace("\0", ""))


def run_golden(
    case: GoldenCase,
    command: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    confdir: str | os.PathLike[str] | None = None,
    base_env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    cancel: threading.Event | None = None,
    settings: SuiteSettings | None = None,
) -> GoldenResult:
    """Replay one golden strictly under ``command`` and judge it. A golden with an ``error`` is never run.

    Its replay gets the golden's own settings and the suite's (``golden.settings``: masks, pace, redaction).
    """
    if case.error is not None:
        return GoldenResult(case, "error", "error", case.error, f"the golden cannot be tested, so the command was not run:\n{case.error}")
    argv = substitute(command, case)
    env = golden_env(case, os.environ if base_env is None else base_env)
    with tempfile.TemporaryDirectory(prefix="blackbox-golden-") as tmp:
        report = Path(tmp) / "report.json"
        replay = [sys.executable, "-m", "blackbox_mitm", "replay", str(case.path), "--match", "strict", "--report", str(report)]
        # Always explicit: the replay's proxy and its client environment must name the same CA.
        replay += ["--confdir", str(confdir if confdir is not None else default_confdir())]
        try:
            replay += (settings or SuiteSettings()).replay_args(case.path)
        except ConfigError as exc:
            return GoldenResult(case, "error", "error", str(exc), f"the golden cannot be tested, so the command was not run:\n{exc}")
        try:
            proc = run_process([*replay, "--", *argv], env=env, timeout=timeout, cwd=cwd, cancel=cancel)
        except OSError as exc:
            message = f"the replay could not be started: {exc}"
            return GoldenResult(case, "error", "error", message, message, command=argv)
        status = _read_report(report)
    outcome, kind, message = classify(proc, status, timeout=timeout)
    # A divergence's message is the report's own difference: the report alone says it.
    details = details_of("" if kind == "divergence" else message, argv, status)
    return GoldenResult(case, outcome, kind, message, details, proc.duration, proc.stdout, proc.stderr, argv, status)


def _read_report(path: Path) -> JSONObject | None:
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def classify(proc: ProcessResult, status: Mapping[str, Any] | None, *, timeout: float) -> tuple[str, str | None, str]:
    """(outcome, kind, message) from how the replay process ended and its report (see the module docstring)."""
    from blackbox_mitm.matcher import verdict
    from blackbox_mitm.matcher.outcomes import Divergence

    calls = _calls_line(status)
    if proc.cancelled:
        return "error", "error", "the run was interrupted before the command finished"
    if proc.timed_out:
        return "failure", "timeout", f"the command did not finish within {timeout:g} s and was killed{calls}"
    if status is None:
        return "error", "error", f"the replay ended ({_describe_code(proc.exit_code)}) without writing its report; see system-err"
    outcome = verdict(status)
    run = str(status.get("run") or "?")
    if outcome == "diverged":
        first = status.get("first_divergence")
        if isinstance(first, Mapping):
            return "failure", "divergence", Divergence.from_json(first, run_id=run).human()
        return "failure", "divergence", f"the agent left the recorded path of run {run} ({status.get('divergences')} refused requests)"
    if outcome == "overran":
        extra = int(status.get("exhausted_calls") or 0)
        return (
            "failure",
            "overrun",
            f"the agent overran recorded run {run}: all {status.get('model_calls', 0)} recorded model calls were served "
            f"and it asked for {extra} more",
        )
    code = status.get("exit_code")
    command_code = code if isinstance(code, int) else proc.exit_code
    if command_code != 0:
        return "failure", "exit", f"the command {_describe_code(command_code)}{calls}"
    if outcome == "incomplete":
        missing = ", ".join(str(s) for s in list(status.get("incomplete") or [])[:10])
        return (
            "failure",
            "incomplete",
            f"the agent stopped early: it made {status.get('model_calls_served', 0)} of {status.get('model_calls', 0)} "
            f"recorded model calls (never asked for model_input step {missing})",
        )
    if outcome == "refused":
        named = [str(r) for r in [*(status.get("refused") or []), *(status.get("unrecorded") or [])]]
        return "failure", "refused", f"the replay refused {len(named)} model call(s){calls}: " + "; ".join(named[:3])
    if proc.exit_code != 0:
        return "failure", "exit", f"the replay {_describe_code(proc.exit_code)} after the command exited 0{calls}; see system-err"
    return "passed", None, f"the agent made exactly the recorded model calls{calls}"


def _calls_line(status: Mapping[str, Any] | None) -> str:
    if status is None:
        return ""
    return f" after {status.get('model_calls_served', 0)} of {status.get('model_calls', 0)} recorded model calls"


def _describe_code(code: int) -> str:
    signum = -code if code < 0 else code - 128 if code > 128 else 0
    if signum:
        try:
            return f"exited {code} (killed by {signal.Signals(signum).name})"
        except ValueError:
            pass
    return f"exited {code}"


def details_of(message: str, argv: Sequence[str], status: Mapping[str, Any] | None) -> str:
    from blackbox_mitm.matcher import render_report

    lines = [message, ""] if message else []
    lines.append("command: " + subprocess.list2cmdline(list(argv)))
    if status is not None:
        lines += ["", render_report(status)]
        refused = [str(r) for r in status.get("refused") or []]
        if refused:
            lines += ["", "refused by the replay:", *(f"  {r}" for r in refused[:20])]
    return "\n".join(lines)
