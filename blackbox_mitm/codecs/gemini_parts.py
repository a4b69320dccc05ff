"""What the Gemini codec's modules share: its name, its refusal rows, and readers of parts.

``gemini`` (requests), ``gemini_answers`` (responses and synthesized answers) and
``gemini_stream`` (streams) are one codec; ``gemini`` is the module registered.
Plain Python, no mitmproxy.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, NoReturn

from blackbox_mitm.codecs.base import STOP_LENGTH, CallIds
from blackbox_mitm.codecs.refusals import Refusal
from blackbox_mitm.errors import BlackboxUnsupportedError

__all__ = [
    "NAME",
    "PROVIDER",
    "REFUSALS",
    "call_positions",
    "camel_content",
    "camel_request",
    "first_text",
    "load_object",
    "malformed",
    "neutral_output",
    "part_kind",
    "refuse",
]

NAME = "gemini"
PROVIDER = "gemini"

# One row per line: this is a table.
# fmt: off
REFUSALS: tuple[Refusal, ...] = (
    Refusal("gemini.code_assist", PROVIDER, "path", "Code Assist (Gemini CLI signed in with a Google account: cloudcode-pa.googleapis.com/v1internal)", "not supported: the signed-in CLI also needs Code Assist's setup calls and Google sign-in, which are not model calls; use GEMINI_API_KEY"),
    Refusal("gemini.stream_json", PROVIDER, "path", "streamGenerateContent without ?alt=sse (a streamed JSON array)", "only server-sent events are recorded: use alt=sse (the SDKs and Gemini CLI do)"),
    Refusal("gemini.candidate_count", PROVIDER, "request", "several candidates per request (generationConfig.candidateCount > 1)", "several candidates per request are not supported: a replay returns one"),
    Refusal("gemini.non_text", PROVIDER, "request", "non-text parts (inlineData, fileData, executableCode, ...) in contents, systemInstruction or a functionResponse", "non-text content is not supported yet: only text is recorded"),
    Refusal("gemini.builtin_tool", PROVIDER, "request", "built-in tools (googleSearch, codeExecution, urlContext, fileSearch, googleMaps, computerUse, ...)", "built-in tools are not supported: their results are produced by the provider and could not be replayed"),
    Refusal("gemini.cached_content", PROVIDER, "request", "cachedContent (a prompt cached on the server)", "server-side state: the cached part of the prompt is not in the request, so it could be neither compared nor replayed"),
    Refusal("gemini.output_modality", PROVIDER, "request", "non-text output (responseModalities other than TEXT, speechConfig, imageConfig)", "only text output is recorded"),
    Refusal("gemini.prompt_blocked", PROVIDER, "response", "a response whose prompt was blocked (promptFeedback.blockReason)", "it holds no answer a replay could give back"),
    Refusal("gemini.candidates", PROVIDER, "response", "a response with more than one candidate", "several candidates per request are not supported: a replay returns one"),
    Refusal("gemini.finish_reason", PROVIDER, "response", "a finishReason other than STOP or MAX_TOKENS (SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, MALFORMED_FUNCTION_CALL, OTHER, ...), or none", "a replay gives STOP or MAX_TOKENS, so it would replay as a normal stop"),
    Refusal("gemini.response_metadata", PROVIDER, "response", "citationMetadata, groundingMetadata, urlContextMetadata or logprobsResult in a response", "not recorded"),
    Refusal("gemini.non_text_response", PROVIDER, "response", "a non-text part in a response (inlineData, fileData, executableCode, codeExecutionResult, ...)", "not recorded: a replay could not give it back"),
    Refusal("gemini.text_after_call", PROVIDER, "response", "text after a function call in a response", "a replay returns the text before the function calls"),
)
# fmt: on
_ROWS = {r.id: r for r in REFUSALS}

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


def refuse(row_id: str, field: str, value: Any = None) -> NoReturn:
    """The BlackboxUnsupportedError of this codec's row ``row_id`` for ``field`` (a JSON path), naming its value."""
    r = _ROWS[row_id]
    reason = r.reason if value is None else f"{json.dumps(value, ensure_ascii=False)}: {r.reason}"
    raise BlackboxUnsupportedError(field, reason, provider=PROVIDER)


def malformed(field: str, what: str) -> NoReturn:
    raise BlackboxUnsupportedError(field, f"{what}; not a Gemini generateContent body Blackbox can read", provider=PROVIDER)


def call_positions(ids: CallIds, first_text: str) -> dict[str, str]:
    """One conversation's ``"message index:call index:name"`` -> call-N map, for function calls without an id.

    A conversation is told apart by the text of its first message, so that two
    conversations of one run (an agent and its sub-agent) whose calls sit at the
    same places do not share ids.
    """
    state = ids.codec_state(NAME).setdefault("positions", {})
    digest = hashlib.sha256(first_text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    found: dict[str, str] = state.setdefault(digest, {})
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
        malformed(where, "a part is not an object")
    for key in _DATA_KEYS:
        if part.get(key) is not None:
            if key == "text" and not isinstance(part["text"], str):
                malformed(f"{where}.text", "text is not a string")
            return key
    return None


def neutral_output(text: str, calls: list[dict[str, Any]], length: bool) -> dict[str, Any]:
    output: dict[str, Any] = {"type": "tool_calls", "calls": calls} if calls else {"type": "final_answer", "text": text}
    if calls and text:
        output["text"] = text
    if length:
        output["stop"] = STOP_LENGTH
    return output


def load_object(body: bytes, what: str) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: nested past the parser's depth
        raise BlackboxUnsupportedError("body", f"the {what} body is not JSON ({exc})", provider=PROVIDER) from exc
    if not isinstance(data, dict):
        raise BlackboxUnsupportedError("body", f"the {what} body is not a JSON object", provider=PROVIDER)
    return data


# --- field names -----------------------------------------------------------------------
# The API reads proto JSON, which accepts a field's snake_case name as well as its
# camelCase one, and google-genai sends some of each (``parameters_json_schema``,
# ``thinking_budget``). The structure is renamed to camelCase before it is read;
# values that are the user's data (args, response, schemas) are never touched.

_SNAKE = re.compile(r"_([a-z0-9])")
Shape = dict[str, tuple[bool, "Shape"]]  # field -> (is a list, the shape of its objects)
_CALL: Shape = {}
_PART: Shape = {"functionCall": (False, _CALL), "functionResponse": (False, _CALL)}
_CONTENT: Shape = {"parts": (True, _PART)}
_REQUEST: Shape = {
    "contents": (True, _CONTENT),
    "systemInstruction": (False, _CONTENT),
    "tools": (True, {"functionDeclarations": (True, {})}),
    "toolConfig": (False, {"functionCallingConfig": (False, {})}),
    "generationConfig": (False, {"thinkingConfig": (False, {})}),
    "safetySettings": (True, {}),
}


def _camel(value: Any, shape: Shape) -> Any:
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = _SNAKE.sub(lambda m: m.group(1).upper(), key) if isinstance(key, str) else key
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
