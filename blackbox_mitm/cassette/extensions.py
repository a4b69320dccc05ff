"""Blackbox's extensions of the neutral payloads (docs/cassette.md): token counts, kept reasoning, media parts, compaction.

Each is optional and written only when it carries something, so a payload
without it is the payload, and hash, it was before the extension existed.
``payloads`` re-exports them beside the spec's types.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any, Literal, NotRequired, TypedDict

from blackbox_mitm.cassette.media_bytes import note_bytes
from blackbox_mitm.cassette.records import JSONObject

__all__ = [
    "CompactionPart",
    "CompactionTriggerPart",
    "MediaKind",
    "MediaPart",
    "ReasoningPart",
    "RefusalPart",
    "Tokens",
    "compaction_of",
    "data_url",
    "joined_parts",
    "media_kind",
    "media_part",
    "reasoning_of",
    "tokens",
    "tokens_of",
]


MediaKind = Literal["image", "document", "audio", "video"]


class MediaPart(TypedDict):
    """Blackbox's extension: an image, document, audio or video in a message or tool result, content-addressed.

    Inline bytes are ``mediaType`` and the ``sha256`` (hex) and ``size`` of the
    decoded bytes (the bytes themselves are in the run's media file,
    ``cassette/media.py``, once per run); a reference the
    provider fetches is kept as sent: ``url`` or ``file`` (the provider's file id).
    ``name`` and ``detail`` are kept when sent (a file name, an image's detail level).
    """

    type: MediaKind
    mediaType: NotRequired[str]
    sha256: NotRequired[str]
    size: NotRequired[int]
    url: NotRequired[str]
    file: NotRequired[str]
    name: NotRequired[str]
    detail: NotRequired[str]


def media_kind(media_type: str) -> MediaKind:
    """``image`` / ``audio`` / ``video`` by the media type's top level, else ``document`` (PDF, plain text, ...)."""
    top = media_type.partition("/")[0]
    if top == "image":
        return "image"
    if top == "audio":
        return "audio"
    if top == "video":
        return "video"
    return "document"


def media_part(
    kind: MediaKind | None,
    media_type: str | None = None,
    data: str | bytes | None = None,
    *,
    url: str | None = None,
    file: str | None = None,
    name: str | None = None,
    detail: str | None = None,
) -> MediaPart:
    """A neutral media part: base64 ``data`` (or raw bytes) become their digest; ``url`` / ``file`` are kept.

    Raises ValueError when ``data`` is not base64 (the codec names the field).
    """
    chosen = kind or media_kind(media_type or "")
    out: MediaPart = {"type": chosen}
    if media_type:
        out["mediaType"] = media_type
    if data is not None:
        raw = data if isinstance(data, bytes) else _b64decode(data)
        out["sha256"] = hashlib.sha256(raw).hexdigest()
        out["size"] = len(raw)
        note_bytes(out["sha256"], media_type, raw)  # the run's media store keeps them once (cassette/media.py)
    if url is not None:
        out["url"] = url
    if file is not None:
        out["file"] = file
    if name is not None:
        out["name"] = name
    if detail is not None:
        out["detail"] = detail
    return out


def _b64decode(data: str) -> bytes:
    """Base64, standard or URL-safe (the SDKs send either); ValueError when it is neither."""
    altchars = b"-_" if ("-" in data or "_" in data) else None
    return base64.b64decode(data, altchars=altchars, validate=True)


def data_url(url: str) -> tuple[str, str] | None:
    """(media type, base64 data) of a ``data:<type>;base64,<data>`` URL; None for any other URL."""
    if not url.startswith("data:"):
        return None
    head, sep, data = url[5:].partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    return head[: -len(";base64")] or "application/octet-stream", data


def joined_parts(parts: list[Any]) -> Any:
    """Content of text and media parts: a string when it is text alone (adjacent text joined), else the parts."""
    out: list[Any] = []
    for part in parts:
        if part.get("type") == "text" and out and out[-1].get("type") == "text":
            out[-1] = {"type": "text", "text": out[-1]["text"] + part["text"]}
        elif part.get("type") != "text" or part.get("text"):
            out.append(part)
    if all(p.get("type") == "text" for p in out):
        return "".join(p["text"] for p in out)
    return out


class Tokens(TypedDict):
    """Blackbox's extension: an answer's token counts, in neutral names (see docs/cassette.md).

    ``input`` counts every input token (cached ones included), ``output`` every
    output token (reasoning included); ``cachedInput`` and ``reasoning`` are the
    parts of those, present only when not zero.
    """

    input: int
    output: int
    cachedInput: NotRequired[int]
    reasoning: NotRequired[int]


class ReasoningPart(TypedDict):
    """Blackbox's extension: what the model thought before answering, kept to be served back (never compared).

    ``thinking``: visible thinking (``text``: Anthropic thinking, a Gemini thought)
    or a summary of it (``summary``: the Responses API's summary texts), with the
    provider's opaque ``signature`` (Anthropic's signature, the Responses API's
    ``encrypted_content``, Gemini's ``thoughtSignature``) that it checks when the
    turn is sent back. ``redacted_thinking``: Anthropic's encrypted ``data``.
    A Gemini signature that came on the answer's text or a call has no text and
    says where (``on``), so a replay puts it back there.
    """

    type: Literal["thinking", "redacted_thinking"]
    text: NotRequired[str]
    summary: NotRequired[list[str]]
    signature: NotRequired[str]
    data: NotRequired[str]
    on: NotRequired[str]  # Gemini: a signature that came on the answer's "text" or on a function "call", not on a thought


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def tokens(given_input: Any, given_output: Any, cached_input: Any = 0, reasoning: Any = 0) -> Tokens | None:
    """Neutral token counts from a provider's numbers (anything not a positive integer is 0); None when all are 0.

    None keeps an answer without counts (or with zero usage, what a replay reported
    before counts were recorded) the payload, and hash, it always was.
    """
    counts = [_count(v) for v in (given_input, given_output, cached_input, reasoning)]
    if not any(counts):
        return None
    out: Tokens = {"input": counts[0], "output": counts[1]}
    if counts[2]:
        out["cachedInput"] = counts[2]
    if counts[3]:
        out["reasoning"] = counts[3]
    return out


def tokens_of(output: Any) -> tuple[int, int, int, int]:
    """(input, output, cached input, reasoning) of a model_output: zeros when it has no ``tokens``."""
    t = output.get("tokens") if isinstance(output, dict) else None
    if not isinstance(t, dict):
        return 0, 0, 0, 0
    return _count(t.get("input")), _count(t.get("output")), _count(t.get("cachedInput")), _count(t.get("reasoning"))


def reasoning_of(output: Any) -> list[JSONObject]:
    """The reasoning parts a model_output carries, in order (empty when none were recorded)."""
    parts = output.get("reasoning") if isinstance(output, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


class CompactionTriggerPart(TypedDict):
    """Blackbox's extension: the agent asks the model to compact the conversation so far (Codex's ``compaction_trigger``)."""

    type: Literal["compaction_trigger"]


class CompactionPart(TypedDict):
    """Blackbox's extension: the conversation so far as the model compacted it, standing in for it from then on.

    ``data`` is the provider's opaque form (the Responses API's ``encrypted_content``
    of a ``compaction`` item), kept as given: the agent sends it back in its later
    history, and the provider reads it. It is a ``model_output``'s ``compaction`` and,
    in the history, an assistant message's part; compared like any other part.
    """

    type: Literal["compaction"]
    data: str


class RefusalPart(TypedDict):
    """Blackbox's extension: a refusal the model gave, sent back in an assistant message of the history.

    OpenAI's ``refusal`` (chat completions: the message's ``refusal`` or a ``refusal``
    content part; Responses: a ``refusal`` part). A part of its own so that a refusal and
    the same words as text are not the same history; compared like any other part.
    """

    type: Literal["refusal"]
    text: str


def compaction_of(output: Any) -> CompactionPart | None:
    """The compaction a model_output carries (None when it has none)."""
    part = output.get("compaction") if isinstance(output, dict) else None
    if isinstance(part, dict) and part.get("type") == "compaction" and isinstance(part.get("data"), str):
        return {"type": "compaction", "data": part["data"]}
    return None
