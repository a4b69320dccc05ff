"""Where an agent's request first differs from the recorded one: the ``difference`` of a divergence.

``first_difference`` compares the compared views (``normalize.compared_view``) of
the recorded and the received model_input, in this order, and reports the first
thing that differs:

1. ``model``;
2. ``system`` (the system prompt);
3. the messages, in order; for each, the first of
   ``role``,
   ``content`` — the message's text: string content as it is; for parts, one
   line per text part and per tool result (a result that is not a string as
   compact JSON, an error as ``error: <text>``); tool_use parts add nothing,
   ``tool_call_id`` — the ``toolCallId`` of every tool_use and tool_result part,
   comma-separated,
   ``tool_calls`` — every tool_use part as ``name(<compact JSON input>)``, ``; ``-separated;
   and when none of those texts differ but the content still does (a part
   type, their order, a tool result's toolName, a result ``"1"`` against ``1``),
   ``content`` again, quoting the content's compact JSON;
   then ``missing`` (the agent's request stops before this message) or
   ``extra`` (the recording's request stopped before it);
4. ``tools``, the first differing tool definition, quoted as its compact JSON;
   ``message`` is then the tool's index and ``role`` its name;
5. ``params.<name>``, the first differing request control by sorted name, quoted
   as compact JSON (``params.stream`` when one call streamed and the other did not).

``at_char`` is the index (in code points) of the first differing character of
the two quoted texts, None when one side is absent. Each quote is at most
``QUOTE_CHARS`` characters starting ``QUOTE_CONTEXT`` characters before
``at_char``, so the differing character is in view; a role (or tool name) is
cut to ``ROLE_CHARS``. A comparison that finds nothing returns None — exactly
when the two requests have the same ``request_digest`` (under the same ``rules``).

When the differing message and what follows only reorder what the recording
had (the same messages, content parts or blocks of text in another order:
``reorder.reordering``), ``reordered`` is how many items changed places and
``reordered_items`` what they are; the headline then says "the same N items in
another order" instead of a character offset.

With ``rules.one_turn`` adjacent messages of those roles are compared as one
(``matcher.turns``): ``message`` is then the index, in the agent's request (the
recording's when the agent's stops before it), of the first message of the turn
that differs, the message counts are the requests' own, and when the turn is
several messages on either side ``note`` says which ones on each.

With ``rules`` (``masks.CompareRules``) the masked views are compared. When the
first differing character is in a placeholder on either side (a mask matched
on one side and not the other, or two different masks matched), ``masks``
names those rules and ``note`` says so. When a side holds a redaction
placeholder (``<redacted:NAME>``) at the difference and ``rules`` names no
redaction rule, ``note`` says the recording was redacted and the replay is
not; ``redacted`` names the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypedDict

from blackbox_mitm.matcher.masks import NO_RULES, CompareRules, placeholders_in
from blackbox_mitm.matcher.normalize import ComparedView, _as_list, compared_view
from blackbox_mitm.matcher.quotes import (
    ABSENT,
    QUOTE_CHARS,
    QUOTE_CONTEXT,
    ROLE_CHARS,
    Found,
    compare,
    content_text,
    count,
    cut,
    cut_role,
    escape_controls,
    get_field,
    json_text,
    message_difference,
    role_of,
    text_of,
)
from blackbox_mitm.matcher.reorder import reordering
from blackbox_mitm.matcher.turns import turn_spans

__all__ = ["MESSAGE_FIELDS", "QUOTE_CHARS", "QUOTE_CONTEXT", "ROLE_CHARS", "Difference", "DifferenceJSON", "first_difference"]

MESSAGE_FIELDS = ("role", "content", "tool_call_id", "tool_calls")

# Who makes a Difference from what was found: (field, found, message index, role).
_Make = Callable[[str, Found, int | None, str | None], "Difference"]


class _DifferenceNotes(TypedDict, total=False):
    masks: list[str]
    redacted: list[str]
    note: str
    reordered: int
    reordered_items: str | None


class DifferenceJSON(_DifferenceNotes):
    """A ``Difference`` as a report writes it (``from_json`` reads one back)."""

    message: int | None
    role: str | None
    field: str
    at_char: int | None
    recorded: str | None
    got: str | None
    recorded_messages: int
    got_messages: int


@dataclass(frozen=True, slots=True)
class Difference:
    """The first place two requests differ (see the module docstring for each field)."""

    field: str
    message: int | None = None
    role: str | None = None
    at_char: int | None = None
    recorded: str | None = None
    got: str | None = None
    recorded_messages: int = 0
    got_messages: int = 0
    masks: tuple[str, ...] = ()
    redacted: tuple[str, ...] = ()
    note: str | None = None
    reordered: int | None = None  # the same N items in another order
    reordered_items: str | None = None  # what they are: messages, content parts, blocks of text, paragraphs, lines

    def to_json(self) -> DifferenceJSON:
        out: DifferenceJSON = {
            "message": self.message,
            "role": self.role,
            "field": self.field,
            "at_char": self.at_char,
            "recorded": self.recorded,
            "got": self.got,
            "recorded_messages": self.recorded_messages,
            "got_messages": self.got_messages,
        }
        if self.masks:
            out["masks"] = list(self.masks)
        if self.redacted:
            out["redacted"] = list(self.redacted)
        if self.note:
            out["note"] = self.note
        if self.reordered:
            out["reordered"] = self.reordered
            out["reordered_items"] = self.reordered_items
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Difference:
        return cls(
            field=str(data.get("field")),
            message=data.get("message"),
            role=data.get("role"),
            at_char=data.get("at_char"),
            recorded=data.get("recorded"),
            got=data.get("got"),
            recorded_messages=int(data.get("recorded_messages") or 0),
            got_messages=int(data.get("got_messages") or 0),
            masks=tuple(str(m) for m in data.get("masks") or ()),
            redacted=tuple(str(m) for m in data.get("redacted") or ()),
            note=data.get("note"),
            reordered=int(data["reordered"]) if isinstance(data.get("reordered"), int) else None,
            reordered_items=str(data["reordered_items"]) if data.get("reordered_items") else None,
        )

    @property
    def area(self) -> str:
        """What part of the request differs: ``model``, ``system prompt``, ``tools``, ``params`` or ``messages``."""
        if self.field == "model":
            return "model"
        if self.field == "system":
            return "system prompt"
        if self.field == "tools":
            return "tools"
        if self.field == "params" or self.field.startswith("params."):
            return "params"
        return "messages"

    def headline(self) -> str:
        """One line naming what differs, e.g. ``message 1 (user): content differs at character 22``."""
        at = f" at character {self.at_char}" if self.at_char is not None else ""
        if self.field in ("missing", "extra") or self.field in MESSAGE_FIELDS:
            where = f"message {self.message} ({self.role})"
            if self.field == "missing":
                return f"{where}: missing from the agent's request"
            if self.field == "extra":
                return f"{where}: extra, the recording's request ends before it"
            if self.reordered:
                return f"{where}: the same {self.reordered} items in another order ({self.reordered_items})"
            return f"{where}: {self.field} differs{at}"
        if self.field == "tools":
            where = f"tool {self.message} ({self.role})"
            if self.got is None:
                return f"{where}: missing from the agent's request"
            if self.recorded is None:
                return f"{where}: extra, not in the recording's request"
            return f"{where}: definition differs{at}"
        label = "system prompt" if self.field == "system" else self.field
        if self.recorded is None and self.got is not None:
            return f"{label}: absent from the recording's request"
        if self.got is None and self.recorded is not None:
            return f"{label}: absent from the agent's request"
        return f"{label} differs{at}"

    def human_lines(self) -> list[str]:
        """The headline, both quotes and the message counts, as the divergence report prints them."""
        lines = [
            self.headline(),
            f"  recorded: {self._show(self.recorded)}",
            f"  got:      {self._show(self.got)}",
        ]
        if self.note:
            lines.append(f"  note: {self.note}")
        lines.append(f"(the recording's request has {count(self.recorded_messages, 'message')}, the agent's {self.got_messages})")
        return lines

    def _show(self, quote: str | None) -> str:
        if quote is None:
            return "(absent)"
        lead = "…" if self.at_char is not None and self.at_char > QUOTE_CONTEXT else ""
        return '"' + lead + escape_controls(quote) + '"'


def first_difference(recorded: Mapping[str, Any], got: Mapping[str, Any], rules: CompareRules = NO_RULES) -> Difference | None:
    """The first difference between two model_inputs (compared views, masked by ``rules``, are taken here), or None."""
    found = _first_difference(compared_view(recorded, rules), compared_view(got, rules))
    if found is None:
        return None
    found = _with_placeholders(found, rules)
    return _in_turns(found, recorded, got, rules.one_turn) if rules.one_turn else found


def _in_turns(d: Difference, recorded: Mapping[str, Any], got: Mapping[str, Any], roles: tuple[str, ...]) -> Difference:
    """A difference found among folded turns (``matcher.turns``), told in the requests' own message indices and counts."""
    rec_messages, got_messages = _as_list(recorded.get("messages")), _as_list(got.get("messages"))
    rec_spans, got_spans = turn_spans(rec_messages, roles), turn_spans(got_messages, roles)
    counts = replace(d, recorded_messages=len(rec_messages), got_messages=len(got_messages))
    k = d.message
    if k is None or d.area != "messages":
        return counts
    rec = rec_spans[k] if k < len(rec_spans) else None
    new = got_spans[k] if k < len(got_spans) else None
    span = new or rec
    assert span is not None  # the differing message is on one side at least
    if all(s is None or s == span for s in (rec, new)) and span[1] - span[0] == 1:
        return replace(counts, message=span[0])
    sides = " and ".join(f"{_span_text(s)} of the {side}'s request" for s, side in ((rec, "recording"), (new, "agent")) if s is not None)
    folded = "/".join(roles)
    if any(s is not None and s[1] - s[0] > 1 for s in (rec, new)):
        note = f"adjacent {folded} messages are compared as one turn: this is {sides}"
    else:
        note = f"this is {sides} (adjacent {folded} messages before it are compared as one turn)"
    return replace(counts, message=span[0], note=f"{d.note}; {note}" if d.note else note)


