"""Provider codecs: a provider's HTTP request/response <-> the cassette's neutral payloads.

One module per provider, the same functions in each (see ``base``). The codec is
chosen by the request path, not the host, so OpenAI- and Anthropic-compatible
servers work too. Plain Python: no mitmproxy import.
"""

from __future__ import annotations

from types import ModuleType

from blackbox_mitm.codecs import anthropic_messages, openai_chat
from blackbox_mitm.codecs.base import CallIds, DecodedRequest, ErrorResponse, SseEvent

__all__ = ["CODECS", "CallIds", "DecodedRequest", "ErrorResponse", "SseEvent", "codec_for_path", "codec_named", "provider_for_path"]

CODECS: dict[str, ModuleType] = {"openai": openai_chat, "anthropic": anthropic_messages}


def _path_only(path: str) -> str:
    return path.split("?", 1)[0].split("#", 1)[0].rstrip("/")


def codec_for_path(path: str) -> ModuleType | None:
    """The codec for a model-call path (query ignored: Claude Code posts ``/v1/messages?beta=true``)."""
    p = _path_only(path)
    for codec in CODECS.values():
        if any(p.endswith(suffix) for suffix in codec.PATH_SUFFIXES):
            return codec
    return None


def provider_for_path(path: str) -> str | None:
    """The provider whose API a path belongs to, model call or not (for error shapes)."""
    codec = codec_for_path(path)
    if codec is not None:
        return str(codec.PROVIDER)
    p = _path_only(path)
    if p.endswith("/responses") or "/chat/" in p or "/v1/traces" in p or p.endswith("/completions") or p.endswith("/embeddings"):
        return "openai"
    if "/messages" in p or "claude" in p:
        return "anthropic"
    return None


def codec_named(provider: str) -> ModuleType:
    return CODECS[provider]
