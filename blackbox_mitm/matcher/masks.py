"""Masks: regular expressions whose matches strict replay does not compare.

A mask is a named regular expression. In the *compared view* of a request
(``normalize.compared_view``) every span a mask matches is replaced by the
placeholder ``<masked:NAME>``, on both sides: the recorded model_input and the
live request. Strict matching and its digest look-up therefore ignore what the
masks cover, while the cassette keeps what was sent.

What is masked — the texts the spec compares, and nothing structural:

* the system prompt;
* every message's text (string content and text parts);
* every string inside a tool_use part's ``toolInput`` (values, not keys);
* a tool_result's ``result`` (every string in it) and ``error``;
* every tool definition's ``description``.

Roles, tool names, ``toolCallId``\\ s, part types, the number and order of
parts, ``model``, ``params`` and input schemas are never masked: masks never
make a different tool-call structure, tool name or role match.

All the masks of a rule set are matched against the original text and the
spans are taken left to right (at one position the longest wins, then the
earlier rule), so one mask never matches inside another's placeholder. A
pattern that can match the empty string is refused (``MaskError``): it would
mask nothing and put placeholders everywhere.

Patterns are RE2 syntax, matched by Google's RE2 (``google-re2``) in time linear in the text: masks and
redaction rules run on every call's untrusted text, and a pattern such as ``(a+)+$`` must not hang a replay.
RE2 has no lookarounds and no backreferences; to mask only part of what a pattern matches (what a lookbehind
did), put that part in a group named ``mask`` — ``Today's date is (?P<mask>\\d{4}-\\d{2}-\\d{2})`` — or
``mask2``, ``mask3``, … in other branches: the first such group that took part in a match is masked, a match
with none is masked whole. ``rule_spans`` is that rule, shared with redaction. ``_gate``: the needs, in one pass.

``BUILT_IN_MASKS`` are on by default (``CompareRules.build(defaults=False)`` turns them off and the agent
profiles with them, ``off=NAMES`` the rules so named); ``blackbox masks`` lists them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import re2

from blackbox_mitm.errors import MaskError

if TYPE_CHECKING:
    from blackbox_mitm.matcher.normalize import ComparedView
    from blackbox_mitm.matcher.unordered import Unordered

__all__ = [
    "BUILT_IN_MASKS",
    "MASK_PLACEHOLDER",
    "NO_RULES",
    "PLACEHOLDER_RE",
    "CompareRules",
    "Mask",
    "MaskError",
    "compile_rule",
    "map_strings",
    "placeholders_in",
    "rule_spans",
]

MASK_PLACEHOLDER = "<masked:{name}>"
PLACEHOLDER_RE = re.compile(r"<(masked|redacted):([A-Za-z0-9_.\-]+)>")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
_PROBES = ("", "a", "a b", "0", "Ab 09 _-.:/\n\t")  # texts on which a usable pattern makes no empty match


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # the error is ours to word, not RE2's to print on stderr
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_RE2_HINT = (
    "masks and redaction rules are RE2 syntax (matched in linear time): no lookarounds ((?=…), (?<=…)) and no "
    "backreferences (\\1); to mask only part of a match, put that part in a group named mask: (?P<mask>…)"
)


def compile_rule(pattern: str, *, kind: str, name: str, source: str) -> Any:
    """Compile one rule's pattern with RE2, or raise ``MaskError`` saying which rule, where from, and why."""
    if not isinstance(pattern, str) or not pattern:
        raise MaskError(f"{kind} {name!r} (from {source}) has an empty pattern; give a regular expression")
    try:
        regex = re2.compile(pattern, _RE2_OPTIONS)
    except (re2.error, UnicodeEncodeError) as exc:
        raise MaskError(f"{kind} {name!r} (from {source}) {_not_re2(pattern, exc)} in {pattern!r}; {_RE2_HINT}") from exc
    if any(end == start for probe in _PROBES for start, end in rule_spans(regex, probe, empty=True)):
        raise MaskError(f"{kind} {name!r} (from {source}) matches the empty string ({pattern!r}); make it match at least one character")
    if not _NAME.match(name):
        raise MaskError(f"{kind} name {name!r} (from {source}) must be letters, digits, '.', '_' or '-' (at most 64)")
    return regex


def _not_re2(pattern: str, exc: BaseException) -> str:
    reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
    try:
        re.compile(pattern)
    except (re.error, RecursionError):
        return f"is not a regular expression ({reason})"
    return f"is a Python regular expression but not RE2 syntax ({reason})"


