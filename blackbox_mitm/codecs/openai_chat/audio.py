"""Chat-completions audio output: ``message.audio`` <-> an answer's ``audio`` part, and the history's ``audio: {id}``.

A request with ``modalities: ["text", "audio"]`` and ``audio: {voice, format}``
gets ``choices[0].message.audio = {id, data, expires_at, transcript}`` (in a
stream: ``delta.audio`` pieces). The neutral answer is a ``final_answer`` (or
``tool_calls``) whose ``text`` is the transcript (what a reader that predates
the extension shows) and whose ``content`` (``docs/cassette.md``) holds the text
parts and one ``audio`` part: ``{type, mediaType, sha256, size, transcript,
expiresIn?}``. The bytes go to the run's media file; ``mediaType`` comes from the
request's ``audio.format`` (``wav`` -> ``audio/wav``, ``pcm16`` -> ``audio/pcm``).

Ids: the provider's ``audio_…`` id never enters the cassette. While recording,
``ids.codec_state`` maps it to the answer's neutral audio part; a replay serves
``audio_bb<hash of the bytes' digest and the answer's time>`` and maps that id
the same way. An assistant message of a later request that refers to the audio
(``audio: {"id": …}``) becomes that part without its transcript, so it matches
at replay as at record. ``expires_at`` is kept as its offset from the answer's
``created`` (``expiresIn``, seconds) and served as the served ``created`` plus
that offset: the recorded lifetime, relative to the answer's own time.

After a fork's cut (``forward_body``) the request goes to OpenAI, where a served
``audio_bb…`` id names nothing: each assistant message whose ``audio`` is one we
served is sent with the answer's transcript as its text content instead (text
the API accepts in an assistant message), and without ``audio``. The provider
then sees what was said as text; the recorded step still holds the audio part.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from blackbox_mitm.cassette.media import bytes_for
from blackbox_mitm.cassette.payloads import media_part
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.codecs.common.ids import digest
from blackbox_mitm.codecs.openai_chat import NAME, REFUSALS

__all__ = [
    "AUDIO_FRAGMENT",
    "answer_audio",
    "audio_deltas",
    "finish_audio",
    "forward_served_audio",
    "history_audio",
    "merge_audio_delta",
    "served_audio",
    "text_parts",
]

AUDIO_FRAGMENT = 8192  # base64 characters per streamed ``delta.audio.data`` piece (a multiple of 4: each piece decodes alone)
SERVED_PREFIX = "audio_bb"
DEFAULT_LIFETIME = 3600  # seconds: OpenAI's stated lifetime of an audio answer, for one recorded without expires_at
_FORMATS = {"wav": "audio/wav", "mp3": "audio/mpeg", "flac": "audio/flac", "opus": "audio/opus", "aac": "audio/aac", "pcm16": "audio/pcm"}


def _known(ids: CallIds) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = ids.codec_state(NAME).setdefault("audio", {})
    return found


def _spoken(ids: CallIds) -> dict[str, str]:
    """Our served audio ids -> the transcript of the answer each came with (for ``forward_served_audio``)."""
    found: dict[str, str] = ids.codec_state(NAME).setdefault("served_audio", {})
    return found


def _media_type(request: DecodedRequest) -> str:
    params = request.model_input.get("params") or {}
    audio = params.get("audio") if isinstance(params, dict) else None
    fmt = audio.get("format") if isinstance(audio, dict) else None
    return _FORMATS.get(str(fmt), f"audio/{fmt}" if isinstance(fmt, str) and fmt else "audio/wav")


def _history_part(part: Mapping[str, Any]) -> dict[str, Any]:
    """What a later request's ``audio: {id}`` stands for: the answer's audio part without its transcript and lifetime."""
    return {k: v for k, v in part.items() if k not in ("transcript", "expiresIn")}


def answer_audio(audio: Any, at: str, ids: CallIds, request: DecodedRequest, created: Any) -> dict[str, Any]:
    """A response's ``message.audio`` -> the neutral audio part (its bytes noted for the run's media); its id mapped."""
    if not isinstance(audio, dict) or not isinstance(audio.get("data"), str):
        REFUSALS.malformed(at, "an audio answer without base64 data")
    transcript = audio.get("transcript")
    if transcript is not None and not isinstance(transcript, str):
        REFUSALS.malformed(f"{at}.transcript", "the audio's transcript is not a string")
    try:
        part: dict[str, Any] = dict(media_part("audio", _media_type(request), audio["data"]))
    except ValueError:
        REFUSALS.malformed(f"{at}.data", "its data is not base64")
    part["transcript"] = transcript or ""
    expires = audio.get("expires_at")
    if _is_int(expires) and _is_int(created):
        part["expiresIn"] = expires - created
    native = audio.get("id")
    if isinstance(native, str) and native:
        _known(ids)[native] = _history_part(part)
    return part


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def history_audio(audio: Any, at: str, ids: CallIds) -> dict[str, Any]:
    """An assistant message's ``audio: {id}`` -> the audio part of the answer that id came with."""
    native = audio.get("id") if isinstance(audio, dict) else None
    if not isinstance(native, str) or not native:
        REFUSALS.malformed(f"{at}.id", "an assistant message's audio without an id")
    part = _known(ids).get(native)
    if part is None:
        REFUSALS.refuse("openai.audio_unknown_id", f"{at}.id")
    return dict(part)


