"""What ``RecordedCalls.match`` answers: a served call, a divergence, or an exhausted recording.

Each outcome has ``to_json()`` (the structured record: error bodies, the replay
status, ``--set blackbox_report=FILE``) and ``human()`` (the text a person reads).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict

from blackbox_mitm.matcher.difference import Difference, DifferenceJSON

__all__ = ["Divergence", "DivergenceJSON", "Exhausted", "ExhaustedJSON", "RecordedCall", "Served", "ServedJSON"]


class ServedJSON(TypedDict):
    type: Literal["replay_served"]
    call: int
    step: int
    output_step: int
    out_of_order: bool
    matched: bool


class DivergenceJSON(TypedDict):
    """A refused request as a report writes it (``Divergence.from_json`` reads one back)."""

    type: Literal["replay_divergence"]
    run: str
    step: int
    difference: DifferenceJSON | None
    expected_digest: str
    got_digest: str
    message: str


class ExhaustedJSON(TypedDict):
    type: Literal["replay_exhausted"]
    run: str
    served: int
    recorded: int
    message: str
    upto: NotRequired[int]
    past_cut: NotRequired[bool]


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One recorded model call: a model_input step and the model_output that answered it.

    ``number`` is the call's position among the recorded calls (0-based);
    ``tool_steps_before`` counts the tool_call / tool_result steps recorded
    between the previous model call and this one (the tool round whose results
    this request carries). ``input`` and ``output`` are the cassette's payloads:
    read them, do not modify them.
    """

    number: int
    input_step: int
    output_step: int
    input: Mapping[str, Any]
    output: Mapping[str, Any]
    digest: str
    timestamp: int | float
    tool_steps_before: int = 0
    input_timestamp: int | float | None = None  # the model_input step's: how long the call took is timestamp - this


@dataclass(frozen=True, slots=True)
class Served:
    """A request answered by a recorded call.

    ``out_of_order`` is True when an earlier recorded call was still unserved
    (an overlapping call matched by content). ``matched`` says whether the
    request's digest equals the recorded one: always True in strict mode; in
    sequence mode it is informational.
    """

    call: RecordedCall
    out_of_order: bool = False
    matched: bool = True

    @property
    def output(self) -> Mapping[str, Any]:
        return self.call.output

    def to_json(self) -> ServedJSON:
        return {
            "type": "replay_served",
            "call": self.call.number,
            "step": self.call.input_step,
            "output_step": self.call.output_step,
            "out_of_order": self.out_of_order,
            "matched": self.matched,
        }


@dataclass(frozen=True, slots=True)
class Divergence:
    """A strict replay refusing a request: it matches no unserved recorded call.

    ``step`` is the model_input step of the call it was compared with: the
    earliest recorded call not yet served. ``difference`` is None only when no
    difference could be computed.
    """

    run_id: str
    step: int
    difference: Difference | None
    expected_digest: str
    got_digest: str

    def message(self) -> str:
        """The one-line message of the error body."""
        d = self.difference
        if d is None:
            return f"this request does not match recorded step {self.step} (digest {self.got_digest[:12]}, recorded {self.expected_digest[:12]})"
        verb = "do" if d.area in ("messages", "tools", "params") else "does"
        return f"this request's {d.area} {verb} not match recorded step {self.step}: {d.headline()}"

    def to_json(self) -> DivergenceJSON:
        return {
            "type": "replay_divergence",
            "run": self.run_id,
            "step": self.step,
            "difference": None if self.difference is None else self.difference.to_json(),
            "expected_digest": self.expected_digest,
            "got_digest": self.got_digest,
            "message": self.message(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, run_id: str | None = None) -> Divergence:
        """Rebuild a divergence from ``to_json()`` (a report file), to print it with ``human()``."""
        difference = data.get("difference")
        return cls(
            run_id=run_id if run_id is not None else str(data.get("run", "?")),
            step=int(data.get("step", -1)),
            difference=Difference.from_json(difference) if isinstance(difference, Mapping) else None,
            expected_digest=str(data.get("expected_digest", "")),
            got_digest=str(data.get("got_digest", "")),
        )

    def human(self) -> str:
        lines = [f"the agent diverged from recorded run {self.run_id} at step {self.step}:"]
        if self.difference is None:
            lines += [
                "  the request differs from the recording; no difference could be computed",
                f"    recorded digest: {self.expected_digest}",
                f"    got digest:      {self.got_digest}",
            ]
        else:
            lines += ["  " + line for line in self.difference.human_lines()]
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Exhausted:
    """A request with no recorded call left to serve it.

    ``past_cut`` is True when the recording was limited (``upto``, a fork's
    prefix): the caller decides what happens next (go live, or a script).
    Otherwise the agent made more model calls than the recording holds.
    """

    run_id: str
    served: int
    recorded: int
    upto: int | None = None

    @property
    def past_cut(self) -> bool:
        return self.upto is not None

    def human(self) -> str:
        calls = f"{self.recorded} model call" + ("" if self.recorded == 1 else "s")
        if self.past_cut:
            return f"recorded run {self.run_id} is served up to step {self.upto} ({calls}); this call is past the cut"
        return f"the agent overran recorded run {self.run_id}: every recorded model call ({self.recorded}) was served, and it asked for another"

    def to_json(self) -> ExhaustedJSON:
        out: ExhaustedJSON = {
            "type": "replay_exhausted",
            "run": self.run_id,
            "served": self.served,
            "recorded": self.recorded,
            "message": self.human(),
        }
        if self.upto is not None:
            out["upto"] = self.upto
            out["past_cut"] = True
        return out
