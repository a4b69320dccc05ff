"""rawPredict answers: an Anthropic Message, read and written by the Anthropic codec."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from blackbox_mitm.cassette.payloads import ModelOutput
from blackbox_mitm.codecs import anthropic_messages
from blackbox_mitm.codecs.base import CallIds, DecodedRequest, ErrorResponse

__all__ = ["decode_response", "encode_error", "encode_response", "normalize_answer"]


def decode_response(body: bytes | Mapping[str, Any], ids: CallIds, request: DecodedRequest) -> ModelOutput:
    return anthropic_messages.decode_response(body, ids, request)


def encode_response(output: Mapping[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> dict[str, Any]:
    return anthropic_messages.encode_response(output, request=request, ids=ids, created_ms=created_ms)


def encode_error(message: str, *, status: int = 400, error_type: str | None = None) -> ErrorResponse:
    """The Anthropic error shape rawPredict passes on; not retried."""
    return anthropic_messages.encode_error(message, status=status, error_type=error_type)


def normalize_answer(answer: Any, ids: CallIds) -> ModelOutput | None:
    return anthropic_messages.normalize_answer(answer, ids)
