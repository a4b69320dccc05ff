"""Responses input media (``input_image``, ``input_file``, ``input_audio`` parts, a computer call's screenshot) -> neutral media parts."""

from __future__ import annotations

from typing import Any

from blackbox_mitm.cassette.payloads import MediaPart, data_url, media_part
from blackbox_mitm.codecs.openai_responses import REFUSALS

__all__ = ["media_of"]


def media_of(part: dict[str, Any], where: str) -> MediaPart:
    """An input_image, input_file or input_audio part -> a neutral media part (inline bytes by digest, a URL or file id kept)."""
    kind = part["type"]
    name = part.get("filename") if isinstance(part.get("filename"), str) else None
    detail = part.get("detail") if isinstance(part.get("detail"), str) else None
    try:
        if kind == "input_audio" and isinstance(part.get("input_audio"), dict):
            audio = part["input_audio"]
            fmt = audio.get("format") if isinstance(audio.get("format"), str) else "wav"
            if isinstance(audio.get("data"), str):
                return media_part("audio", f"audio/{fmt}", audio["data"])
        url = part.get("image_url") if kind == "input_image" else part.get("file_data") or part.get("file_url")
        chosen: Any = "image" if kind == "input_image" else "document"
        if isinstance(url, str):
            inline = data_url(url)
            if inline is not None:
                return media_part(chosen, inline[0], inline[1], name=name, detail=detail)
            if kind == "input_file" and part.get("file_data") is not None:
                return media_part(chosen, None, url, name=name)  # bare base64 file_data
            return media_part(chosen, url=url, name=name, detail=detail)
        if isinstance(part.get("file_id"), str):
            return media_part(chosen, file=part["file_id"], name=name, detail=detail)
    except ValueError:
        REFUSALS.malformed(where, f"the {kind}'s data is not base64")
    REFUSALS.malformed(where, f"an {kind} without data, a URL or a file id")
