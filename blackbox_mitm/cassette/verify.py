"""Verify a cassette: its format version, its hash chain, and the spec's provider-neutrality rules.

``verify_trace`` returns every ``Problem`` it finds (empty when the cassette is
valid); ``verify_file`` reads a file first. Each takes the providers' facts as
``facts=`` (a ``ProviderFacts`` the codec registry builds; this layer sits below
the codecs and never imports them): callers above the codecs use
``codecs.verified``, which passes the registry's. The checks:

* **format**: ``version`` is 2 (v1 cannot be read: re-record); the run has
  steps (``empty``: every recording ends with a terminal event, so a run without
  steps is no run, and there is nothing in it to replay); no object repeats a
  key (``duplicate_key``: readers disagree on which value counts); each step's
  ``index`` is its position, its ``id`` is ``${traceId}:${index}``, its type is
  known and its payload has the spec's shape (``SHAPE``).
* **chain**: the first ``prevHash`` is null, every other one is the previous
  step's ``hash``, and every ``hash`` is the SHA-256 of the step's canonical
  ``{index, type, timestamp, payload, prevHash}`` recomputed here.
* **neutrality, structure** — ids, types, keys and metadata, everywhere outside
  the user's data: no provider ids (``ProviderFacts.id_prefixes``), no provider
  response fields (``ProviderFacts.response_keys``), no API-key names (``OPENAI_API_KEY``,
  ``x-api-key``, ``authorization``...), and tool-call ids of Blackbox's own form
  ``call-N``. A ``params`` key fails only when it is a provider response field or
  names a credential: the spec fixes no list of neutral control names, so
  another implementation's ``max_tokens`` / ``top_p`` are as good as our
  ``maxTokens`` / ``topP`` (``ProviderFacts.neutral_params``, and every codec's wire names).
* **neutrality, data** — tool inputs and results, errors, input schemas, message
  text, the system prompt, tool names and descriptions, request-control values,
  and a terminal event's ``result`` / ``message`` text: only realistic credentials
  (``sk-ant-…``, ``sk-proj-…``, ``sk-…``, ``AIza…``, ``gsk_…``, AWS access key ids ``AKIA…`` /
  ``ASIA…``, Google OAuth tokens ``ya29.…``, ``Bearer …`` of a
  key's length and randomness), and credentials in the other schemes a request
  carries them in (``_scheme_credentials``): ``Authorization: Token …`` and
  ``Basic …``, an ``x-goog-api-key`` / ``x-api-key`` / ``api-key`` header line, and
  ``key=`` / ``api_key=`` query parameters. A tool that returns ``{"usage": 42}``
  or reads source code mentioning ``toolu_`` is not a leak. One exception: a
  provider id inside ``<tool-use-id>…</tool-use-id>`` (``provider_id``), the tag
  Claude Code writes a tool call's id into its task notifications with — the
  recorder replaces every id it mapped by its call-N there, so one left over is
  a leak, not data. Ids elsewhere in text are not flagged: agents read code,
  logs and docs full of realistic ``call_…`` / ``toolu_…`` examples, and the
  recorder never saw those as ids (``session/echoed_ids.py``).

Speed: each payload is serialized once (``canonical_bytes``, needed for its
hash); a few fast scans of those bytes (``neutrality.scan``) decide whether anything in it
could break a neutrality rule. Only then is the payload walked in Python, and its
user data only when something shaped like a credential is in it. The repeated-key
rule costs two byte counts: the file's quotes against those of what was parsed
(``jsonfile.count_quotes``); only when they differ is the file parsed again, slowly,
to name the key.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blackbox_mitm.cassette import compression, verified_cache
from blackbox_mitm.cassette.canonical import canonical_bytes, step_hash_from_canonical_payload
from blackbox_mitm.cassette.facts import ProviderFacts
from blackbox_mitm.cassette.jsonfile import count_quotes, find_duplicate_key, read_file
from blackbox_mitm.cassette.load import load_trace_bytes
from blackbox_mitm.cassette.neutrality import FIELDS, STRUCT, scan
from blackbox_mitm.cassette.neutrality import Walker as _Walker
from blackbox_mitm.cassette.problems import Problem, quote, short_digest
from blackbox_mitm.cassette.stepwise import FileSource
from blackbox_mitm.cassette.store import parse_document, trace_from_json
from blackbox_mitm.cassette.trace import CURRENT_TRACE_VERSION, STEP_TYPES, Trace, TraceStep
from blackbox_mitm.errors import CassetteError, UnverifiedCassetteError

__all__ = [
    "Problem",
    "ProviderFacts",
    "UnverifiedCassetteError",
    "VerifyResult",
    "load_verified",
    "verify_file",
    "verify_trace",
]


@dataclass(slots=True)
class VerifyResult:
    """``verify_file``'s answer: the file, how many steps it holds, what is wrong with it."""

    path: Path
    steps: int
    problems: list[Problem] = field(default_factory=list)
    trace: Trace | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


