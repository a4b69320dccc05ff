"""Divergence reports that say the environment moved: a difference inside a recorded environment value, in one line.

A replay that diverges where the recording holds an environment placeholder
(``<env:cwd>``) and the agent sent a path, or where the agent sent one of its
live values and the recording holds other text, gets a note such as
``the agent runs in /x now, it ran in /y when recorded`` and what to do about
it, instead of a character offset into a long system prompt alone.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.matcher.difference import QUOTE_CONTEXT, Difference
from blackbox_mitm.session.environment import EnvSubstitution, environment_of, placeholder_names

__all__ = ["environment_note", "explainer"]

_PLACEHOLDER = re.compile(r"<env:([a-z][a-z0-9-]*)>")
# What each value is, in the sentence "<what> <live> now, <was> <recorded> when recorded".
_SAY = {
    "cwd": ("the agent runs in", "it ran in"),
    "root": ("the project root is", "it was"),
    "home": ("HOME is", "it was"),
    "tmp": ("the temporary directory is", "it was"),
    "user": ("the agent runs as user", "as"),
    "host": ("the agent runs on host", "on"),
    "date": ("the date is", "it was"),
    "tz": ("the time zone is", "it was"),
}
_RECORDED_KEY = {"date": "startedAt", "tz": "timeZone"}


def _base(name: str) -> str:
    return name.split("-", 1)[0]


def _recorded_value(recorded: Mapping[str, Any] | None, base: str) -> str | None:
    if not recorded:
        return None
    value = recorded.get(_RECORDED_KEY.get(base, base))
    if not isinstance(value, str):
        return None
    return value[:10] if base == "date" else value


def _line(base: str, live: str | None, was: str | None) -> str:
    now, then = _SAY.get(base, (f"{base} is", "it was"))
    live_text = live if live is not None else "(unknown)"
    if was is None:
        return f"{now} {live_text} now"
    return f"{now} {live_text} now, {then} {was} when recorded"


def environment_note(d: Difference, *, recorded: Mapping[str, Any] | None, live: EnvSubstitution | None) -> Difference:
    """``d`` with a note when it falls inside an environment value (see the module docstring); else ``d``."""
    if d.at_char is None:
        return d
    at = d.at_char - max(0, d.at_char - QUOTE_CONTEXT)
    note = _placeholder_note(d.recorded or "", at, recorded, live) or _live_value_note(d.got or "", at, recorded, live)
    if note is None:
        return d
    return replace(d, note=f"{d.note}; {note}" if d.note else note)


def _placeholder_note(quote: str, at: int, recorded: Mapping[str, Any] | None, live: EnvSubstitution | None) -> str | None:
    """The recording holds a placeholder where the agent's text differs."""
    for m in _PLACEHOLDER.finditer(quote):
        if not m.start() <= at < m.end():
            continue
        name = m.group(1)
        base = _base(name)
        if live is None:
            return (
                f"the recording holds the environment placeholder {m.group(0)} here and this replay substitutes none: "
                "replay with env substitution (the default; drop --no-env-substitution or env_substitution = false)"
            )
        head = _line(base, live.value(base), _recorded_value(recorded, base))
        why = live.not_replaced.get(name)
        if why is not None:
            return f"{head}; the live value is not replaced ({why}), so the recording's {m.group(0)} cannot meet it"
        return f"{head}; the recording's {m.group(0)} is this run's {live.value(name)!r}, and the agent sent other text"
    return None


def _live_value_note(quote: str, at: int, recorded: Mapping[str, Any] | None, live: EnvSubstitution | None) -> str | None:
    """The agent sent one of its live values where the recording has other text (a recording made without substitution)."""
    if live is None:
        return None
    for name in sorted(live.names, key=lambda n: -len(live.value(n) or "")):  # the longest value first: cwd before user
        value = live.value(name)
        if not value or len(value) < 3:
            continue
        start = quote.find(value)
        while start != -1:
            if start <= at < start + len(value):
                head = _line(_base(name), live.value(_base(name)), _recorded_value(recorded, _base(name)))
                if recorded is None:
                    return (
                        f"{head}; the recording was made without env substitution: re-record it with blackbox record (it is on by default)"
                    )
                return f"{head}; the recording did not replace {name} (see its environment metadata: blackbox show)"
            start = quote.find(value, start + 1)
    return None


def explainer(trace: Trace, live: EnvSubstitution | None) -> Callable[[Difference], Difference] | None:
    """The note-adder for a replay of ``trace``: None when neither side has an environment to speak of."""
    recorded = environment_of(trace)
    if live is None and recorded is None and not any(placeholder_names(s.payload) for s in trace.steps if s.type == "model_input"):
        return None
    return functools.partial(environment_note, recorded=recorded, live=live)
