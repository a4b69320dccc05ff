"""Responses requests -> the neutral ``model_input`` (the whole conversation); the bodies a fork sends upstream.

The request's input items (after the chain ``previous_response_id`` names) become
the neutral transcript at the bottom of this module (``transcript``), by the rules
written out in ``fields.py``'s docstring.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from blackbox_mitm.cassette.payloads import (
    Message,
    MessagePart,
    ModelInput,
    RefusalPart,
    TextPart,
    ToolDefinition,
    joined_parts,
)
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.codecs.common.jsonio import dumps, loads
from blackbox_mitm.codecs.openai_responses import (
    ECHO_KEYS,
    NAME,
    PARAMS,
    PROVIDER,
    REFUSALS,
    SYSTEM_JOINER,
    compaction,
    computer,
    hosted_tools,
    mcp,
)
from blackbox_mitm.codecs.openai_responses.fields import LOCAL_ITEMS, ResponsesRequest, chain_items, decode_tools, given
from blackbox_mitm.codecs.openai_responses.media import media_of

__all__ = ["decode_request", "forward_body", "rewrite_tool_result"]


def _own_items(raw: Any) -> tuple[list[Any], list[tuple[str, Any]]]:
    """The request's own input items, as sent and with their paths (a string is one user message)."""
    if raw is None:
        return [], []
    if isinstance(raw, str):
        item = {"type": "message", "role": "user", "content": raw}
        return [item], [("input", item)]
    if not isinstance(raw, list):
        REFUSALS.malformed("input", "input is neither a string nor a list of items")
    return list(raw), [(f"input[{i}]", item) for i, item in enumerate(raw)]


