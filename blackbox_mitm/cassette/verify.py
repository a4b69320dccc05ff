"""Verify a cassette: its format version, its hash chain, and the spec's provider-neutrality rules.

``verify_trace`` returns every ``Problem`` it finds (empty when the cassette is
valid); ``verify_file`` reads a file first. The checks:

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
hash); a few fast scans of those bytes (``_scan``) decide whether anything in it
could break a neutrality rule. Only then is the payload walked in Python, and its
user data only when something shaped like a credential is in it. The repeated-key
rule costs two byte counts: the file's quotes against those of what was parsed
(``jsonfile.count_quotes``); only when they differ is the file parsed again, slowly,
to name the key.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blackbox_mitm.cassette import compression
from blackbox_mitm.cassette.canonical import canonical_bytes, step_hash_from_canonical_payload
from blackbox_mitm.cassette.facts import ProviderFacts, registered
from blackbox_mitm.cassette.jsonfile import count_quotes, find_duplicate_key, read_file
from blackbox_mitm.cassette.payloads import OUTPUT_TYPES, json_kind
from blackbox_mitm.cassette.store import load_trace_bytes, parse_document, trace_from_json
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

_OUTPUT_TYPES = OUTPUT_TYPES  # the ModelOutput shapes (cassette.payloads)
_CALL_ID = re.compile(r"call-(?:0|[1-9][0-9]*)")


# Names of credentials: environment variables (OPENAI_API_KEY, ANTHROPIC_AUTH_TOKEN),
# headers (x-api-key, authorization) and fields (apiKey).
_CREDENTIAL_NAME_RE = r"(?i:(?:[a-z0-9]+[_-])*api[_-]?key|(?:[a-z0-9]+[_-])*auth[_-]?token|(?:proxy[_-])?authorization)"
# Shapes of real credentials; ``_realistic`` then asks for a key's randomness.
_SECRET_RE = (
    r"(?:sk-ant-[A-Za-z0-9_-]{32,}"
    r"|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{32,}"
    r"|sk-[A-Za-z0-9]{32,}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|gsk_[A-Za-z0-9]{40,}"
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"  # an AWS access key id (long-term, temporary)
    r"|ya29\.[A-Za-z0-9_-]{20,}"  # a Google OAuth access token
    r"|[Bb]earer +[A-Za-z0-9._~+/-]{24,}=*)"
)

_credential_name = re.compile(_CREDENTIAL_NAME_RE, re.ASCII)
_secret = re.compile(r"(?<![A-Za-z0-9_-])" + _SECRET_RE)

# The pre-scan of a payload's canonical JSON. Each test is necessary for something
# the walk below can flag, so a payload that passes them all is clean and is not
# walked. Regular expressions that start with a character class, or with a long
# alternation, crawl (tens of MB/s); these start with a literal or are substring
# searches, and run at hundreds of MB/s or more.
# (the structural pre-scan depends on the providers: ``ProviderFacts.suspect_structure``)
# Every credential name holds one of these once lowercased.
_CREDENTIAL_WORDS = (b"api_key", b"api-key", b"apikey", b"auth_token", b"auth-token", b"authtoken", b"authorization")
# Every secret shape matches one of these (looser, each led by a literal).
_ECHO_LEAD = b"<tool-use-id>"
_SECRET_GATES = (
    re.compile(rb"sk-[A-Za-z0-9_-]{32}"),
    re.compile(rb"AIza[0-9A-Za-z_-]{35}"),
    re.compile(rb"gsk_[A-Za-z0-9]{40}"),
    re.compile(rb"AKIA[A-Z0-9]{16}|ASIA[A-Z0-9]{16}"),
    re.compile(rb"ya29\.[A-Za-z0-9_-]{20}"),
    re.compile(rb"earer +[A-Za-z0-9._~+/-]{24}"),
)


@functools.lru_cache(maxsize=8)
def _echo_tag(prefixes: tuple[str, ...]) -> re.Pattern[str]:
    """A provider id in the tag an agent echoes a tool call's id in (Claude Code's ``<tool-use-id>``)."""
    ids = "|".join(re.escape(p) for p in prefixes)
    return re.compile(rf"<tool-use-id>\s*((?:{ids})[A-Za-z0-9_-]+)\s*</tool-use-id>")


def _scan(payload_json: bytes, facts: ProviderFacts) -> tuple[bool, bool]:
    """(walk the structure?, walk the user's data too?) for a payload's canonical JSON."""
    if any(rx.search(payload_json) for rx in _SECRET_GATES):
        return True, True
    if _ECHO_LEAD in payload_json and _echo_tag(facts.id_prefixes).search(payload_json.decode("utf-8", "replace")):
        return True, True
    lowered = payload_json.lower()
    words = any(word in lowered for word in _CREDENTIAL_WORDS)
    if (words or _QUERY_KEY.search(lowered)) and _scheme_credential(payload_json, lowered) is not None:
        return True, True
    return words or any(rx.search(payload_json) for rx in facts.suspect_structure), False


# Credentials in the other schemes a request carries them in: an Authorization header's
# ``Token`` or ``Basic`` value, an API-key header line (``x-goog-api-key: …``), and a
# ``key=`` / ``api_key=`` query parameter. Searched in the lowercased bytes; the value
# is then read from the original bytes at the same offsets and judged (``_scheme_value``).
# ``_scan`` looks for them only in a payload that names a credential (``authorization``,
# ``api-key``, ``api_key``: ``_CREDENTIAL_WORDS``) or holds a ``?key=`` / ``&key=``
# query parameter (``_QUERY_KEY``, led by a literal: one fast pass).
_SCHEMES: tuple[tuple[str, re.Pattern[bytes]], ...] = (
    ("token", re.compile(rb"token +([a-z0-9._~+/-]{16,}=*)")),
    ("basic", re.compile(rb"basic +([a-z0-9+/]{4,}={0,2})")),
    ("api-key", re.compile(rb"api-key\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?([a-z0-9._~+/-]{16,})")),
    ("key", re.compile(rb"key=([a-z0-9._~%+/-]{16,})")),
)
_QUERY_KEY = re.compile(rb"key=(?<=[?&]key=)[a-z0-9._~%+/-]{16}")
_QUERY_LEADS = (b"?", b"&", b"?api_", b"&api_", b"?api-", b"&api-", b"?api", b"&api")
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")


def _scheme_credential(data: bytes, lowered: bytes | None = None) -> str | None:
    """A credential of another scheme in ``data`` (UTF-8), redacted for a message; None when there is none."""
    lowered = data.lower() if lowered is None else lowered  # ASCII only: offsets stay the same
    for scheme, pattern in _SCHEMES:
        for m in pattern.finditer(lowered):
            value = data[m.start(1) : m.end(1)].decode()
            if _scheme_value(scheme, value, lowered[max(0, m.start() - 5) : m.start()]):
                return f"{scheme} {value[:4]}… ({len(value)} characters)"
    return None


def _scheme_value(scheme: str, value: str, before: bytes) -> bool:
    if scheme == "key":
        return before.endswith(_QUERY_LEADS) and _realistic(value)
    if scheme in ("token", "basic") and before[-1:].isalnum():
        return False  # part of a longer word ("keytoken abc…")
    return _basic_pair(value) if scheme == "basic" else _realistic(value)


def _basic_pair(value: str) -> bool:
    """A Basic credential: base64 of ``user:password``, both non-empty and printable."""
    if not _BASE64.fullmatch(value) or len(value) % 4:
        return False
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except ValueError:
        return False
    user, sep, password = decoded.partition(":")
    return bool(sep and user and password and decoded.isprintable())


# The payload's own structure, per step type: fields holding the user's data (DATA),
# or a nested structure of a known kind. Any other field is structure.
_DATA = "data"
_STRUCT = "struct"
_FIELDS: dict[str, dict[str, str]] = {
    "model_input": {"messages": "messages", "tools": "tools", "systemPrompt": _DATA, "params": "params"},
    "message": {"content": "content"},
    # A media part's reference (url, file) and file name are the user's data (payloads.MediaPart).
    "part": {
        "text": _DATA,
        "toolName": _DATA,
        "toolInput": _DATA,
        "result": _DATA,
        "error": _DATA,
        "url": _DATA,
        "file": _DATA,
        "name": _DATA,
        "data": _DATA,  # a compaction part's opaque compacted history (payloads.CompactionPart)
    },
    "tool": {"name": _DATA, "description": _DATA, "inputSchema": _DATA},
    "model_output": {
        "text": _DATA,
        "toolName": _DATA,
        "toolInput": _DATA,
        "calls": "calls",
        "reasoning": "reasoning",
        "compaction": "part",
    },
    # Blackbox's extension (payloads.ReasoningPart): what the model thought, and its provider's opaque signature.
    "reasoning_part": {"text": _DATA, "summary": _DATA, "signature": _DATA, "data": _DATA},
    "call": {"toolName": _DATA, "toolInput": _DATA},
    "tool_call": {"toolName": _DATA, "toolInput": _DATA},
    "tool_result": {"toolName": _DATA, "result": _DATA, "error": _DATA},
    # A terminal event's final answer and error message are text the agent wrote.
    "metadata": {"result": _DATA, "message": _DATA, "toolName": _DATA},
}
_LIST_OF = {"messages": "message", "tools": "tool", "calls": "call", "reasoning": "reasoning_part"}
_TOKEN_NAMES = ("input", "output", "cachedInput", "reasoning")  # model_output.tokens (payloads.Tokens)


@dataclass(frozen=True, slots=True)
class Problem:
    """One broken rule: the step it is in (None for the trace itself), a short code, the reason.

    Codes: ``version``, ``format`` (a file the loader refuses), ``index``, ``id``,
    ``type``, ``shape``, ``prev_hash``, ``hash``, ``provider_id``, ``provider_field``,
    ``param``, ``tool_call_id``, ``credential_name``, ``credential``, ``exchanges`` (the exchanges file beside the cassette).
    """

    step: int | None
    code: str
    reason: str
    where: str | None = None

    def __str__(self) -> str:
        return f"step {self.step}: {self.reason}" if self.step is not None else self.reason

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "code": self.code, "where": self.where, "reason": self.reason}


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


def load_verified(path: str | os.PathLike[str], *, recover: bool = True, facts: ProviderFacts | None = None) -> Trace:
    """Load a cassette and refuse it (``UnverifiedCassetteError``) unless it verifies: hash chain, ids, neutrality.

    ``recover=False`` never touches a journal beside it (a read-only look).
    """
    trace, raw = load_trace_bytes(path, recover=recover)
    problems = verify_trace(trace, source=raw, facts=facts)
    del raw
    problems += exchange_problems(path, trace)
    if problems:
        raise UnverifiedCassetteError(str(path), problems)
    return trace


def verify_file(path: str | os.PathLike[str], *, facts: ProviderFacts | None = None) -> VerifyResult:
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

    ref = exchanges_ref_of(trace)
    if ref is None:
        return []
    last = len(trace.steps) - 1
    return [Problem(last, "exchanges", reason, "payload.exchanges") for reason in verify_exchanges(path, ref)]


def verify_trace(trace: Trace, *, source: bytes | None = None, facts: ProviderFacts | None = None) -> list[Problem]:
    """Every problem in ``trace``, in step order; an empty list means the cassette is valid.

    ``source``: the file's bytes ``trace`` was parsed from, to rule out repeated keys.
    ``facts``: the providers' ids and fields to check against (``codecs.provider_facts()``;
    by default the ones the codec registry registered, ``cassette.facts``).
    """
    facts = registered() if facts is None else facts
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
    for name in ("id", "parentId", "forkedFromStepId"):
        value = getattr(trace, name)
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
            f"{place}: the key {_quote(key)} appears twice in one object; JSON readers disagree on which value counts, "
            "so a cassette never repeats a key — restore the file from version control, or re-record it",
            where,
        )
    )


def _verify_step(trace_id: str, i: int, step: TraceStep, prev: str | None, out: list[Problem], facts: ProviderFacts, *, count: bool) -> int:
    """Check one step; with ``count``, the quotes it takes in its file (for the repeated-key rule)."""
    if step.index != i:
        out.append(Problem(i, "index", f"index is {step.index!r} but the step is number {i} in the file", "index"))
    if step.id != f"{trace_id}:{i}":
        out.append(Problem(i, "id", f"id is {_quote(step.id)}, expected {_quote(f'{trace_id}:{i}')} (`${{traceId}}:${{index}}`)", "id"))
    if step.type not in STEP_TYPES:
        out.append(Problem(i, "type", f"unknown step type {_quote(step.type)}; expected one of {', '.join(STEP_TYPES)}", "type"))
    if step.prevHash != prev:
        if prev is None:
            reason = f"the first step's prevHash must be null, found {_quote(step.prevHash)}"
        else:
            reason = (
                f"prevHash {_short(step.prevHash)} is not step {i - 1}'s hash {_short(prev)}: "
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
                f"hash {_short(step.hash)} does not match the step's content (recomputed {_short(expected)}): "
                "its payload, type, timestamp, index or prevHash was changed after recording",
                "hash",
            )
        )
    walker = _Walker(i, out, facts)
    walker.shape(step.type, step.payload)
    structure, data = _scan(payload_json, facts)
    if structure:
        walker.walk(step.payload, "payload", step.type if step.type in _FIELDS else _STRUCT, data=data)
    return quotes


class _Walker:
    """Walks one payload, knowing at each node whether it is structure or the user's data."""

    __slots__ = ("facts", "out", "step")

    def __init__(self, step: int | None, out: list[Problem], facts: ProviderFacts) -> None:
        self.step = step
        self.out = out
        self.facts = facts

    def add(self, code: str, where: str, reason: str) -> None:
        self.out.append(Problem(self.step, code, f"{where}: {reason}", where))

    # -- the spec's shapes (always checked; cheap: top-level fields only) --------------

    def shape(self, step_type: str, payload: Any) -> None:
        if not isinstance(payload, dict):
            self.add("shape", "payload", f"a {step_type} payload must be an object, found {json_kind(payload)}")
            return
        if step_type == "model_input":
            self._need(payload, "messages", list)
            self._may(payload, "tools", list)
            self._may(payload, "systemPrompt", str)
            self._may(payload, "model", str)
            params = payload.get("params")
            if self._may(payload, "params", dict) and isinstance(params, dict):
                for key in params:
                    self.param_key(key, f"payload.params{_key_path(key)}")
        elif step_type == "model_output":
            self._tokens(payload)
            kind = payload.get("type")
            if kind not in _OUTPUT_TYPES:
                self.add("shape", "payload.type", f"a model_output's type must be one of {', '.join(_OUTPUT_TYPES)}, found {_quote(kind)}")
            elif kind == "final_answer":
                self._need(payload, "text", str)
            elif kind == "tool_call":
                self._call(payload, "payload")
            else:
                self._may(payload, "text", str)
                calls = payload.get("calls")
                if self._need(payload, "calls", list) and isinstance(calls, list):
                    for n, call in enumerate(calls):
                        if isinstance(call, dict):
                            self._call(call, f"payload.calls[{n}]")
                        else:
                            self.add("shape", f"payload.calls[{n}]", f"a tool call must be an object, found {json_kind(call)}")
        elif step_type == "tool_call":
            self._call(payload, "payload")
        elif step_type == "tool_result":
            self._need(payload, "toolCallId", str)
            self._need(payload, "toolName", str)
            if ("result" in payload) == ("error" in payload):
                self.add("shape", "payload", "a tool_result holds exactly one of `result` and `error`")
            self._may(payload, "error", str)

    def _tokens(self, payload: dict[str, Any]) -> None:
        """Blackbox's ``tokens`` extension: an object of counts (non-negative integers) in the neutral names."""
        counts = payload.get("tokens")
        if not self._may(payload, "tokens", dict) or not isinstance(counts, dict):
            return
        for key, value in counts.items():
            if key not in _TOKEN_NAMES:
                self.add(
                    "shape", f"payload.tokens{_key_path(key)}", f"a token count is one of {', '.join(_TOKEN_NAMES)}, not {_quote(key)}"
                )
            elif not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
                self.add("shape", f"payload.tokens{_key_path(key)}", f"a token count is a non-negative integer, found {json_kind(value)}")

    def param_key(self, key: str, where: str) -> None:
        """A request control's name: any name but a provider response field or a credential's."""
        if key in self.facts.control_names:
            return
        if key in self.facts.response_key_set:
            self.add("param", where, f"{_quote(key)} is a provider response field, not a request control; it never enters a cassette")
        elif _credential_name.fullmatch(key):
            self.add("credential_name", where, f"the key {_quote(key)} names a credential; API keys never enter a cassette")
        else:
            self._secret(key, where)

    def _call(self, call: dict[str, Any], where: str) -> None:
        self._need(call, "toolCallId", str, where)
        self._need(call, "toolName", str, where)
        if "toolInput" not in call:
            self.add("shape", f"{where}.toolInput", "the tool call has no `toolInput`")

    def _need(self, obj: dict[str, Any], key: str, typ: type, where: str = "payload") -> bool:
        if key not in obj:
            self.add("shape", f"{where}.{key}", f"the required field `{key}` is missing")
            return False
        return self._may(obj, key, typ, where)

    def _may(self, obj: dict[str, Any], key: str, typ: type, where: str = "payload") -> bool:
        if key in obj and not isinstance(obj[key], typ):
            want = {"list": "an array", "dict": "an object", "str": "a string"}[typ.__name__]
            self.add("shape", f"{where}.{key}", f"`{key}` must be {want}, found {json_kind(obj[key])}")
            return False
        return True

    # -- neutrality (only for payloads that ``_scan`` could not clear) -------------------

    def walk(self, value: Any, where: str, kind: str, *, data: bool = True) -> None:
        """Check ``value``'s structure; its user data too when ``data`` (a secret's shape was seen)."""
        stack: list[tuple[Any, str, str]] = [(value, where, kind)]
        while stack:
            node, path, kind = stack.pop()
            if kind == _DATA:
                if data:
                    self._data(node, path)
                continue
            if kind == "content":
                if isinstance(node, str):
                    if data:
                        self._data(node, path)
                    continue
                kind = "parts"
            if kind == "parts" or kind in _LIST_OF:
                if isinstance(node, list):
                    item_kind = "part" if kind == "parts" else _LIST_OF[kind]
                    stack.extend((item, f"{path}[{n}]", item_kind) for n, item in reversed(list(enumerate(node))))
                    continue
                kind = _STRUCT
            if kind == "params":
                # Keys were checked against the neutral params; values are the user's settings.
                if isinstance(node, dict):
                    stack.extend((v, f"{path}{_key_path(k)}", _DATA) for k, v in reversed(node.items()))
                    continue
                kind = _STRUCT
            fields = _FIELDS.get(kind)
            if isinstance(node, dict):
                children = []
                for key, child in node.items():
                    child_path = f"{path}{_key_path(key)}"
                    self.structural_key(key, child_path)
                    if key == "toolCallId":
                        self.call_id(child, child_path)
                        continue
                    children.append((child, child_path, fields.get(key, _STRUCT) if fields else _STRUCT))
                stack.extend(reversed(children))
            elif isinstance(node, list):
                stack.extend((item, f"{path}[{n}]", _STRUCT) for n, item in reversed(list(enumerate(node))))
            elif isinstance(node, str):
                self.structural_string(node, path)

    def structural_key(self, key: str, where: str) -> None:
        if self.facts.provider_id.match(key):
            self.add("provider_id", where, f"the key {_quote(key)} is a provider-native id; provider ids never enter a cassette")
        elif key in self.facts.response_key_set:
            self.add(
                "provider_field",
                where,
                f"{_quote(key)} is a provider response field; usage, stop reasons and envelopes never enter a cassette",
            )
        elif _credential_name.fullmatch(key):
            self.add("credential_name", where, f"the key {_quote(key)} names a credential; API keys never enter a cassette")
        else:
            self._secret(key, where)

    def structural_string(self, value: str, where: str) -> None:
        if self.facts.provider_id.match(value):
            self.add(
                "provider_id", where, f"{_quote(value)} is a provider-native id; provider ids never enter a cassette (they become call-N)"
            )
        elif _credential_name.fullmatch(value):
            self.add(
                "credential_name", where, f"{_quote(value)} names a credential; API keys and their variable names never enter a cassette"
            )
        else:
            self._secret(value, where)

    def call_id(self, value: Any, where: str) -> None:
        if isinstance(value, str) and self.facts.provider_id.match(value):
            self.structural_string(value, where)
        elif not (isinstance(value, str) and _CALL_ID.fullmatch(value)):
            self.add(
                "tool_call_id", where, f"tool-call id {_quote(value)} is not Blackbox's own call-N; provider ids never enter a cassette"
            )

    def _data(self, value: Any, where: str) -> None:
        stack: list[tuple[Any, str]] = [(value, where)]
        while stack:
            node, path = stack.pop()
            if isinstance(node, str):
                self._secret(node, path)
            elif isinstance(node, dict):
                for key, child in node.items():
                    child_path = f"{path}{_key_path(key)}"
                    self._secret(key, child_path)
                    stack.append((child, child_path))
            elif isinstance(node, list):
                stack.extend((item, f"{path}[{n}]") for n, item in enumerate(node))

    def _secret(self, text: str, where: str) -> None:
        if "<tool-use-id>" in text:
            echoed = _echo_tag(self.facts.id_prefixes).search(text)
            if echoed is not None:
                self.add(
                    "provider_id",
                    where,
                    f"{_quote(echoed.group(1))} in <tool-use-id> is a provider-native tool-call id the agent echoed; "
                    "provider ids never enter a cassette (the recorder writes call-N there): re-record",
                )
        for m in _secret.finditer(text):
            if _realistic(m.group()):
                self.add(
                    "credential",
                    where,
                    f"holds what looks like a real credential ({_redact(m.group())}); remove it and re-record, or rotate the key",
                )
                return
        found = _scheme_credential(text.encode("utf-8", "surrogatepass"))
        if found is not None:
            self.add("credential", where, f"holds what looks like a real credential ({found}); remove it and re-record, or rotate the key")


