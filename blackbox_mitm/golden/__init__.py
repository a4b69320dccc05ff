"""Golden runs: a folder of verified cassettes replayed strictly under an agent command, judged, reported as JUnit.

``suite`` manages the folder; ``runner`` runs a suite: every golden's command
through one shared proxy (``shared``: each golden is a run named in its client's
proxy URL), or one ``blackbox replay`` subprocess per golden; ``process`` runs a
command under a timeout with bounded output tails; ``progress`` shows a live line
on a terminal; ``shards`` splits a suite over CI machines and merges their JUnit;
``junit`` writes the report; ``update`` re-records the goldens an agent left
(``blackbox test --update``). ``blackbox golden`` and ``blackbox test`` are the
command-line face (``blackbox_mitm.cli.golden_commands``).
"""

from __future__ import annotations

from blackbox_mitm.golden.batch import run_suite
from blackbox_mitm.golden.junit import build_junit, junit_bytes, write_junit, xml_text
from blackbox_mitm.golden.runner import (
    DEFAULT_TIMEOUT,
    FAILURE_KINDS,
    TAIL_BYTES,
    GoldenResult,
    TailBuffer,
    run_golden,
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