def rule_spans(regex: Any, text: str, *, empty: bool = False) -> Iterator[tuple[int, int]]:
    """The (start, end) of each span a rule masks in ``text``: its first ``mask…`` group that took part, else the match.

    Empty spans are left out unless ``empty``. A lone surrogate (which RE2's UTF-8
    cannot hold) is matched as U+FFFD: the same length, so the spans are the text's.
    """
    groups = [i for group, i in sorted(regex.groupindex.items(), key=lambda kv: kv[1]) if group.startswith("mask")]
    try:
        matches = list(regex.finditer(text))
    except UnicodeEncodeError:
        matches = list(regex.finditer(_SURROGATE.sub("\ufffd", text)))
    for m in matches:
        start, end = next((m.span(g) for g in groups if m.span(g)[0] >= 0), m.span())
        if empty or end > start:
            yield start, end


@dataclass(frozen=True, slots=True)
class Mask:
    """One mask: its name (in placeholders and reports), its pattern, where it came from, and what it is for."""

    name: str
    pattern: str
    source: str = "--mask"
    about: str = ""
    needs: tuple[str, ...] = ()  # texts holding none of these cannot match: the regex is not run on them (a fast path)
    regex: Any = field(init=False, repr=False, compare=False)  # an RE2 pattern (compile_rule)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", compile_rule(self.pattern, kind="mask", name=self.name, source=self.source))

    @property
    def placeholder(self) -> str:
        return MASK_PLACEHOLDER.format(name=self.name)

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "pattern": self.pattern, "source": self.source, "about": self.about}


# Volatile content of known agent programs, found by recording the same run twice and diffing. RE2 syntax: what
# a lookbehind/lookahead held is matched around a group named mask (mask2, ... in other branches), which is masked.
BUILT_IN_MASKS: tuple[Mask, ...] = (
    Mask(
        "claude-code.billing",
        r"\bcch=[0-9a-f]+;(?: cc_prev_req=[^;\s]*;)? cc_prompt_id=[0-9a-f-]+|\bcch=(?P<mask>[0-9a-f]+(?:; cc_prev_req=[^;\s]*)?)"
        r"|\bcc_prompt_id=(?P<mask2>[0-9a-f-]+)"
        r"|\bcc_turn_index=\d+(?P<mask3>;(?: cc_prev_msg=[^;\s]*;)?(?: cc_prev_prompt_index=\d+; cc_prev_turn_index=\d+;)?)",
        source="built-in",
        needs=("cch=", "cc_prompt_id="),
        about="Claude Code's billing/attribution line at the head of its system prompt: cch=…, cc_prompt_id=… and "
        "cc_prev_req=… (the previous answer's request id, absent when a replayed answer has none; a compaction call "
        "has it without cc_prompt_id), and after a compaction cc_prev_msg=… and cc_prev_prompt_index / cc_prev_turn_index "
        "(the answer before it, named only when the provider's answer carried a request id) change every run",
    ),
    Mask(
        "claude-code.agent-id",
        r"\bagentId: (?P<mask>[0-9A-Za-z_-]+)|SendMessage with to: '(?P<mask2>[0-9A-Za-z_-]+)"
        r"|<task-id>(?P<mask3>[0-9A-Za-z_-]+)</task-id>|/tasks/(?P<mask4>[0-9A-Za-z_-]+)\.output",
        source="built-in",
        needs=("agentId: ", "SendMessage with to: '", "<task-id>", "/tasks/"),
        about="the random id of a subagent (Claude Code's Agent tool): agentId: … and to: '…' in its result, "
        "<task-id> in a background agent's notification, and its tasks/….output file",
    ),
    Mask(
        "claude-code.agent-usage",
        r"<usage>(?P<mask>[\s\S]{1,600}?)</usage>",
        source="built-in",
        needs=("<usage>",),
        about="the <usage> block of a subagent's result or notification: its token count (a replay reports zero usage) and duration_ms",
    ),
    Mask(
        "claude-code.session-dir",
        r"/(?P<mask>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/tasks/",
        source="built-in",
        needs=("/tasks/",),
        about="the session's uuid in the path of a background agent's output file (…/<session>/tasks/<agent>.output)",
    ),
    Mask(
        "claude-code.transcript",
        r"/\.claude/projects/[^/\s]+/(?P<mask>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl",
        source="built-in",
        needs=("/.claude/projects/",),
        about="the session's uuid in the path of its transcript, which the summary Claude Code continues from after "
        "compacting names (…/.claude/projects/<dir>/<session>.jsonl)",
    ),
    Mask(
        "claude-code.tool-use-id",
        r"<tool-use-id>(?P<mask>[^<\s]{1,200})</tool-use-id>",
        source="built-in",
        needs=("<tool-use-id>",),
        about="the provider's tool-use id that a background agent's notification quotes (a replay serves its own ids)",
    ),
    Mask(
        "codex.wall-time",
        r"Wall time (?P<mask>\d+(?:\.\d+)? seconds)",
        source="built-in",
        needs=("Wall time ",),
        about="how long a command took, in the result of Codex CLI's exec tool (Wall time 0.2 seconds)",
    ),
    # Gemini CLI's shell tool (run_shell_command) ends each result with the process group it ran in and
    # lists background processes by pid; a backgrounded command says its pid. Written without
    # lookarounds (RE2 syntax): the process group is its (?P<mask>…) group; the pid lists are masked whole.
    Mask(
        "gemini-cli.pgid",
        r"Process Group PGID: (?P<mask>\d+)",
        source="built-in",
        needs=("Process Group PGID: ",),
        about="the process group id at the end of a Gemini CLI shell result (Process Group PGID: N): a new one every run",
    ),
    Mask(
        "gemini-cli.background-pids",
        r"Background PIDs: \d+(?:, \d+)*|Command moved to background \(PID: \d+\)",
        source="built-in",
        needs=("Background PIDs: ", "Command moved to background (PID: "),
        about="the pids of the background processes a Gemini CLI shell command started (Background PIDs: …, "
        "Command moved to background (PID: N))",
    ),
    Mask(
        "claude-code.date",
        r"Today's date is (?P<mask>\d{4}-\d{2}-\d{2})",
        source="built-in",
        needs=("Today's date is ",),
        about="the date Claude Code puts in its context (Today's date is YYYY-MM-DD): a run replayed on another day",
    ),
)


