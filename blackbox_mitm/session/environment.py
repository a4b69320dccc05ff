"""The run's environment as values: recorded as placeholders, replayed as the live ones.

An agent writes where and when it runs into what it sends its model: the
working directory in its system prompt, the home directory in a memory path,
the working directory as a folder name (Claude Code's
``~/.claude/projects/-srv-A-alice-proj/``), today's date in its own format.
A recording made in one directory, home and day would diverge at once when
replayed in another, and the model's recorded ``Read /srv/A/alice/proj/notes.txt``
would send the agent to a folder that is not there.

``RunEnvironment.capture`` (session/run_environment.py) takes the values a wrapped command runs with (its
working directory, the project root — the nearest directory up holding a
blackbox config or ``.git`` — ``HOME``, the user name, the host name, the
temporary directory, the local date and time zone). ``EnvSubstitution`` then,
before anything is hashed, replaces each value and its derived forms (``forms``)
by a named placeholder, ``<env:cwd>``, ``<env:home>``, ``<env:date-long>``…, in
every string of every payload; at replay the live values go through the same
replacement before a request is compared, and every placeholder in a served
answer becomes the live value (``restore``). Object keys are never rewritten.

A value too short or too common to replace safely (``/``, ``/tmp``, a
one-letter or common user name such as ``root``, the offset ``+00:00``) is not
replaced; the run's metadata (``metadata``) lists what was replaced and why the
rest was not. A replay replaces only the names the recording replaced.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.session.run_environment import RunEnvironment

__all__ = [
    "PLACEHOLDER",
    "EnvSubstitution",
    "RunEnvironment",
    "environment_of",
    "placeholder_names",
    "replay_substitution",
]

PLACEHOLDER = "<env:{name}>"
_PLACEHOLDER_RE = re.compile(r"<env:([a-z][a-z0-9-]*)>")

# Values never replaced: too common to mean this run's environment.
_COMMON_PATHS = frozenset(
    [
        "/",
        "/tmp",
        "/var/tmp",
        "/home",
        "/usr",
        "/var",
        "/opt",
        "/srv",
        "/etc",
        "/bin",
        "/mnt",
        "/app",
        "/work",
        "/data",
        "/code",
        "/src",
        "/build",
        "/workspace",
        "/private/tmp",
    ]
)
_COMMON_WORDS = frozenset(
    [
        "root",
        "user",
        "users",
        "admin",
        "runner",
        "ubuntu",
        "node",
        "app",
        "test",
        "tests",
        "ci",
        "build",
        "builder",
        "nobody",
        "debian",
        "guest",
        "jenkins",
        "vagrant",
        "docker",
        "dev",
        "default",
        "home",
        "local",
        "localhost",
        "container",
        "server",
        "worker",
        "agent",
        "main",
    ]
)
_PATH_START = r"(?<![\w.\-~])"
_PATH_END = r"(?![\w\-]|\.\w)"
_REL_START = r"(?<![\w.\-/])"
_WORD_START = r"(?<![\w\-])"
_WORD_END = r"(?![\w\-])"
_DATE_START = r"(?<![\w/])"
_DATE_END = r"(?![\w/])"


def _why_not(name: str, text: str, kind: str) -> str | None:
    """Why ``text`` is not replaced (too short or too common), or None when it is safe to replace."""
    if kind == "path":
        if not text.startswith("/") or text in _COMMON_PATHS:
            return f"{text} is too common to replace safely"
        if text.count("/") < 2 and len(text) < 5:
            return f"{text} is too short to replace safely"
    elif kind == "slug":
        if len(text) < 8:
            return f"{text} is too short to replace safely"
    elif kind == "word":
        if len(text) < 3:
            return f"{text!r} is too short to replace safely"
        if text.lower() in _COMMON_WORDS or text.isdigit():
            return f"{text!r} is too common to replace safely"
    elif kind == "tz":
        if "/" not in text:
            return f"{text} is not a zone name that can be told from other text"
    elif kind == "offset" and text in ("+00:00", "-00:00", "GMT+0000"):
        return f"{text} is too common to replace safely (every UTC time carries it)"
    return None


def _pattern(text: str, kind: str) -> str:
    body = re.escape(text)
    if kind == "path":
        return _PATH_START + body + _PATH_END
    if kind == "relative":
        return _REL_START + body + _PATH_END
    if kind in ("slug", "word"):
        return _WORD_START + body + _WORD_END
    if kind in ("date", "tz"):
        return _DATE_START + body + _DATE_END
    return body + r"(?![\d:])"  # an offset follows the digits of a time


@dataclass(frozen=True, slots=True)
class EnvSubstitution:
    """The replacement of one environment's values by placeholders in payloads, and back."""

    environment: RunEnvironment
    replaced: tuple[str, ...]  # the names replaced in texts, longest value first
    not_replaced: dict[str, str]  # name -> why its value is not replaced
    _values: dict[str, str] = field(repr=False, compare=False)
    _regex: re.Pattern[str] | None = field(repr=False, compare=False)
    # The replaced values as plain text: every match of ``_regex`` contains one of them, so a string that holds
    # none is left as it is without running the regex (its alternation of look-arounds costs per character).
    _literals: tuple[str, ...] = field(default=(), repr=False, compare=False)
    # The same values as they appear inside a JSON string (orjson's escaping); None: one cannot be encoded.
    _in_json: tuple[bytes, ...] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def for_record(cls, environment: RunEnvironment) -> EnvSubstitution:
        """Every safe value of ``environment`` replaced."""
        return cls._build(environment, allowed=None)

    @classmethod
    def for_replay(cls, environment: RunEnvironment, recorded: Mapping[str, Any] | None) -> EnvSubstitution:
        """The live ``environment``, replacing only what the recording replaced (``recorded``: its metadata)."""
        names = recorded.get("replaced") if isinstance(recorded, Mapping) else None
        allowed = frozenset(n for n in names if isinstance(n, str)) if isinstance(names, list) else frozenset()
        return cls._build(environment, allowed=allowed)

    @classmethod
    def _build(cls, environment: RunEnvironment, *, allowed: frozenset[str] | None) -> EnvSubstitution:
        forms = environment.forms()
        replaced: list[str] = []
        skipped: dict[str, str] = {}
        for name, (text, kind) in forms.items():
            if allowed is not None and name not in allowed:
                continue
            reason = _why_not(name, text, kind)
            base = name.split("-", 1)[0] if kind in ("slug", "relative") else name
            if reason is None and base in skipped:
                reason = f"derived from {base}, which is not replaced"
            if reason is not None:
                skipped[name] = reason
            else:
                replaced.append(name)
        replaced.sort(key=lambda n: (-len(forms[n][0]), n))
        regex = re.compile("|".join(f"(?P<{n.replace('-', '_')}>{_pattern(*forms[n])})" for n in replaced)) if replaced else None
        literals = tuple(dict.fromkeys(forms[n][0] for n in replaced))
        values = {n: t for n, (t, _) in forms.items()}
        return cls(environment, tuple(replaced), skipped, values, regex, literals, _json_forms(literals))

    def __bool__(self) -> bool:
        return self._regex is not None

    def value(self, name: str) -> str | None:
        """The text placeholder ``name`` stands for in this environment."""
        return self._values.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        """Every placeholder name this environment has a value for, replaced or not."""
        return tuple(self._values)

    # -- values -> placeholders ----------------------------------------------------------

    def text(self, text: str) -> str:
        if self._regex is None:
            return text
        for literal in self._literals:
            if literal in text:
                break
        else:
            return text  # no replaced value occurs in it: nothing to rewrite
        return self._regex.sub(lambda m: PLACEHOLDER.format(name=str(m.lastgroup).replace("_", "-")), text)

    def neutral(self, value: Any) -> Any:
        """``value`` with every replaced value, in every string, as its placeholder. Unchanged parts are the same objects."""
        if self._regex is None or not self._may_occur_in(value):
            return value
        return _walk(value, self.text)

    def _may_occur_in(self, value: Any) -> bool:
        """False only when no replaced value occurs in any string of ``value``: one C serialization tells, instead
        of a walk of every node (a request's tool schemas and history, on every recorded call)."""
        if self._in_json is None or not isinstance(value, dict | list):
            return True
        try:
            blob = orjson.dumps(value)
        except (TypeError, orjson.JSONEncodeError):
            return True  # what orjson cannot write (a lone surrogate, an integer past 64 bits, a key not a string) is walked
        return any(form in blob for form in self._in_json)

    # -- placeholders -> values ----------------------------------------------------------

    def restore_text(self, text: str) -> str:
        if "<env:" not in text:
            return text
        return _PLACEHOLDER_RE.sub(lambda m: self._values.get(m.group(1), m.group(0)), text)

    def restore(self, value: Any) -> Any:
        """``value`` with every placeholder as this environment's value (a recorded answer, served live)."""
        return _walk(value, self.restore_text)

    # -- the run's metadata ------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """The trace's ``environment``: the values, what was replaced, and why the rest was not."""
        out = self.environment.to_json()
        out["replaced"] = sorted(self.replaced)
        if self.not_replaced:
            out["notReplaced"] = dict(sorted(self.not_replaced.items()))
        return out


