"""InvokeModel answers: an Anthropic Message (the Anthropic codec reads and writes it); Bedrock's error shape."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from blackbox_mitm.cassette.payloads import ModelOutput
from blackbox_mitm.codecs import anthropic_messages
from blackbox_mitm.codecs.base import CallIds, DecodedRequest, ErrorResponse
from blackbox_mitm.codecs.common.jsonio import dumps_bytes

__all__ = ["ERROR_TYPES", "decode_response", "encode_error", "encode_response", "error_type_of", "normalize_answer"]

# HTTP status -> the exception name Bedrock sends in x-amzn-ErrorType (boto3 raises it by that name).
ERROR_TYPES = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


def decode_response(body: bytes | Mapping[str, Any], ids: CallIds, request: DecodedRequest) -> ModelOutput:
    """A Message body -> the neutral ``model_output`` (Bedrock's invocation metrics are not recorded)."""
    return anthropic_messages.decode_response(body, ids, request)


def encode_response(output: Mapping[str, Any], *, request: DecodedRequest, ids: CallIds, created_ms: int) -> dict[str, Any]:
    """A neutral ``model_output`` -> the Message body Bedrock returns (``model`` echoes the path's id)."""
    return anthropic_messages.encode_response(output, request=request, ids=ids, created_ms=created_ms)


def encode_error(message: str, *, status: int = 400, error_type: str | None = None) -> ErrorResponse:
    """Bedrock's error: ``{"message"}`` named by ``x-amzn-ErrorType``; not retried."""
    headers = {"content-type": "application/json", "x-amzn-errortype": f"{error_type_of(status)}:", "x-should-retry": "false"}
    if error_type is not None:
        headers["x-blackbox-error"] = error_type
    return ErrorResponse(status, headers, dumps_bytes({"message": message}, allow_nan=False))


def error_type_of(status: int) -> str:
    return ERROR_TYPES.get(status, "InternalServerException" if status >= 500 else "ValidationException")


def normalize_answer(answer: Any, ids: CallIds) -> ModelOutput | None:
    """A user-written answer (``fork --response``): an Anthropic Message."""
    return anthropic_messages.normalize_answer(answer, ids)