def _params(req: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for wire, neutral in PARAMS:
        head, _, tail = wire.partition(".")
        value = req.get(head)
        if tail:
            value = value.get(tail) if isinstance(value, dict) else None
        if neutral == "stream":
            value = True if value is True else None
        if value is not None:
            params[neutral] = value
    return params


def decode_request(body: bytes, ids: CallIds, *, path: str = "", query: str = "") -> DecodedRequest:
    """A Responses request body -> its neutral ``model_input`` (the whole conversation; refused fields raise)."""
    req = loads(body, "request", PROVIDER)
    if not isinstance(req, dict):
        REFUSALS.malformed("body", "the request body is not a JSON object")
    if req.get("background") is True:
        REFUSALS.refuse("openai.responses.background", "background", True)
    for key in ("conversation", "prompt"):
        if given(req, key):
            REFUSALS.refuse(f"openai.responses.{key}", key)
    history: list[tuple[str, Any]] = []
    previous = req.get("previous_response_id")
    if previous is not None:
        if not isinstance(previous, str) or not previous:
            REFUSALS.malformed("previous_response_id", "previous_response_id is not a string")
        chain = chain_items(ids, previous)
        if chain is None:
            REFUSALS.refuse("openai.responses.previous_response_id", "previous_response_id", previous)
        history = chain
    own, own_paths = _own_items(req.get("input"))
    system, messages, more_tools = transcript([*history, *own_paths], ids)
    instructions = req.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        REFUSALS.malformed("instructions", "instructions is not a string")
    if instructions is not None:
        system = [instructions, *system]
    model_input: ModelInput = {"messages": messages, "tools": decode_tools(req.get("tools"), "tools") + more_tools}
    if system:
        model_input["systemPrompt"] = SYSTEM_JOINER.join(system)
    model = req.get("model") if isinstance(req.get("model"), str) else None
    if model is not None:
        model_input["model"] = model
    params = _params(req)
    if params:
        model_input["params"] = params
    echo = {k: req[k] for k in ECHO_KEYS if given(req, k)}
    return ResponsesRequest(NAME, model_input, model=model, stream=req.get("stream") is True, previous=previous, items=own, echo=echo)


def _inlined(req: dict[str, Any], ids: CallIds) -> bool:
    """Replace a ``previous_response_id`` we served by the items it stands for (ids stripped)."""
    previous = req.get("previous_response_id")
    store = ids.codec_state(NAME)
    if not isinstance(previous, str) or not store.get(previous, {}).get("served"):
        return False
    chain = chain_items(ids, previous) or []
    own = req.get("input")
    # A served reasoning item goes upstream only with its encrypted_content (without it, it names state on OpenAI's side).
    items = [
        {k: v for k, v in item.items() if k != "id"}
        for _, item in chain
        if isinstance(item, dict) and (item.get("type") != "reasoning" or item.get("encrypted_content"))
    ]
    req["input"] = items + ([{"type": "message", "role": "user", "content": own}] if isinstance(own, str) else list(own or []))
    del req["previous_response_id"]
    return True


def forward_body(body: bytes, ids: CallIds) -> bytes | None:
    """The body to send upstream when it continues a response we served (a fork going live): chain inlined."""
    try:
        req = loads(body, "request", PROVIDER)
    except ValueError:
        return None
    if not isinstance(req, dict) or not _inlined(req, ids):
        return None
    return dumps(req).encode()


def rewrite_tool_result(body: bytes, ids: CallIds, call_id: str, text: str) -> bytes | None:
    """A fork's edited tool result: every output item answering ``call_id`` gets ``text``.

    A continuation of a response we served is inlined first (``forward_body``), so
    what goes upstream after the cut needs no state the provider never had.
    """
    try:
        req = loads(body, "request", PROVIDER)
    except ValueError:
        return None
    if not isinstance(req, dict):
        return None
    changed = _inlined(req, ids)
    items = req.get("input")
    for item in items if isinstance(items, list) else []:
        answers = isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output")
        if answers and ids.lookup(str(item.get("call_id"))) == call_id:
            item["output"] = text
            changed = True
    return dumps(req).encode() if changed else None


_CALLS = ("function_call", "custom_tool_call", computer.CALL, mcp.APPROVAL)
_OUTPUTS = ("function_call_output", "custom_tool_call_output", computer.OUTPUT, mcp.ANSWER)


# --- items -> transcript ------------------------------------------------------------------


def _text_of(content: Any, path: str, role: str) -> str:
    """A message's text: a string, or its text parts joined (an assistant's refusal and input media parts are refused here)."""
    return "".join(p["text"] for p in _said(content, path, role, refusals=False))


def _said(content: Any, path: str, role: str, *, refusals: bool = True) -> list[TextPart | RefusalPart]:
    """A message's text and (an assistant's) refusal parts in order; input media in an assistant message is refused."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        REFUSALS.malformed(path, "content is neither a string nor a list of parts")
    out: list[TextPart | RefusalPart] = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
            out.append({"type": "text", "text": part["text"]})
        elif kind == "refusal" and role == "assistant" and refusals and isinstance(part.get("refusal"), str):
            out.append({"type": "refusal", "text": part["refusal"]})
        elif kind in ("input_image", "input_file", "input_audio"):
            REFUSALS.refuse("openai.responses.non_text", f"{path}[{j}].type", kind)
        else:
            REFUSALS.malformed(f"{path}[{j}]", f"a content part of type {kind!r}")
    return out


_MEDIA_INPUTS = ("input_image", "input_file", "input_audio")


def _content_of(content: Any, path: str, role: str) -> Any:
    """A user message's or tool output's content: text alone as one string; with media, the parts (content-addressed)."""
    if not isinstance(content, list) or not any(isinstance(p, dict) and p.get("type") in _MEDIA_INPUTS for p in content):
        return _text_of(content, path, role)
    parts: list[Any] = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in _MEDIA_INPUTS:
            parts.append(media_of(part, f"{path}[{j}]"))
        else:
            parts.append({"type": "text", "text": _text_of([part], f"{path}[{j}]", role)})
    return joined_parts(parts)


def _output_text(output: Any, path: str) -> Any:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return _content_of(output, path, "tool")
    REFUSALS.malformed(path, "a tool output is neither a string nor a list of parts")


def _tool_input(item: dict[str, Any], kind: str, path: str) -> Any:
    if kind == "custom_tool_call":
        raw = item.get("input")
        if not isinstance(raw, str):
            REFUSALS.malformed(f"{path}.input", "a custom_tool_call without a string input")
        return raw
    raw = item.get("arguments")
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            pass
    REFUSALS.refuse("openai.responses.tool_arguments", f"{path}.arguments")


class _Transcript:
    """Builds the neutral messages from items, one at a time (see the module docstring)."""

    def __init__(self, ids: CallIds) -> None:
        self.ids = ids
        self.system: list[str] = []
        self.messages: list[Message] = []
        self.tools: list[ToolDefinition] = []
        self.names: dict[str, str] = {}
        self.leading = True
        self.turn: list[MessagePart] | None = None  # the open assistant turn's parts
        self.results: list[MessagePart] | None = None  # the open tool-result turn's parts

    def close(self) -> None:
        if self.turn is not None:
            parts: list[MessagePart] = []
            for part in self.turn:
                last = parts[-1] if parts else None
                if part["type"] == "text" and last is not None and last["type"] == "text":
                    parts[-1] = {"type": "text", "text": last["text"] + part["text"]}
                elif part["type"] != "text" or part["text"]:
                    parts.append(part)
            content: str | list[MessagePart] = parts
            first = parts[0] if parts else None
            if first is None:
                content = ""
            elif len(parts) == 1 and first["type"] == "text":
                content = first["text"]
            self.messages.append({"role": "assistant", "content": content})
        if self.results is not None:
            self.messages.append({"role": "user", "content": self.results})
        self.turn = self.results = None

    def message(self, item: dict[str, Any], path: str) -> None:
        role = item.get("role")
        if role not in ("user", "system", "developer", "assistant"):
            REFUSALS.malformed(f"{path}.role", f"unknown role {role!r}")
        if role == "assistant":  # output_text and refusal parts only (the API rejects input parts there)
            said = _said(item.get("content"), f"{path}.content", role)
            self.leading = False
            if self.turn is None:
                self.close()
                self.turn = []
            self.turn.extend(said)
            return
        # User, system and developer messages take the same input parts (text, images, files, audio).
        text: Any = _content_of(item.get("content"), f"{path}.content", role)
        if role in ("system", "developer") and self.leading and isinstance(text, str):
            self.system.append(text)
            return
        self.leading = False
        self.close()
        self.messages.append({"role": "user" if role == "user" else "system", "content": text})

    def call(self, item: dict[str, Any], kind: str, path: str) -> None:
        native, name = item.get("call_id"), computer.TOOL_NAME if kind == computer.CALL else item.get("name")
        if kind == mcp.APPROVAL:
            native, name, tool_input = mcp.approval_input(item, path)
        if not isinstance(native, str) or not native:
            REFUSALS.malformed(f"{path}.call_id", f"a {kind} without a call_id")
        if not isinstance(name, str) or not name:
            REFUSALS.malformed(f"{path}.name", f"a {kind} without a name")
        if isinstance(item.get("namespace"), str) and item["namespace"]:
            name = f"{item['namespace']}.{name}"
        if kind != mcp.APPROVAL:
            tool_input = computer.call_input(item, path) if kind == computer.CALL else _tool_input(item, kind, path)
        self.leading = False
        if self.turn is None:
            self.close()
            self.turn = []
        self.names[native] = name
        self.turn.append({"type": "tool_use", "toolCallId": self.ids.neutral(native, name), "toolName": name, "toolInput": tool_input})

    def hosted_call(self, item: dict[str, Any]) -> None:
        """A hosted tool's call item (web search...): a server_tool_call part of the assistant turn."""
        self.leading = False
        if self.turn is None:
            self.close()
            self.turn = []
        self.turn.append(hosted_tools.history_part(item, self.ids))

    def result(self, item: dict[str, Any], kind: str, path: str) -> None:
        native = mcp.answer_result(item, path)[0] if kind == mcp.ANSWER else item.get("call_id")
        if not isinstance(native, str) or not native:
            REFUSALS.malformed(f"{path}.call_id", f"a {kind} without a call_id")
        checks: list[dict[str, Any]] = []
        if kind == mcp.ANSWER:
            text: Any = mcp.answer_result(item, path)[1]
        elif kind == computer.OUTPUT:
            text, checks = computer.result_part(item, path, media_of)
        else:
            text = _output_text(item.get("output"), f"{path}.output")
        self.leading = False
        if self.results is None:
            self.close()
            self.results = []
        name = self.names.get(native)
        call_id = self.ids.neutral(native, name)
        name = name if name is not None else self.ids.name_of(call_id)
        part: dict[str, Any] = {"type": "tool_result", "toolCallId": call_id, "toolName": name or "", "result": text}
        if checks:
            part["safetyChecks"] = checks  # a computer call's acknowledged safety checks (the computer module)
        self.results.append(part)  # type: ignore[arg-type]

    def compaction(self, item: dict[str, Any], kind: str, path: str) -> None:
        """Codex's compaction (``compaction`` module): the trigger is a user turn, the compacted history the assistant's."""
        self.leading = False
        if kind == compaction.TRIGGER:
            self.close()
            self.messages.append({"role": "user", "content": [compaction.trigger_part()]})
            return
        if self.turn is None:
            self.close()
            self.turn = []
        self.turn.append(compaction.part_of_item(item, path))

    def item(self, item: Any, path: str) -> None:
        if not isinstance(item, dict):
            REFUSALS.malformed(path, "an input item is not an object")
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "message":
            self.message(item, path)
        elif kind in _CALLS:
            self.call(item, kind, path)
        elif kind in _OUTPUTS:
            self.result(item, kind, path)
        elif kind in ("reasoning", "configuration_update"):
            return  # a thinking block (not stored, not compared); Codex's restatement of the request's settings
        elif kind == "additional_tools":
            self.tools.extend(decode_tools(item.get("tools"), f"{path}.tools"))
        elif kind in hosted_tools.SERVED_ITEMS:
            self.hosted_call(item)
        elif kind in (compaction.TRIGGER, compaction.ITEM):
            self.compaction(item, kind, path)
        elif kind in LOCAL_ITEMS:
            REFUSALS.refuse("openai.responses.local_tool", f"{path}.type", kind)
        elif kind == "item_reference":
            REFUSALS.refuse("openai.responses.item_reference", f"{path}.type")
        else:
            REFUSALS.malformed(f"{path}.type", f"unknown input item type {kind!r}")


def transcript(items: Iterable[tuple[str, Any]], ids: CallIds) -> tuple[list[str], list[Message], list[ToolDefinition]]:
    """(leading system texts, neutral messages, tools from additional_tools items) of ``(path, item)`` pairs."""
    t = _Transcript(ids)
    for path, item in items:
        t.item(item, path)
    t.close()
    return t.system, t.messages, t.tools