def _span_text(span: tuple[int, int]) -> str:
    a, b = span
    return f"message {a}" if b - a == 1 else f"messages {a}-{b - 1}"


def _with_placeholders(d: Difference, rules: CompareRules) -> Difference:
    """Name the masks (and redaction rules) whose placeholders sit at the difference (see the module docstring)."""
    if d.at_char is None:
        return d
    at = d.at_char - max(0, d.at_char - QUOTE_CONTEXT)  # the differing character, in each quote
    hit: dict[str, dict[str, str]] = {"masked": {}, "redacted": {}}
    for side, quote in (("recording", d.recorded), ("agent", d.got)):
        for begin, end, kind, name in placeholders_in(quote):
            if begin <= at < end:
                hit[kind].setdefault(name, side)
    masks = tuple(hit["masked"])
    redacted = tuple(hit["redacted"])
    notes = []
    if masks:
        where = "; ".join(f"mask {name} matched in the {side}'s request" for name, side in hit["masked"].items())
        notes.append(f"the difference is at a masked span ({where}), and the other side has different text there")
    if redacted and not rules.redactions:
        notes.append(
            "the recording holds redaction placeholders (" + ", ".join(redacted) + ") and this replay redacts nothing: "
            "replay with the redaction rules the run was recorded with (--redact, or redact in the project config)"
        )
    if not notes:
        return d
    return replace(d, masks=masks, redacted=redacted, note="; ".join(notes))


