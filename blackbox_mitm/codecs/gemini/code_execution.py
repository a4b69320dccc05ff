"""Gemini's ``codeExecution`` built-in tool: the code the model ran at Google, and its result, are model output.

Code execution runs at Google inside one call: the answer carries an
``executableCode`` part (``{language, code}``) and then a
``codeExecutionResult`` part (``{outcome, output}``), between its text parts, and
the client sends both back in the model turn of its history. They are kept as
neutral server-side parts (``cassette/server_parts.py``), in place and in order:
``executableCode`` is a ``server_tool_call`` named ``codeExecution`` whose input
is ``{language, code}``, ``codeExecutionResult`` a ``server_tool_result`` of kind
``codeExecutionResult`` whose result is ``{outcome, output}`` as sent (over
``RESULT_INLINE_MAX`` by digest, its bytes in the run's media file). Neither has a
provider id: the pair gets a ``call-N``, known by its place in the conversation
(``"message index:x<k>"``, like a function call without an id), so the same
code is the same ``call-N`` in every later history. A replay gives both back
where they were; nothing runs again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from blackbox_mitm.cassette.server_parts import AnswerPart, result_of, result_part
from blackbox_mitm.codecs.gemini import REFUSALS

__all__ = ["KINDS", "TOOL", "is_code_part", "neutral_part", "wire_part"]

TOOL = "codeExecution"
KINDS = ("executableCode", "codeExecutionResult")


def _strings(value: Any, where: str, kind: str, required: tuple[str, ...], optional: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        REFUSALS.malformed(where, f"{kind} is not an object")
    for key in required:
        if not isinstance(value.get(key), str):
            REFUSALS.malformed(f"{where}.{key}", f"{kind} without a string {key}")
    for key in optional:
        if value.get(key) is not None and not isinstance(value[key], str):
            REFUSALS.malformed(f"{where}.{key}", f"{kind}'s {key} is not a string")
    return dict(value)


def neutral_part(kind: str, value: Any, where: str, call_id: str) -> AnswerPart:
    """An ``executableCode`` or ``codeExecutionResult`` part -> its neutral server-side part (a clear error when malformed)."""
    if kind == "executableCode":
        code = _strings(value, where, kind, ("language", "code"), ())
        return {"type": "server_tool_call", "toolCallId": call_id, "toolName": TOOL, "toolInput": code}
    result = _strings(value, where, kind, ("outcome",), ("output",))
    return dict(result_part(call_id, "codeExecutionResult", result))  # a huge output goes to the run's media file


def is_code_part(part: Mapping[str, Any]) -> bool:
    """A neutral part that came from code execution."""
    return (part.get("type") == "server_tool_call" and part.get("toolName") == TOOL) or (
        part.get("type") == "server_tool_result" and part.get("kind") == "codeExecutionResult"
    )


def wire_part(part: Mapping[str, Any]) -> dict[str, Any]:
    """A neutral code-execution part -> the Gemini part, as it was recorded."""
    if part.get("type") == "server_tool_call":
        return {"executableCode": dict(part.get("toolInput") or {})}
    return {"codeExecutionResult": dict(result_of(part) or {})}
