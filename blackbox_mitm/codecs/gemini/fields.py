"""What the Gemini request and answer sides share: readers of parts, call positions, camelCase field names."""

from __future__ import annotations

import re
from typing import Any

from blackbox_mitm.cassette.payloads import ModelOutput, ToolCall
from blackbox_mitm.codecs.base import STOP_LENGTH, CallIds
from blackbox_mitm.codecs.common.ids import digest
from blackbox_mitm.codecs.gemini import NAME, REFUSALS

__all__ = ["call_positions", "camel_content", "camel_request", "first_text", "neutral_output", "part_kind"]

_DATA_KEYS = (
    "text",
    "functionCall",
    "functionResponse",
    "inlineData",
    "fileData",
    "executableCode",
    "codeExecutionResult",
    "toolCall",
    "toolResponse",
)


def call_positions(ids: CallIds, first_text: str) -> dict[str, str]:
    """One conversation's ``"message index:call index:name"`` -> call-N map, for function calls without an id.

    A conversation is told apart by the text of its first message, so that two
    conversations of one run (an agent and its sub-agent) whose calls sit at the
    same places do not share ids.
    """
    state = ids.codec_state(NAME).setdefault("positions", {})
    found: dict[str, str] = state.setdefault(digest(first_text, 16), {})
    return found


def first_text(messages: list[Any]) -> str:
    """The text of a neutral transcript's first message (what ``call_positions`` keys a conversation by)."""
    content = messages[0].get("content") if messages and isinstance(messages[0], dict) else ""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text")


def part_kind(part: Any, where: str) -> str | None:
    """The data key of a part (``text``, ``functionCall``, ...), None for a part with none (a bare signature)."""
    if not isinstance(part, dict):
        REFUSALS.malformed(where, "a part is not an object")
    for key in _DATA_KEYS:
        if part.get(key) is not None:
            if key == "text" and not isinstance(part["text"], str):
                REFUSALS.malformed(f"{where}.text", "text is not a string")
            return key
    return None


def neutral_output(text: str, calls: list[ToolCall], length: bool) -> ModelOutput:
    output: ModelOutput = {"type": "tool_calls", "calls": calls} if calls else {"type": "final_answer", "text": text}
    if calls and text:
        output["text"] = text
    if length:
        output["stop"] = STOP_LENGTH
    return output


# --- field names -----------------------------------------------------------------------
# The API reads proto JSON, which accepts a field's snake_case name as well as its
# camelCase one, and google-genai sends some of each (``parameters_json_schema``,
# ``thinking_budget``). The structure is renamed to camelCase before it is read;
# values that are the user's data (args, response, schemas) are never touched.

_SNAKE = re.compile(r"_([a-z0-9])")
Shape = dict[str, tuple[bool, "Shape"]]  # field -> (is a list, the shape of its objects)
_CALL: Shape = {}
_MEDIA: Shape = {"inlineData": (False, {}), "fileData": (False, {})}
_RESPONSE: Shape = {"parts": (True, _MEDIA)}  # a multimodal function response's media (its ``response`` is data)
_PART: Shape = {"functionCall": (False, _CALL), "functionResponse": (False, _RESPONSE), **_MEDIA}
_CONTENT: Shape = {"parts": (True, _PART)}
_REQUEST: Shape = {
    "contents": (True, _CONTENT),
    "systemInstruction": (False, _CONTENT),
    "tools": (True, {"functionDeclarations": (True, {})}),
    "toolConfig": (False, {"functionCallingConfig": (False, {}), "retrievalConfig": (False, {"latLng": (False, {})})}),
    "generationConfig": (False, {"thinkingConfig": (False, {})}),
    "safetySettings": (True, {}),
}


def _upper(m: re.Match[str]) -> str:
    return m.group(1).upper()


def _camel(value: Any, shape: Shape) -> Any:
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = _SNAKE.sub(_upper, key) if isinstance(key, str) and "_" in key else key  # the SDKs send camelCase
        if name in out and name != key:
            continue  # both spellings: the camelCase one wins
        if name in shape:
            many, inner = shape[name]
            item = [_camel(v, inner) for v in item] if many and isinstance(item, list) else item if many else _camel(item, inner)
        out[name] = item
    return out


def camel_request(data: dict[str, Any]) -> dict[str, Any]:
    """A request body with every structural field name in camelCase (a new object; data values shared)."""
    result: dict[str, Any] = _camel(data, _REQUEST)
    return result


def camel_content(content: Any) -> Any:
    """One content (``{"role", "parts"}``) with camelCase field names."""
    return _camel(content, _CONTENT)