def _gate(masks: Sequence[Mask]) -> Any:
    """One RE2 alternation of every mask's ``needs`` (None if a mask has none or RE2 cannot take them): a text it misses
    no mask can match."""
    if not masks or not all(m.needs for m in masks):
        return None
    try:
        return re2.compile("|".join(re.escape(n) for m in masks for n in m.needs), _RE2_OPTIONS)
    except (re2.error, UnicodeEncodeError):
        return None


def _spans(text: str, masks: Sequence[Mask], gate: Any) -> list[tuple[int, int, Mask]]:
    try:  # one linear pass over the text (``_gate(masks)``), not a search per literal and mask: most texts hold none
        if gate is not None and gate.search(text) is None:
            return []
    except UnicodeEncodeError:  # a lone surrogate: each mask's own check decides
        pass
    found: list[tuple[int, int, int, Mask]] = []
    for order, mask in enumerate(masks):
        if mask.needs and not any(literal in text for literal in mask.needs):
            continue
        for start, end in rule_spans(mask.regex, text):
            found.append((start, -(end - start), order, mask))
    found.sort(key=lambda f: f[:3])
    out: list[tuple[int, int, Mask]] = []
    end = 0
    for start, neg_len, _, mask in found:
        if start >= end:
            out.append((start, start - neg_len, mask))
            end = start - neg_len
    return out