def _first_difference(rec: ComparedView, new: ComparedView) -> Difference | None:
    rec_messages: list[Any] = rec["messages"]
    got_messages: list[Any] = new["messages"]

    def make(field: str, found: Found, index: int | None, role: str | None) -> Difference:
        at, a, b = found
        return Difference(field, index, role, at, cut(a, at), cut(b, at), len(rec_messages), len(got_messages))

    found = compare(rec.get("model", ABSENT), new.get("model", ABSENT), text_of)
    if found:
        return make("model", found, None, None)
    found = compare(rec.get("systemPrompt", ABSENT), new.get("systemPrompt", ABSENT), text_of) or compare(
        rec.get("systemMedia", ABSENT), new.get("systemMedia", ABSENT), text_of
    )
    if found:
        return make("system", found, None, None)
    return (
        _messages_difference(rec_messages, got_messages, make)
        or _tools_difference(rec["tools"], new["tools"], make)
        or _params_difference(rec, new, make)
    )


def _messages_difference(rec_messages: list[Any], got_messages: list[Any], make: _Make) -> Difference | None:
    """The first message that differs (a field of it, or one side's missing), with what it reorders if it does."""
    for i in range(max(len(rec_messages), len(got_messages))):
        a = rec_messages[i] if i < len(rec_messages) else ABSENT
        b = got_messages[i] if i < len(got_messages) else ABSENT
        role = role_of(b if b is not ABSENT else a)
        if b is ABSENT:
            return make("missing", (None, content_text(get_field(a, "content")), None), i, role)
        if a is ABSENT:
            return make("extra", (None, None, content_text(get_field(b, "content"))), i, role)
        field_found = message_difference(a, b)
        if field_found:
            found_here = make(*field_found, i, role)
            moved = reordering(rec_messages, got_messages, i)
            return found_here if moved is None else replace(found_here, reordered=moved[0], reordered_items=moved[1])
    return None


