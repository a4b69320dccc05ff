"""Converse wire readers the request and response sides share: block kinds and tool-result text."""

from __future__ import annotations

from typing import Any

from blackbox_mitm.codecs.bedrock_converse import REFUSALS
from blackbox_mitm.codecs.common.jsonio import dumps

__all__ = ["MEDIA", "block_kind", "result_text"]

# The union members of a ContentBlock Blackbox cannot record.
MEDIA = ("image", "document", "video", "guardContent", "citationsContent", "searchResult", "audio")
_KINDS = ("text", "toolUse", "toolResult", "reasoningContent", "cachePoint", *MEDIA)


def block_kind(block: Any, where: str) -> str:
    """Which member of the ContentBlock union ``block`` is (a block is an object with exactly one)."""
    if not isinstance(block, dict) or len(block) != 1:
        REFUSALS.malformed(where, "a content block is an object with exactly one member")
    (kind,) = block
    if kind not in _KINDS:
        REFUSALS.refuse("bedrock-converse.unknown_block", where, kind)
    return str(kind)


def result_text(content: Any, where: str) -> str:
    """A toolResult's content: text blocks joined, a json block as compact JSON text; media refused."""
    if content is None:
        return ""
    if not isinstance(content, list):
        REFUSALS.malformed(where, "a toolResult's content is a list of blocks")
    texts: list[str] = []
    for i, block in enumerate(content):
        if not isinstance(block, dict) or len(block) != 1:
            REFUSALS.malformed(f"{where}[{i}]", "a toolResult block is an object with exactly one member")
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif "json" in block:
            texts.append(dumps(block["json"], allow_nan=False))
        else:
            REFUSALS.refuse("bedrock-converse.media", f"{where}[{i}]")
    return "".join(texts)
