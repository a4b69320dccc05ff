"""Responses ``reasoning`` items: kept with the answer (summaries, reasoning text, ``encrypted_content``) and served back."""

from __future__ import annotations

from typing import Any

from blackbox_mitm.cassette.payloads import ReasoningPart, reasoning_of
from blackbox_mitm.codecs.common.ids import SORTED_JSON_STR, digest

__all__ = ["reasoning_items", "reasoning_part"]


def _texts(parts: Any, kind: str) -> list[str]:
    return (
        [p["text"] for p in parts if isinstance(p, dict) and p.get("type") == kind and isinstance(p.get("text"), str)]
        if isinstance(parts, list)
        else []
    )


def reasoning_part(item: dict[str, Any]) -> ReasoningPart:
    """A reasoning item kept for the replay: its summaries, its reasoning text, its ``encrypted_content``."""
    part: ReasoningPart = {"type": "thinking"}
    summary = _texts(item.get("summary"), "summary_text")
    if summary:
        part["summary"] = summary
    content = _texts(item.get("content"), "reasoning_text")
    if content:
        part["text"] = "".join(content)
    if isinstance(item.get("encrypted_content"), str) and item["encrypted_content"]:
        part["signature"] = item["encrypted_content"]
    return part


def reasoning_items(output: Any, response_id: str) -> list[dict[str, Any]]:
    """The recorded reasoning as output items (our ids), ahead of the answer's message and calls."""
    items: list[dict[str, Any]] = []
    for n, part in enumerate(reasoning_of(output)):
        if part.get("type") != "thinking":
            continue
        given = part.get("summary")
        summary: list[Any] = given if isinstance(given, list) else []
        item: dict[str, Any] = {
            "id": f"rs_bb{_digest(response_id, 'reasoning', n)}",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": str(t)} for t in summary],
        }
        if isinstance(part.get("text"), str):
            item["content"] = [{"type": "reasoning_text", "text": part["text"]}]
        if isinstance(part.get("signature"), str):
            item["encrypted_content"] = part["signature"]
        items.append(item)
    return items


def _digest(*parts: Any) -> str:
    """The served-id digest of ``parts`` (the same key as response.py's)."""
    return digest(SORTED_JSON_STR.encode(parts))