def map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    """``value`` with ``fn`` applied to every string in it (values only, keys kept); unchanged parts are shared."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        items = [map_strings(v, fn) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, Mapping):
        mapped = {k: map_strings(v, fn) for k, v in value.items()}
        return value if all(mapped[k] is value[k] for k in value) else mapped
    return value


@dataclass(frozen=True, slots=True)
class CompareRules:
    """What strict comparison ignores: the masks, plus the names of the redaction rules in force (for reports)."""

    masks: tuple[Mask, ...] = ()
    redactions: tuple[str, ...] = ()
    unordered: tuple[Unordered, ...] = ()  # an agent profile's lists in no fixed order (``Unordered``)
    one_turn: tuple[str, ...] = ()  # roles whose adjacent messages compare as one (``matcher.turns``; the agent's codec says)
    profiles: bool = False  # an agent's profile adds its rules (``matcher.profiles.with_profile``): on with the built-in masks
    off: tuple[str, ...] = ()  # built-in or profile rules turned off by name (--no-mask NAME)
    gate: Any = field(init=False, repr=False, compare=False)  # _gate(masks), made once with the rules

    def __post_init__(self) -> None:
        object.__setattr__(self, "gate", _gate(self.masks))

    @classmethod
    def build(
        cls,
        patterns: Iterable[str | Mask] = (),
        *,
        defaults: bool = True,
        off: Iterable[str] = (),
        source: str = "--mask",
        redactions: Iterable[str] = (),
    ) -> CompareRules:
        """Built-in masks (unless ``defaults`` is False) and ``patterns`` (``mask-1``, ``mask-2``, … unless given as ``Mask``),
        but those named in ``off`` (built-in ones, an agent profile's or the patterns' own: ``--no-mask NAME``)."""
        off, unnamed = tuple(off), itertools.count(1)
        masks = [
            *(BUILT_IN_MASKS if defaults else ()),
            *(p if isinstance(p, Mask) else Mask(f"mask-{next(unnamed)}", p, source=source) for p in patterns),
        ]
        names = [m.name for m in masks]
        if twice := next((name for name in names if names.count(name) > 1), None):
            raise MaskError(f"two masks are named {twice!r}; give each mask its own name")
        kept = tuple(m for m in masks if m.name not in off)
        return cls(kept, tuple(redactions), profiles=defaults, off=off)

    def __bool__(self) -> bool:
        return bool(self.masks or self.unordered)

    def by_name(self, name: str) -> Mask | None:
        return next((m for m in self.masks if m.name == name), None)

    # -- masking ----------------------------------------------------------------------

    def mask_text(self, text: str) -> str:
        """``text`` with its unordered lists sorted and every masked span replaced by its mask's placeholder."""
        for rule in self.unordered:
            text = rule.sort_text(text)
        if not self.masks:
            return text
        spans = _spans(text, self.masks, self.gate)
        if not spans:
            return text
        out, pos = [], 0
        for start, end, mask in spans:
            out.append(text[pos:start])
            out.append(mask.placeholder)
            pos = end
        out.append(text[pos:])
        return "".join(out)

    def mask_view(self, view: ComparedView) -> ComparedView:
        """A compared view (``normalize.compared_view``) with its compared texts masked; the input is not modified."""
        if not self:
            return view
        out = view.copy()
        if isinstance(view.get("systemPrompt"), str):
            out["systemPrompt"] = self.mask_text(view["systemPrompt"])
        out["messages"] = [self._message(m) for m in view.get("messages", [])]
        out["tools"] = [self._tool(t) for t in view.get("tools", [])]
        return out

    def _message(self, message: Any) -> Any:
        if not isinstance(message, Mapping) or "content" not in message:
            return message
        content = message["content"]
        if isinstance(content, str):
            return {**message, "content": self.mask_text(content)}
        if isinstance(content, list):
            return {**message, "content": [self._part(p) for p in content]}
        return message

    def _part(self, part: Any) -> Any:
        if not isinstance(part, Mapping):
            return part
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            return {**part, "text": self.mask_text(part["text"])}
        if kind == "tool_use" and "toolInput" in part:
            return {**part, "toolInput": map_strings(part["toolInput"], self.mask_text)}
        if kind == "tool_result":
            out = dict(part)
            if "result" in part:
                out["result"] = map_strings(part["result"], self.mask_text)
            if isinstance(part.get("error"), str):
                out["error"] = self.mask_text(part["error"])
            return out
        return part

    def _tool(self, tool: Any) -> Any:
        if not isinstance(tool, Mapping):
            return tool
        if isinstance(tool.get("description"), str):
            tool = {**tool, "description": self.mask_text(tool["description"])}
        for rule in self.unordered:
            if tool.get("name") in rule.tools and "inputSchema" in tool:
                tool = {**tool, "inputSchema": rule.sort_schema(tool["inputSchema"])}
        return tool


NO_RULES = CompareRules()


def placeholders_in(text: str | None) -> list[tuple[int, int, str, str]]:
    """Every ``<masked:NAME>`` / ``<redacted:NAME>`` in ``text``: (start, end, kind, name)."""
    if not text:
        return []
    return [(m.start(), m.end(), m.group(1), m.group(2)) for m in PLACEHOLDER_RE.finditer(text)]
