"""Gemini's media outside a user turn: a ``functionResponse``'s ``parts``, and ``systemInstruction``'s media.

Gemini 3's multimodal function responses: a ``functionResponse`` carries its JSON
``response`` and, beside it, ``parts: [{inlineData | fileData}]`` (a screenshot
after a computer-use action, the picture a tool fetched). The ``response`` may
point at one of them by its ``displayName`` (``{"$ref": "shot.png"}``), which is
the user's data and stays as sent. The neutral tool result keeps both::

    {"type": "tool_result", "toolCallId", "toolName",
     "result": {"response": {...as sent...}, "parts": [{"type": "image", "mediaType", "sha256", "size", "name"?}]}}

only when ``parts`` holds something: a function response without parts is its
``response`` object, as it always was (and hashes as before). Each media part is
the neutral media part the history's ``inlineData`` / ``fileData`` become
(``media_of``): inline bytes by digest (kept once per run in the media
file), a ``fileUri`` as the reference. A part's ``mediaProcessing`` (a video
processing hint) is, like a content part's ``mediaResolution``, not compared.

``systemInstruction`` media (``inlineData`` / ``fileData`` parts beside its text)
are the model input's ``systemMedia`` (Blackbox's extension, docs/cassette.md):
the media parts in order, compared by digest; ``systemPrompt`` stays the text.
"""

from __future__ import annotations

from typing import Any

from blackbox_mitm.cassette.payloads import MediaPart, media_part
from blackbox_mitm.codecs.gemini import REFUSALS
from blackbox_mitm.codecs.gemini.fields import part_kind

__all__ = ["MEDIA_KINDS", "function_result", "media_of", "response_parts", "system_parts"]

MEDIA_KINDS = ("inlineData", "fileData")


def media_of(blob: Any, kind: str, where: str) -> MediaPart:
    """``inlineData`` (its bytes by digest) or ``fileData`` (its URI, the reference) -> a neutral media part."""
    if not isinstance(blob, dict):
        REFUSALS.malformed(where, f"{kind} is not an object")
    mime = blob.get("mimeType") if isinstance(blob.get("mimeType"), str) else None
    name = blob.get("displayName") if isinstance(blob.get("displayName"), str) else None
    if kind == "inlineData" and isinstance(blob.get("data"), str):
        try:
            return media_part(None, mime, blob["data"], name=name)
        except ValueError:
            REFUSALS.malformed(f"{where}.data", "the data is not base64")
    if kind == "fileData" and isinstance(blob.get("fileUri"), str):
        return media_part(None, mime, url=blob["fileUri"], name=name)
    REFUSALS.malformed(where, f"{kind} without its data or fileUri")


def response_parts(resp: dict[str, Any], where: str) -> list[MediaPart]:
    """A ``functionResponse``'s ``parts`` as neutral media parts, in order (empty when it has none)."""
    parts = resp.get("parts")
    if parts is None:
        return []
    if not isinstance(parts, list):
        REFUSALS.malformed(f"{where}.parts", "a functionResponse's parts is not a list")
    out: list[MediaPart] = []
    for j, part in enumerate(parts):
        at = f"{where}.parts[{j}]"
        if not isinstance(part, dict):
            REFUSALS.malformed(at, "a functionResponse part is not an object")
        kinds = [k for k in MEDIA_KINDS if part.get(k) is not None]
        if len(kinds) != 1:
            REFUSALS.malformed(at, "a functionResponse part holds exactly one of inlineData and fileData")
        out.append(media_of(part[kinds[0]], kinds[0], f"{at}.{kinds[0]}"))
    return out


def function_result(response: Any, media: list[MediaPart]) -> Any:
    """The neutral ``result`` of a function response: its ``response`` alone, or with its media parts beside it."""
    value = {} if response is None else response
    if not media:
        return value
    return {"response": value, "parts": media}


def system_parts(system: dict[str, Any]) -> tuple[str, list[MediaPart]]:
    """``systemInstruction``'s parts -> (its text joined, its media parts in order); other parts are refused by name."""
    parts = system.get("parts")
    if not isinstance(parts, list):
        REFUSALS.malformed("systemInstruction", "systemInstruction is neither a string nor a content with parts")
    texts: list[str] = []
    media: list[MediaPart] = []
    for j, part in enumerate(parts):
        where = f"systemInstruction.parts[{j}]"
        kind = part_kind(part, where)
        if kind is None:
            continue
        if kind == "text":
            texts.append(part["text"])
        elif kind in MEDIA_KINDS:
            media.append(media_of(part[kind], kind, f"{where}.{kind}"))
        else:
            REFUSALS.refuse("gemini.non_text", f"{where}.{kind}")
    return "".join(texts), media
