"""The Messages wire readers the request and response sides share."""

from __future__ import annotations

from typing import Any

from blackbox_mitm.codecs.anthropic_messages import PROVIDER, SERVER_BLOCKS
from blackbox_mitm.errors import BlackboxUnsupportedError

__all__ = ["block_kind", "is_server_block", "text_of"]


def text_of(block: dict[str, Any], where: str) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        raise BlackboxUnsupportedError(f"{where}.text", "a text block needs a string text", provider=PROVIDER)
    return text


def is_server_block(kind: Any) -> bool:
    return isinstance(kind, str) and (kind in SERVER_BLOCKS or (kind.endswith("_tool_result") and kind != "tool_result"))


def block_kind(block: Any) -> str | None:
    """A content block's type, when it has a string one."""
    kind = block.get("type") if isinstance(block, dict) else None
    return kind if isinstance(kind, str) else None
