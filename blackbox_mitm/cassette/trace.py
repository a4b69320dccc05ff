"""The cassette's data model: a ``Trace`` (one run) holding hash-chained ``TraceStep``s.

Format v2 as the specification defines it. Appending a step is O(1): its index,
id, prevHash and hash come from the last step alone; earlier steps are never
serialized again.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from blackbox_mitm.cassette.canonical import step_hash
from blackbox_mitm.cassette.records import JSONObject

__all__ = [
    "CURRENT_TRACE_VERSION",
    "STEP_TYPES",
    "StepJSON",
    "Trace",
    "TraceHeader",
    "TraceJSON",
    "TraceStep",
    "new_trace_id",
    "now_ms",
]

CURRENT_TRACE_VERSION = 2
STEP_TYPES = ("model_input", "model_output", "tool_call", "tool_result", "metadata")


class StepJSON(TypedDict):
    """A step as the cassette (and the journal) writes it."""

    id: str
    index: int
    type: str
    timestamp: int | float
    payload: Any  # the step's payload (cassette/payloads.py), as recorded
    prevHash: str | None
    hash: str


class TraceHeader(TypedDict):
    """The trace's own fields, in the order they are written (the journal's first line)."""

    version: int
    id: str
    parentId: NotRequired[str]
    forkedFromStepId: NotRequired[str]
    createdAt: int | float
    environment: NotRequired[JSONObject]


class _Lineage(TypedDict, total=False):
    parentId: str
    forkedFromStepId: str


class _Environment(TypedDict, total=False):
    environment: JSONObject


class TraceJSON(TraceHeader):
    steps: list[StepJSON]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def new_trace_id(stem: str = "run") -> str:
    """A run id that reads well in listings: ``<stem>-<8 hex>``."""
    stem = "".join(c if c.isalnum() or c in "-_." else "-" for c in stem).strip("-") or "run"
    return f"{stem}-{secrets.token_hex(4)}"


@dataclass(slots=True)
class TraceStep:
    id: str
    index: int
    type: str
    timestamp: int | float
    payload: Any
    prevHash: str | None
    hash: str

    def to_json(self) -> StepJSON:
        return {
            "id": self.id,
            "index": self.index,
            "type": self.type,
            "timestamp": self.timestamp,
            "payload": self.payload,
            "prevHash": self.prevHash,
            "hash": self.hash,
        }

    def expected_hash(self) -> str:
        return step_hash(self.index, self.type, self.timestamp, self.payload, self.prevHash)


@dataclass(slots=True)
class Trace:
    id: str
    createdAt: int | float
    steps: list[TraceStep] = field(default_factory=list)
    parentId: str | None = None
    forkedFromStepId: str | None = None
    version: int = CURRENT_TRACE_VERSION
    # Where and when the run was recorded (session.environment): outside the hash chain, like createdAt.
    environment: JSONObject | None = None  # as read: session.environment reads it defensively

    @classmethod
    def new(
        cls,
        trace_id: str | None = None,
        *,
        created_at: int | float | None = None,
        parent_id: str | None = None,
        forked_from_step_id: str | None = None,
    ) -> Trace:
        return cls(
            id=trace_id or new_trace_id(),
            createdAt=now_ms() if created_at is None else created_at,
            parentId=parent_id,
            forkedFromStepId=forked_from_step_id,
        )

    def append(self, step_type: str, payload: Any, *, timestamp: int | float | None = None) -> TraceStep:
        """Append a step, chaining it to the last one. O(1) in the trace's length."""
        if step_type not in STEP_TYPES:
            raise ValueError(f"unknown step type {step_type!r}; expected one of {', '.join(STEP_TYPES)}")
        index = len(self.steps)
        prev = self.steps[-1].hash if self.steps else None
        ts = now_ms() if timestamp is None else timestamp
        step = TraceStep(
            id=f"{self.id}:{index}",
            index=index,
            type=step_type,
            timestamp=ts,
            payload=payload,
            prevHash=prev,
            hash=step_hash(index, step_type, ts, payload, prev),
        )
        self.steps.append(step)
        return step

    def adopt(self, step: TraceStep) -> TraceStep:
        """Append a step copied verbatim from another run (fork prefixes): same hash, new id."""
        index = len(self.steps)
        if step.index != index:
            raise ValueError(f"step {step.index} cannot be copied to position {index}")
        prev = self.steps[-1].hash if self.steps else None
        if step.prevHash != prev:
            raise ValueError(f"step {step.index} does not chain onto the copied prefix")
        copied = TraceStep(f"{self.id}:{index}", index, step.type, step.timestamp, step.payload, step.prevHash, step.hash)
        self.steps.append(copied)
        return copied

    def to_json(self) -> TraceJSON:
        return {**self.header_json(), "steps": [s.to_json() for s in self.steps]}

    def header_json(self) -> TraceHeader:
        """The trace's own fields, without steps (the journal's first line)."""
        lineage: _Lineage = {}
        if self.parentId is not None:
            lineage["parentId"] = self.parentId
        if self.forkedFromStepId is not None:
            lineage["forkedFromStepId"] = self.forkedFromStepId
        env: _Environment = {} if self.environment is None else {"environment": self.environment}
        return {"version": self.version, "id": self.id, **lineage, "createdAt": self.createdAt, **env}
