"""A run described as one value: what is replayed, what happens after it, what is edited at the cut.

``session/build.py`` (and ``session/fork.py``) make a ``RunPlan``; the
``Session`` owns it, and every layer that needs to know how a call is handled
reads it (``Session.mode``, ``RunPlan.answers_locally``) instead of deriving the
mode from the session's other attributes:

* record — ``RunPlan(prefix=None, tail=UPSTREAM)``: every call goes upstream;
* replay — ``RunPlan(prefix=calls, tail=REFUSE)``: every call is answered from
  the recording; past its end, refused;
* fork   — ``RunPlan(prefix=calls, tail=..., edit=Edit(cut, ...))``: a prefix is
  answered from the parent (strictly matched), with an edit at the cut; after
  it the calls go upstream or to a ``Script`` of answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from blackbox_mitm.cassette.payloads import ModelOutput
from blackbox_mitm.matcher import RecordedCalls
from blackbox_mitm.session.release import DEFAULT_GAP_MS

__all__ = ["REFUSE", "UPSTREAM", "Edit", "Refuse", "RunMode", "RunPlan", "Script", "ScriptSource", "Upstream"]

ScriptSource = Callable[[], ModelOutput]
RunMode = Literal["record", "replay", "fork"]


@dataclass(frozen=True, slots=True)
class Refuse:
    """Past the recording, a call is refused (the agent overran it)."""


@dataclass(frozen=True, slots=True)
class Upstream:
    """Past the recording (or with none), a call goes to the provider and is recorded."""


@dataclass(frozen=True, slots=True)
class Script:
    """Past the recording, a call is answered by the next answer of a script (a fork's ``--script``)."""

    source: ScriptSource


REFUSE = Refuse()
UPSTREAM = Upstream()

Tail = Refuse | Upstream | Script


@dataclass(frozen=True, slots=True)
class Edit:
    """A fork's cut, and what is edited there (neither: a fork that only cuts)."""

    cut: int  # the parent's step index the child forks at
    response: tuple[int, ModelOutput] | None = None  # (the output step replaced, the answer served instead)
    tool_result: tuple[str, str] | None = None  # (call-N, the text the model sees in its place)


@dataclass(frozen=True, slots=True)
class RunPlan:
    """One run: its replayed prefix (None: nothing replayed), its tail, the fork's edit, and how the prefix is served."""

    prefix: RecordedCalls | None = None
    tail: Tail = UPSTREAM
    edit: Edit | None = None
    match: str = "strict"  # strict | sequence: how the prefix is matched
    pace: float | None = None  # --pace: None as fast as possible, else the factor on each recorded call's time
    order_gap_ms: float | None = DEFAULT_GAP_MS  # --order-gap: overlapping answers in recorded order, this far apart; None: off

    def __post_init__(self) -> None:
        if self.edit is not None and self.prefix is None:
            raise ValueError("a fork's edit needs the parent's recorded calls")
        if self.match not in ("strict", "sequence"):
            raise ValueError(f"unknown match mode {self.match!r}")

    @property
    def mode(self) -> RunMode:
        if self.edit is not None:
            return "fork"
        if self.prefix is None and isinstance(self.tail, Upstream):
            return "record"
        if isinstance(self.tail, Refuse):
            return "replay"
        return "fork"

    @property
    def answers_locally(self) -> bool:
        """Every call is answered here (a replay, a fork with a script): nothing goes upstream."""
        return not isinstance(self.tail, Upstream)

    @property
    def cut(self) -> int | None:
        return self.edit.cut if self.edit is not None else None