def load_verified(path: str | os.PathLike[str], *, facts: ProviderFacts, recover: bool = True) -> Trace:
    """Load a cassette and refuse it (``UnverifiedCassetteError``) unless it verifies: hash chain, ids, neutrality.

    ``recover=False`` never touches a journal beside it (a read-only look).

    The same bytes that verified before, under the same facts and this verifier, are not
    re-checked step by step (``verified_cache``: keyed by their SHA-256); the files beside
    the cassette (exchanges, media) are checked every time.
    """
    trace, raw = load_trace_bytes(path, recover=recover)
    key = verified_cache.verified_key(raw.sha256 if isinstance(raw, FileSource) else hashlib.sha256(raw).hexdigest(), facts)
    problems: list[Problem] = []
    if not verified_cache.seen(key):
        problems = verify_trace(trace, source=raw, facts=facts)
        if not problems:
            verified_cache.remember(key, len(trace.steps))
    del raw
    problems += exchange_problems(path, trace)
    if problems:
        raise UnverifiedCassetteError(str(path), problems)
    return trace


def verify_file(path: str | os.PathLike[str], *, facts: ProviderFacts) -> VerifyResult:
    """Read and verify one cassette file. Never modifies anything (a journal beside it is left alone).

    Raises ``CassetteError`` when the file cannot be read or is not JSON at all; a
    JSON document that is not a valid v2 cassette (a v1 file, a wrong field type, an
    unknown step type) is answered with problems instead.

    The file is read one step at a time (``stepwise``: about 1.5x the file at the
    peak, not the 3.9x of a whole-document parse); a file that reader cannot read
    exactly is parsed whole, which words its problems as always.
    """
    from blackbox_mitm.cassette.stepwise import load_stepwise

    p = Path(path)
    read = load_stepwise(p)  # never recovers a journal: a read-only look
    if read is not None:
        trace, source = read
        return VerifyResult(p, len(trace.steps), verify_trace(trace, source=source, facts=facts) + exchange_problems(p, trace), trace)
    raw = compression.decode(p, read_file(p))  # RUN.json.gz / RUN.json.zst: the plain bytes
    data = parse_document(raw, path=str(p))
    try:
        trace = trace_from_json(data, path=str(p))
    except CassetteError as exc:
        return VerifyResult(p, _count_steps(data), [_load_problem(exc)])
    return VerifyResult(p, len(trace.steps), verify_trace(trace, source=raw, facts=facts) + exchange_problems(p, trace), trace)


def exchange_problems(path: str | os.PathLike[str], trace: Trace) -> list[Problem]:
    """The run's other HTTP exchanges (the file its terminal event seals, ``cassette/exchanges.py``) checked."""
    from blackbox_mitm.cassette.exchanges import exchanges_ref_of, verify_exchanges
    from blackbox_mitm.cassette.media import verify_media

    last = len(trace.steps) - 1
    media = [Problem(last, "media", reason, "payload.media") for reason in verify_media(path, trace)]  # cassette/media.py
    ref = exchanges_ref_of(trace)
    if ref is None:
        return media
    return [Problem(last, "exchanges", reason, "payload.exchanges") for reason in verify_exchanges(path, ref)] + media


def verify_trace(trace: Trace, *, facts: ProviderFacts, source: bytes | None = None) -> list[Problem]:
    """Every problem in ``trace``, in step order; an empty list means the cassette is valid.

    ``source``: the file's bytes ``trace`` was parsed from, to rule out repeated keys.
    ``facts``: the providers' ids and fields to check against, the value the codec
    registry builds (``codecs.provider_facts()``; ``codecs.verified`` passes it).
    """
    problems: list[Problem] = []
    if not trace.steps:
        problems.append(
            Problem(
                None,
                "empty",
                "the cassette holds no steps: a run has steps (every recording ends with a run_completed or run_failed "
                "metadata event), so this is no run, and it holds no calls to replay — re-record it",
                "steps",
            )
        )
    if trace.version != CURRENT_TRACE_VERSION:
        what = (
            "a v1 cassette (legacy tool-call encoding): re-record the run" if trace.version == 1 else "re-record the run with this blackbox"
        )
        problems.append(Problem(None, "version", f"format version is {trace.version!r}, not {CURRENT_TRACE_VERSION}; {what}", "version"))
    walker = _Walker(None, problems, facts)
    for name, value in (("id", trace.id), ("parentId", trace.parentId), ("forkedFromStepId", trace.forkedFromStepId)):
        if isinstance(value, str):
            walker.structural_string(value, name)
    prev: str | None = None
    quotes = _header_quotes(trace)
    for i, step in enumerate(trace.steps):
        quotes += _verify_step(trace.id, i, step, prev, problems, facts, count=source is not None)
        prev = step.hash
    if source is not None and count_quotes(source) != quotes:
        _duplicate_key(source, problems)
    return problems