def _tools_difference(rec_tools: list[Any], got_tools: list[Any], make: _Make) -> Difference | None:
    """The first tool only one side has (by name), else the first that differs in place."""
    by_name = _tool_by_name(rec_tools, got_tools)
    if by_name is not None:
        i, tool, side = by_name
        name = cut_role(get_field(tool, "name"))
        return make("tools", (None, json_text(tool), None) if side == "recorded" else (None, None, json_text(tool)), i, name)
    for i in range(max(len(rec_tools), len(got_tools))):
        a = rec_tools[i] if i < len(rec_tools) else ABSENT
        b = got_tools[i] if i < len(got_tools) else ABSENT
        found = compare(a, b, json_text)
        if found:
            return make("tools", found, i, cut_role(get_field(b if b is not ABSENT else a, "name")))
    return None


def _params_difference(rec: ComparedView, new: ComparedView, make: _Make) -> Difference | None:
    """The first request control that differs, by sorted name (the whole ``params`` when one is not an object)."""
    rec_params: Any = rec.get("params", {})
    got_params: Any = new.get("params", {})
    if not (isinstance(rec_params, Mapping) and isinstance(got_params, Mapping)):
        found = compare(rec.get("params", ABSENT), new.get("params", ABSENT), json_text)
        return make("params", found, None, None) if found else None
    for name in sorted(set(rec_params) | set(got_params)):
        found = compare(rec_params.get(name, ABSENT), got_params.get(name, ABSENT), json_text)
        if found:
            return make(f"params.{name}", found, None, None)
    return None


def _tool_by_name(rec_tools: list[Any], got_tools: list[Any]) -> tuple[int, Any, str] | None:
    """The first tool only one side has, by name: (its index on that side, the tool, "recorded" or "got").

    An MCP server gone or a tool added shifts every later tool; comparing by
    position would blame the neighbour, so a name only one side has is named first.
    """
    rec_names = [get_field(t, "name") for t in rec_tools]
    got_names = [get_field(t, "name") for t in got_tools]
    for i, name in enumerate(rec_names):
        if name not in got_names:
            return i, rec_tools[i], "recorded"
    for i, name in enumerate(got_names):
        if name not in rec_names:
            return i, got_tools[i], "got"
    return None
