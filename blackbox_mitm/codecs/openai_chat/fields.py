"""The chat-completions wire readers the request and response sides share."""

from __future__ import annotations

import json
from typing import Any

from blackbox_mitm.cassette.payloads import MediaPart, RefusalPart, TextPart, data_url, joined_parts, media_part
from blackbox_mitm.codecs.openai_chat import REFUSALS

__all__ = ["AZURE_FILTERS", "assistant_parts", "content_of", "filtered_at", "function_call", "given", "media_of", "refusal_text", "text_of"]

# Azure OpenAI's content-filter annotations: on the response (the prompt's) and on each choice (the answer's).
AZURE_FILTERS = ("prompt_filter_results", "content_filter_results")


def given(obj: dict[str, Any], key: str) -> bool:
    return obj.get(key) is not None


def refusal_text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def text_of(content: Any, path: str) -> str:
    """A message's text: a string as is, text parts joined with ``""``; anything else is refused.

    System and developer messages are read with this alone: the API takes only text parts there, so
    an image, audio or file part is refused as something the API does not accept.
    """
    return "".join(p["text"] for p in _parts(content, path, refusals=False))


def assistant_parts(content: Any, path: str) -> list[TextPart | RefusalPart]:
    """An assistant message's content in order: its text parts (a string is one; null none) and refusal parts."""
    return [] if content is None else _parts(content, path, refusals=True)


def _parts(content: Any, path: str, *, refusals: bool) -> list[TextPart | RefusalPart]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        REFUSALS.malformed(path, "content is neither a string nor a list of parts")
    out: list[TextPart | RefusalPart] = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            out.append({"type": "text", "text": part["text"]})
        elif kind == "refusal" and refusals and isinstance(part.get("refusal"), str):
            out.append({"type": "refusal", "text": part["refusal"]})
        elif isinstance(kind, str) and kind not in ("text", "refusal"):  # only system, developer and assistant content gets here
            REFUSALS.refuse("openai.non_text_role", f"{path}[{j}].type", kind)
        else:
            REFUSALS.malformed(f"{path}[{j}]", "a content part is not a text part")
    return out


def content_of(content: Any, path: str) -> Any:
    """A user or tool message's content: text alone as one string (as always); with images, files or audio, the parts."""
    if not isinstance(content, list) or all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return text_of(content, path)
    parts: list[Any] = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        elif kind in ("image_url", "input_audio", "file"):
            parts.append(media_of(part, f"{path}[{j}]"))
        elif isinstance(kind, str):
            REFUSALS.refuse("openai.image_content", f"{path}[{j}].type", kind)
        else:
            REFUSALS.malformed(f"{path}[{j}]", "a content part without a type")
    return joined_parts(parts)


def media_of(part: dict[str, Any], where: str) -> MediaPart:
    """An ``image_url``, ``input_audio`` or ``file`` part -> a neutral media part (inline bytes by digest)."""
    kind = part["type"]
    body = part.get(kind)
    if not isinstance(body, dict):
        REFUSALS.malformed(f"{where}.{kind}", f"a {kind} part without its {kind} object")
    try:
        if kind == "image_url" and isinstance(body.get("url"), str):
            detail = body.get("detail") if isinstance(body.get("detail"), str) else None
            inline = data_url(body["url"])
            if inline is not None:
                return media_part("image", inline[0], inline[1], detail=detail)
            return media_part("image", url=body["url"], detail=detail)
        if kind == "input_audio" and isinstance(body.get("data"), str):
            fmt = body.get("format") if isinstance(body.get("format"), str) else "wav"
            return media_part("audio", f"audio/{fmt}", body["data"])
        if kind == "file":
            name = body.get("filename") if isinstance(body.get("filename"), str) else None
            inline = data_url(body["file_data"]) if isinstance(body.get("file_data"), str) else None
            if inline is not None:
                return media_part("document", inline[0], inline[1], name=name)
            if isinstance(body.get("file_id"), str):
                return media_part("document", file=body["file_id"], name=name)
    except ValueError:
        REFUSALS.malformed(f"{where}.{kind}", "its data is not base64")
    REFUSALS.malformed(f"{where}.{kind}", f"a {kind} part Blackbox cannot read (no data, URL or file id)")


def _arguments(raw: Any, path: str) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            pass
    REFUSALS.refuse("openai.tool_arguments", path)


def function_call(call: Any, path: str) -> tuple[str | None, str, Any]:
    """(native id, name, parsed arguments) of one function tool call, in a response or the history."""
    if not isinstance(call, dict):
        REFUSALS.malformed(path, "a tool call is not an object")
    if (call.get("type") or "function") != "function":
        REFUSALS.refuse("openai.custom_tool_call", f"{path}.type")
    fn = call.get("function")
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        REFUSALS.malformed(f"{path}.function", "a tool call without a function name")
    native = call.get("id")
    return (
        (native if isinstance(native, str) and native else None),
        fn["name"],
        _arguments(fn.get("arguments"), f"{path}.function.arguments"),
    )


def filtered_at(value: Any, path: str) -> str | None:
    """Where Azure's content-filter annotations flag something (``filtered`` or ``detected`` true), else None."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("filtered", "detected") and item is True:
                return f"{path}.{key}"
            found = filtered_at(item, f"{path}.{key}")
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = filtered_at(item, f"{path}[{i}]")
            if found:
                return found
    return None