def _header_quotes(trace: Trace) -> int:
    """The quotes the trace's own fields take in its file: four keys and the id, and the lineage when set."""
    quotes = 8 + _quotes(trace.id)
    for value in (trace.parentId, trace.forkedFromStepId):
        if value is not None:
            quotes += 2 + _quotes(value)
    return quotes


def _quotes(text: str) -> int:
    return 2 + text.count('"')


def _duplicate_key(source: bytes, out: list[Problem]) -> None:
    found = find_duplicate_key(source)
    if found is None:
        return  # the file only spells some strings differently (\u escapes, extra fields)
    key, where = found
    m = re.match(r"\$\.steps\[(\d+)\]\.?", where)
    place = (where[m.end() :] or "the step") if m else where
    out.append(
        Problem(
            int(m.group(1)) if m else None,
            "duplicate_key",
            f"{place}: the key {quote(key)} appears twice in one object; JSON readers disagree on which value counts, "
            "so a cassette never repeats a key — restore the file from version control, or re-record it",
            where,
        )
    )


def _verify_step(trace_id: str, i: int, step: TraceStep, prev: str | None, out: list[Problem], facts: ProviderFacts, *, count: bool) -> int:
    """Check one step; with ``count``, the quotes it takes in its file (for the repeated-key rule)."""
    if step.index != i:
        out.append(Problem(i, "index", f"index is {step.index!r} but the step is number {i} in the file", "index"))
    if step.id != f"{trace_id}:{i}":
        out.append(Problem(i, "id", f"id is {quote(step.id)}, expected {quote(f'{trace_id}:{i}')} (`${{traceId}}:${{index}}`)", "id"))
    if step.type not in STEP_TYPES:
        out.append(Problem(i, "type", f"unknown step type {quote(step.type)}; expected one of {', '.join(STEP_TYPES)}", "type"))
    if step.prevHash != prev:
        if prev is None:
            reason = f"the first step's prevHash must be null, found {quote(step.prevHash)}"
        else:
            reason = (
                f"prevHash {short_digest(step.prevHash)} is not step {i - 1}'s hash {short_digest(prev)}: "
                "the chain is broken (a step was removed, inserted or reordered)"
            )
        out.append(Problem(i, "prev_hash", reason, "prevHash"))
    quotes = 0
    if count:
        quotes = 14 + _quotes(step.id) + _quotes(step.type) + _quotes(step.hash) + (0 if step.prevHash is None else _quotes(step.prevHash))
    try:
        payload_json = canonical_bytes(step.payload)
    except (TypeError, ValueError) as exc:
        out.append(Problem(i, "shape", f"the payload is not JSON ({exc})", "payload"))
        return quotes
    if count:
        quotes += payload_json.count(b'"')
    expected = step_hash_from_canonical_payload(step.index, step.type, step.timestamp, payload_json, step.prevHash)
    if step.hash != expected:
        out.append(
            Problem(
                i,
                "hash",
                f"hash {short_digest(step.hash)} does not match the step's content (recomputed {short_digest(expected)}): "
                "its payload, type, timestamp, index or prevHash was changed after recording",
                "hash",
            )
        )
    walker = _Walker(i, out, facts)
    walker.shape(step.type, step.payload)
    structure, data = scan(payload_json, facts)
    if structure:
        walker.walk(step.payload, "payload", step.type if step.type in FIELDS else STRUCT, data=data)
    return quotes


def _load_problem(exc: CassetteError) -> Problem:
    where = exc.where or "$"
    m = re.match(r"\$\.steps\[(\d+)\]", where)
    code = "version" if where == "$.version" else "format"
    return Problem(int(m.group(1)) if m else None, code, f"{exc.detail} (at {where})", where)


def _count_steps(data: Any) -> int:
    steps = data.get("steps") if isinstance(data, dict) else None
    return len(steps) if isinstance(steps, list) else 0