def _realistic(secret: str) -> bool:
    """A key's randomness: letters and digits, a long unbroken run, many distinct characters."""
    body = re.sub(r"^(?:sk-(?:ant-|proj-|svcacct-|admin-)?|AIza|gsk_|[Bb]earer +)", "", secret)
    longest = max((len(run) for run in re.findall(r"[A-Za-z0-9]+", body)), default=0)
    return any(c.isdigit() for c in body) and any(c.isalpha() for c in body) and longest >= 16 and len(set(body)) >= 10


def _redact(secret: str) -> str:
    keep = 12 if secret.lower().startswith("bearer") else 10
    return f"{secret[:keep]}… ({len(secret)} characters)"


def _load_problem(exc: CassetteError) -> Problem:
    where = exc.where or "$"
    m = re.match(r"\$\.steps\[(\d+)\]", where)
    code = "version" if where == "$.version" else "format"
    return Problem(int(m.group(1)) if m else None, code, f"{exc.detail} (at {where})", where)


def _count_steps(data: Any) -> int:
    steps = data.get("steps") if isinstance(data, dict) else None
    return len(steps) if isinstance(steps, list) else 0


_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def _key_path(key: Any) -> str:
    key = str(key)
    return f".{key}" if _IDENT.fullmatch(key) else f"[{_quote(key)}]"


def _quote(value: Any, limit: int = 60) -> str:
    """A value quoted for a message: JSON-escaped, cut at ``limit``, printable on any terminal."""
    if not isinstance(value, str):
        return "null" if value is None else repr(value)
    text = value if len(value) <= limit else value[: limit - 1] + "…"
    return json.dumps(text, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8")


def _short(digest: str | None) -> str:
    return "null" if digest is None else (digest[:12] + "…" if len(digest) > 12 else _quote(digest))
