"""Compaction in the Responses API: Codex's ``compaction_trigger``, the ``compaction`` item answering it, and that item later.

Codex (remote compaction v2) compacts a long conversation by sending its whole
history with one more input item, ``{"type": "compaction_trigger"}``; the model
answers with exactly one output item ``{"type": "compaction", "id": …,
"encrypted_content": …}``, and from then on Codex sends that item in place of the
history it stands for (after the context it re-sends and the user messages it
keeps). What is recorded:

* the trigger is a user message of one ``{"type": "compaction_trigger"}`` part,
  compared like any message;
* the answer is a ``model_output`` (a ``final_answer``, empty unless the model
  also wrote text) with ``compaction``: ``{"type": "compaction", "data": …}``,
  ``data`` the ``encrypted_content`` as given (opaque: the provider reads it);
* the item in a later history is that part in an assistant turn, compared too
  (a replay served the same ``data``, so the agent sends the same back);
* the item's ``id`` is the provider's and is not kept: a replay serves
  ``cmp_bb…``, derived from the answer.

A ``compaction`` item without its ``encrypted_content`` names state on OpenAI's
side: it is refused as malformed (the API never sends one).
"""

from __future__ import annotations

from typing import Any

from blackbox_mitm.cassette.payloads import CompactionPart, CompactionTriggerPart, compaction_of
from blackbox_mitm.codecs.common.ids import digest
from blackbox_mitm.codecs.openai_responses import REFUSALS

__all__ = ["ITEM", "TRIGGER", "compaction_item", "part_of_item", "trigger_part"]

TRIGGER = "compaction_trigger"
ITEM = "compaction"


def trigger_part() -> CompactionTriggerPart:
    return {"type": "compaction_trigger"}


def part_of_item(item: dict[str, Any], path: str) -> CompactionPart:
    """A ``compaction`` item (an answer's output, or the history's) -> its neutral part."""
    data = item.get("encrypted_content")
    if not isinstance(data, str) or not data:
        REFUSALS.malformed(f"{path}.encrypted_content", "a compaction item without its encrypted_content")
    return {"type": "compaction", "data": data}


def compaction_item(output: Any, response_id: str) -> dict[str, Any] | None:
    """The ``compaction`` output item (our id) of a model_output that carries one; None when it carries none."""
    part = compaction_of(output)
    if part is None:
        return None
    return {"id": f"cmp_bb{digest(response_id + ':compaction')}", "type": ITEM, "encrypted_content": part["data"]}
