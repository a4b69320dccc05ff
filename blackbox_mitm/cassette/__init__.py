"""The cassette: trace format v2 — data model, canonical JSON, hash chain, files, journal.

Plain Python with no mitmproxy import; everything else reads and writes through it.
"""

from blackbox_mitm.cassette.canonical import canonical_bytes, step_hash
from blackbox_mitm.cassette.journal import Journal, journal_path, recover_journal
from blackbox_mitm.cassette.load import load_trace
from blackbox_mitm.cassette.payloads import tool_calls_of
from blackbox_mitm.cassette.store import dump_trace, parse_trace, save_trace
from blackbox_mitm.cassette.trace import CURRENT_TRACE_VERSION, STEP_TYPES, Trace, TraceStep

__all__ = [
    "CURRENT_TRACE_VERSION",
    "STEP_TYPES",
    "Journal",
    "Trace",
    "TraceStep",
    "canonical_bytes",
    "dump_trace",
    "journal_path",
    "load_trace",
    "parse_trace",
    "recover_journal",
    "save_trace",
    "step_hash",
    "tool_calls_of",
]