def text_parts(output: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, str | None]:
    """(the answer's audio part, its content text) when it carries audio; (None, None) otherwise."""
    content = output.get("content")
    if not isinstance(content, list):
        return None, None
    audio = next((p for p in content if isinstance(p, dict) and p.get("type") == "audio"), None)
    if audio is None:
        return None, None
    texts = [str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"]
    return audio, ("".join(texts) if texts else None)


def served_audio(part: Mapping[str, Any], ids: CallIds, created_ms: int) -> dict[str, Any]:
    """The wire ``message.audio`` of a served answer: our id (mapped for the next request), the recorded bytes."""
    served = SERVED_PREFIX + digest(f"{created_ms}:{part.get('sha256')}")
    _known(ids)[served] = _history_part(part)
    _spoken(ids)[served] = str(part.get("transcript", ""))
    out: dict[str, Any] = {"id": served, "data": base64.b64encode(bytes_for(part)).decode("ascii")}
    expires_in = part.get("expiresIn")
    out["expires_at"] = created_ms // 1000 + (expires_in if isinstance(expires_in, int) else DEFAULT_LIFETIME)
    out["transcript"] = str(part.get("transcript", ""))
    return out


def audio_deltas(audio: Mapping[str, Any], fragment: int) -> list[dict[str, Any]]:
    """A served ``message.audio`` as stream deltas: the id once with the first transcript piece, then data, then expiry."""
    transcript, data = str(audio["transcript"]), str(audio["data"])
    pieces = [transcript[i : i + fragment] for i in range(0, len(transcript), fragment)] or [""]
    deltas: list[dict[str, Any]] = [{"audio": {"id": audio["id"], "transcript": pieces[0]}}]
    deltas += [{"audio": {"transcript": p}} for p in pieces[1:]]
    deltas += [{"audio": {"data": data[i : i + AUDIO_FRAGMENT]}} for i in range(0, len(data), AUDIO_FRAGMENT)]
    deltas.append({"audio": {"expires_at": audio["expires_at"]}})
    return deltas


def merge_audio_delta(message: dict[str, Any], delta: Any) -> None:
    """One ``delta.audio`` into the message being added up: id once, transcript joined, each data piece decoded and joined."""
    if not isinstance(delta, dict):
        raise TypeError(f"delta.audio is {delta!r}, not an object")
    audio = message.setdefault("audio", {"transcript": "", "_data": b""})
    if delta.get("id") and not audio.get("id"):
        audio["id"] = delta["id"]
    if isinstance(delta.get("transcript"), str):
        audio["transcript"] += delta["transcript"]
    if isinstance(delta.get("data"), str):
        audio["_data"] += base64.b64decode(delta["data"], validate=True)
    if delta.get("expires_at") is not None:
        audio["expires_at"] = delta["expires_at"]


def finish_audio(message: dict[str, Any]) -> None:
    """The added-up audio's bytes as the base64 ``data`` a whole answer carries."""
    audio = message.get("audio")
    if isinstance(audio, dict) and "_data" in audio:
        audio["data"] = base64.b64encode(audio.pop("_data")).decode("ascii")


def forward_served_audio(messages: Any, ids: CallIds) -> bool:
    """An assistant message's ``audio: {id}`` naming an answer we served -> its transcript as text; whether any changed."""
    spoken = _spoken(ids)
    changed = False
    for msg in messages if isinstance(messages, list) else []:
        audio = msg.get("audio") if isinstance(msg, dict) and msg.get("role") == "assistant" else None
        native = audio.get("id") if isinstance(audio, dict) else None
        if not isinstance(native, str) or native not in spoken:
            continue
        said, content = spoken[native], msg.get("content")
        if content is None or content == "":
            msg["content"] = said
        else:  # text the message also carried: after what was said, as text parts
            rest = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
            msg["content"] = [{"type": "text", "text": said}, *rest]
        del msg["audio"]
        changed = True
    return changed
