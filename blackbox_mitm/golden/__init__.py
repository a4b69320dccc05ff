"""Golden runs: a folder of verified cassettes replayed strictly under an agent command, judged, reported as JUnit.

``suite`` manages the folder, ``runner`` runs one golden (a ``blackbox replay``
subprocess with a timeout and bounded output tails) or a suite of them, and
``junit`` writes the report. ``blackbox golden`` and ``blackbox test`` are the
command-line face (``blackbox_mitm.cli.golden_commands``).
"""

from __future__ import annotations

from blackbox_mitm.golden.junit import build_junit, junit_bytes, write_junit, xml_text
from blackbox_mitm.golden.runner import (
    DEFAULT_TIMEOUT,
    FAILURE_KINDS,
    TAIL_BYTES,
    GoldenResult,
    TailBuffer,
    run_golden,
    run_suite,
)
from blackbox_mitm.golden.suite import (
    DEFAULT_GOLDENS,
    GoldenCase,
    GoldenError,
    GoldenInfo,
    add_golden,
    collect,
    list_goldens,
    remove_golden,
    resolve_runs,
    run_input,
)

__all__ = [
    "DEFAULT_GOLDENS",
    "DEFAULT_TIMEOUT",
    "FAILURE_KINDS",
    "TAIL_BYTES",
    "GoldenCase",
    "GoldenError",
    "GoldenInfo",
    "GoldenResult",
    "TailBuffer",
    "add_golden",
    "build_junit",
    "collect",
    "junit_bytes",
    "list_goldens",
    "remove_golden",
    "resolve_runs",
    "run_golden",
    "run_input",
    "run_suite",
    "write_junit",
    "xml_text",
]