def _json_forms(literals: tuple[str, ...]) -> tuple[bytes, ...] | None:
    """Each text as orjson writes it inside a JSON string (its escapes included); None when one cannot be written."""
    try:
        return tuple(orjson.dumps(text)[1:-1] for text in literals)
    except orjson.JSONEncodeError:
        return None


def _walk(value: Any, rewrite: Any) -> Any:
    if isinstance(value, str):
        return rewrite(value)
    if isinstance(value, list):
        items = [_walk(v, rewrite) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, Mapping):
        mapped = {k: _walk(v, rewrite) for k, v in value.items()}
        return value if all(mapped[k] is value[k] for k in value) else mapped
    return value


def environment_of(trace: Trace) -> dict[str, Any] | None:
    """The recorded environment: the trace's ``environment`` field (None: recorded without substitution)."""
    return trace.environment if isinstance(trace.environment, dict) else None


def replay_substitution(environment: RunEnvironment | None, trace: Trace) -> EnvSubstitution | None:
    """The live ``environment``'s substitution for replaying ``trace``; None when off.

    The names replaced are the recording's (its ``environment``); a cassette
    whose header lost it (rewritten by another tool) replaces the names its payloads use.
    """
    if environment is None:
        return None
    recorded = environment_of(trace)
    if recorded is None:
        used: set[str] = set()
        for step in trace.steps:
            used |= placeholder_names(step.payload)
        recorded = {"replaced": sorted(used)}
    return EnvSubstitution.for_replay(environment, recorded)


def placeholder_names(value: Any) -> set[str]:
    """The placeholder names used anywhere in ``value``'s strings."""
    try:  # most payloads hold none: one C serialization tells, instead of a walk of every string
        if b"<env:" not in orjson.dumps(value):
            return set()
    except (TypeError, orjson.JSONEncodeError):
        pass  # what orjson cannot write (a lone surrogate, an integer past 64 bits) is walked
    found: set[str] = set()

    def collect(text: str) -> str:
        found.update(_PLACEHOLDER_RE.findall(text))
        return text

    _walk(value, collect)
    return found
