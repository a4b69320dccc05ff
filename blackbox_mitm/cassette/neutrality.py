"""The spec's provider-neutrality rules over one payload: no provider ids or response fields, no credentials.

``verify`` (``cassette/verify.py``) asks two things of this module for each step:
``scan`` — a few fast scans of the payload's canonical JSON that decide whether
anything in it could break a rule — and, only then, a ``Walker`` that walks the
payload knowing at each node whether it is structure or the user's data (the
rules themselves are written out in ``verify``'s module docstring). The provider
facts come in as a ``ProviderFacts`` value; no provider is named here.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import re2

from blackbox_mitm.cassette.credentials import CREDENTIAL_NAME, QUERY_KEY, SECRET, realistic, redact_secret, scheme_credential
from blackbox_mitm.cassette.facts import ProviderFacts
from blackbox_mitm.cassette.payloads import OUTPUT_TYPES, json_kind
from blackbox_mitm.cassette.problems import Problem, key_path, quote
from blackbox_mitm.cassette.records import JSONObject

__all__ = ["FIELDS", "STRUCT", "Walker", "scan"]

_OUTPUT_TYPES = OUTPUT_TYPES  # the ModelOutput shapes (cassette.payloads)
_CALL_ID = re.compile(r"call-(?:0|[1-9][0-9]*)")


# The pre-scan of a payload's canonical JSON. Each test is necessary for something
# the walk below can flag, so a payload that passes them all is clean and is not
# walked. Python's regular expressions that start with a character class, or with
# a long alternation, crawl (tens of MB/s); these are substring searches, Python
# patterns led by a literal, or RE2 (one linear pass for a whole alternation).
# (the structural pre-scan depends on the providers: ``ProviderFacts.suspect_structure``)
# Every credential name holds one of these once lowercased.
_CREDENTIAL_WORDS = (b"api_key", b"api-key", b"apikey", b"auth_token", b"auth-token", b"authtoken", b"authorization")
_ECHO_LEAD = b"<tool-use-id>"
# Fields that hold a credential whatever its shape (Anthropic's MCP connector server token): any value is flagged.
_TOKEN_FIELDS = frozenset({"authorization_token"})
_TOKEN_LEADS = tuple(f'"{name}"'.encode() for name in _TOKEN_FIELDS)  # each holds "authorization": _CREDENTIAL_GATE finds it
_SECRET_SHAPES = (
    rb"sk-[A-Za-z0-9_-]{32}",
    rb"AIza[0-9A-Za-z_-]{35}",
    rb"gsk_[A-Za-z0-9]{40}",
    rb"AKIA[A-Z0-9]{16}|ASIA[A-Z0-9]{16}",
    rb"ya29\.[A-Za-z0-9_-]{20}",
    rb"earer +[A-Za-z0-9._~+/-]{24}",
)
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False
# All the shapes in one RE2 pass: a match of any shape is a match of the alternation, and no other.
_SECRET_GATE = re2.compile(b"|".join(b"(?:%s)" % shape for shape in _SECRET_SHAPES), _RE2_OPTIONS)
_CASELESS = re2.Options()
_CASELESS.log_errors = False
_CASELESS.case_sensitive = False
# Holds whenever the lowercased payload holds a credential word or what ``QUERY_KEY`` needs (``key=`` after
# ``?`` or ``&``): RE2's case folding is Unicode's, a superset of ``bytes.lower``'s ASCII one, so nothing the
# exact tests find is missed.
_CREDENTIAL_GATE = re2.compile(rb"api[_-]?key|auth[_-]?token|authorization|[?&]key=", _CASELESS)


@functools.lru_cache(maxsize=8)
def _structure_gates(patterns: tuple[re.Pattern[bytes], ...]) -> tuple[Any, ...]:
    """The providers' structural pre-scan, the patterns RE2 can run joined into one pass (the rest as they are)."""
    joined: list[bytes] = []
    rest: list[Any] = []
    for rx in patterns:
        try:
            re2.compile(rx.pattern, _RE2_OPTIONS)
        except re2.error:  # a lookaround: Python's, led by a literal
            rest.append(rx)
        else:
            joined.append(b"(?:%s)" % rx.pattern)
    return (re2.compile(b"|".join(joined), _RE2_OPTIONS), *rest) if joined else tuple(rest)


@functools.lru_cache(maxsize=8)
def _echo_tag(prefixes: tuple[str, ...]) -> re.Pattern[str]:
    """A provider id in the tag an agent echoes a tool call's id in (Claude Code's ``<tool-use-id>``)."""
    ids = "|".join(re.escape(p) for p in prefixes)
    return re.compile(rf"<tool-use-id>\s*((?:{ids})[A-Za-z0-9_-]+)\s*</tool-use-id>")


def scan(payload_json: bytes, facts: ProviderFacts) -> tuple[bool, bool]:
    """(walk the structure?, walk the user's data too?) for a payload's canonical JSON."""
    if _SECRET_GATE.search(payload_json) is not None:
        return True, True
    if _ECHO_LEAD in payload_json and _echo_tag(facts.id_prefixes).search(payload_json.decode("utf-8", "replace")):
        return True, True
    words = False
    if _CREDENTIAL_GATE.search(payload_json) is not None:  # most payloads stop here: no lowered copy, no seven searches
        lowered = payload_json.lower()
        if any(lead in lowered for lead in _TOKEN_LEADS):
            return True, True
        words = any(word in lowered for word in _CREDENTIAL_WORDS)
        if (words or QUERY_KEY.search(lowered)) and scheme_credential(payload_json, lowered) is not None:
            return True, True
    return words or any(rx.search(payload_json) for rx in _structure_gates(facts.suspect_structure)), False


# The payload's own structure, per step type: fields holding the user's data (DATA),
# or a nested structure of a known kind. Any other field is structure.
_DATA = "data"
_STRUCT = "struct"
_FIELDS: dict[str, dict[str, str]] = {
    "model_input": {"messages": "messages", "tools": "tools", "systemPrompt": _DATA, "systemMedia": "content", "params": "params"},
    "message": {"content": "content"},
    # A media part's reference (url, file) and file name are the user's data (payloads.MediaPart).
    "part": {
        "text": _DATA,
        "toolName": _DATA,
        "toolInput": _DATA,
        "result": _DATA,
        "error": _DATA,
        "url": _DATA,
        "file": _DATA,
        "name": _DATA,
        "data": _DATA,  # a compaction part's opaque compacted history (payloads.CompactionPart)
        # Server-side tools (server_parts): what the provider returned, and the citations on the text it wrote.
        "citations": _DATA,
        "annotations": _DATA,
        "serverName": _DATA,
        # An Anthropic search_result part (the agent's RAG result): where it came from, its title, its text blocks.
        "source": _DATA,
        "title": _DATA,
        "content": "content",  # the MCP server an Anthropic MCP connector call went to (server_parts)
        "safetyChecks": _DATA,  # a Responses computer call's acknowledged safety checks (openai_responses.computer)
        "tokenLogprobs": _DATA,  # the Responses API's token logprobs on an answer's output text (openai_responses.hosted_tools)
    },
    "tool": {"name": _DATA, "description": _DATA, "inputSchema": _DATA, "builtin": _DATA},
    "model_output": {
        "text": _DATA,
        "toolName": _DATA,
        "toolInput": _DATA,
        "calls": "calls",
        "reasoning": "reasoning",
        "parts": "parts",
        "grounding": _DATA,
        "content": "content",
        "compaction": "part",
        "tokenLogprobs": _DATA,  # chat completions' token logprobs of the answer (openai_chat.response)
    },
    # Blackbox's extension (payloads.ReasoningPart): what the model thought, and its provider's opaque signature.
    "reasoning_part": {"text": _DATA, "summary": _DATA, "signature": _DATA, "data": _DATA},
    "call": {"toolName": _DATA, "toolInput": _DATA},
    "tool_call": {"toolName": _DATA, "toolInput": _DATA},
    "tool_result": {"toolName": _DATA, "result": _DATA, "error": _DATA},
    # A terminal event's final answer and error message are text the agent wrote.
    "metadata": {"result": _DATA, "message": _DATA, "toolName": _DATA},
}
_LIST_OF = {"messages": "message", "tools": "tool", "calls": "call", "reasoning": "reasoning_part"}
_TOKEN_NAMES = ("input", "output", "cachedInput", "reasoning")  # model_output.tokens (payloads.Tokens)


class Walker:
    """Walks one payload, knowing at each node whether it is structure or the user's data."""

    __slots__ = ("facts", "out", "step")

    def __init__(self, step: int | None, out: list[Problem], facts: ProviderFacts) -> None:
        self.step = step
        self.out = out
        self.facts = facts

    def add(self, code: str, where: str, reason: str) -> None:
        self.out.append(Problem(self.step, code, f"{where}: {reason}", where))

    # -- the spec's shapes (always checked; cheap: top-level fields only) --------------

    def shape(self, step_type: str, payload: Any) -> None:
        if not isinstance(payload, dict):
            self.add("shape", "payload", f"a {step_type} payload must be an object, found {json_kind(payload)}")
            return
        if step_type == "model_input":
            self._need(payload, "messages", list)
            self._may(payload, "tools", list)
            self._may(payload, "systemPrompt", str)
            self._may(payload, "systemMedia", list)
            self._may(payload, "model", str)
            params = payload.get("params")
            if self._may(payload, "params", dict) and isinstance(params, dict):
                for key in params:
                    self.param_key(key, f"payload.params{key_path(key)}")
        elif step_type == "model_output":
            self._tokens(payload)
            kind = payload.get("type")
            if kind not in _OUTPUT_TYPES:
                self.add("shape", "payload.type", f"a model_output's type must be one of {', '.join(_OUTPUT_TYPES)}, found {quote(kind)}")
            elif kind == "final_answer":
                self._need(payload, "text", str)
            elif kind == "tool_call":
                self._call(payload, "payload")
            else:
                self._may(payload, "text", str)
                calls = payload.get("calls")
                if self._need(payload, "calls", list) and isinstance(calls, list):
                    for n, call in enumerate(calls):
                        if isinstance(call, dict):
                            self._call(call, f"payload.calls[{n}]")
                        else:
                            self.add("shape", f"payload.calls[{n}]", f"a tool call must be an object, found {json_kind(call)}")
        elif step_type == "tool_call":
            self._call(payload, "payload")
        elif step_type == "tool_result":
            self._need(payload, "toolCallId", str)
            self._need(payload, "toolName", str)
            if ("result" in payload) == ("error" in payload):
                self.add("shape", "payload", "a tool_result holds exactly one of `result` and `error`")
            self._may(payload, "error", str)

    def _tokens(self, payload: JSONObject) -> None:
        """Blackbox's ``tokens`` extension: an object of counts (non-negative integers) in the neutral names."""
        counts = payload.get("tokens")
        if not self._may(payload, "tokens", dict) or not isinstance(counts, dict):
            return
        for key, value in counts.items():
            if key not in _TOKEN_NAMES:
                self.add("shape", f"payload.tokens{key_path(key)}", f"a token count is one of {', '.join(_TOKEN_NAMES)}, not {quote(key)}")
            elif not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
                self.add("shape", f"payload.tokens{key_path(key)}", f"a token count is a non-negative integer, found {json_kind(value)}")

    def param_key(self, key: str, where: str) -> None:
        """A request control's name: any name but a provider response field or a credential's."""
        if key in self.facts.control_names:
            return
        if key in self.facts.response_key_set:
            self.add("param", where, f"{quote(key)} is a provider response field, not a request control; it never enters a cassette")
        elif CREDENTIAL_NAME.fullmatch(key):
            self.add("credential_name", where, f"the key {quote(key)} names a credential; API keys never enter a cassette")
        else:
            self._secret(key, where)

    def _call(self, call: JSONObject, where: str) -> None:
        self._need(call, "toolCallId", str, where)
        self._need(call, "toolName", str, where)
        if "toolInput" not in call:
            self.add("shape", f"{where}.toolInput", "the tool call has no `toolInput`")

    def _need(self, obj: JSONObject, key: str, typ: type, where: str = "payload") -> bool:
        if key not in obj:
            self.add("shape", f"{where}.{key}", f"the required field `{key}` is missing")
            return False
        return self._may(obj, key, typ, where)

    def _may(self, obj: JSONObject, key: str, typ: type, where: str = "payload") -> bool:
        if key in obj and not isinstance(obj[key], typ):
            want = {"list": "an array", "dict": "an object", "str": "a string"}[typ.__name__]
            self.add("shape", f"{where}.{key}", f"`{key}` must be {want}, found {json_kind(obj[key])}")
            return False
        return True

    # -- neutrality (only for payloads that ``_scan`` could not clear) -------------------

    def walk(self, value: Any, where: str, kind: str, *, data: bool = True) -> None:
        """Check ``value``'s structure; its user data too when ``data`` (a secret's shape was seen)."""
        stack: list[tuple[Any, str, str]] = [(value, where, kind)]
        while stack:
            node, path, kind = stack.pop()
            if kind == _DATA:
                if data:
                    self._data(node, path)
                continue
            if kind == "content":
                if isinstance(node, str):
                    if data:
                        self._data(node, path)
                    continue
                kind = "parts"
            if kind == "parts" or kind in _LIST_OF:
                if isinstance(node, list):
                    item_kind = "part" if kind == "parts" else _LIST_OF[kind]
                    stack.extend((item, f"{path}[{n}]", item_kind) for n, item in reversed(list(enumerate(node))))
                    continue
                kind = _STRUCT
            if kind == "params":
                # Keys were checked against the neutral params; values are the user's settings.
                if isinstance(node, dict):
                    stack.extend((v, f"{path}{key_path(k)}", _DATA) for k, v in reversed(node.items()))
                    continue
                kind = _STRUCT
            fields = _FIELDS.get(kind)
            if isinstance(node, dict):
                children = []
                for key, child in node.items():
                    child_path = f"{path}{key_path(key)}"
                    self.structural_key(key, child_path)
                    if key == "toolCallId":
                        self.call_id(child, child_path)
                        continue
                    children.append((child, child_path, fields.get(key, _STRUCT) if fields else _STRUCT))
                stack.extend(reversed(children))
            elif isinstance(node, list):
                stack.extend((item, f"{path}[{n}]", _STRUCT) for n, item in reversed(list(enumerate(node))))
            elif isinstance(node, str):
                self.structural_string(node, path)

    def structural_key(self, key: str, where: str) -> None:
        if self.facts.provider_id.match(key):
            self.add("provider_id", where, f"the key {quote(key)} is a provider-native id; provider ids never enter a cassette")
        elif key in self.facts.response_key_set:
            self.add(
                "provider_field",
                where,
                f"{quote(key)} is a provider response field; usage, stop reasons and envelopes never enter a cassette",
            )
        elif CREDENTIAL_NAME.fullmatch(key):
            self.add("credential_name", where, f"the key {quote(key)} names a credential; API keys never enter a cassette")
        else:
            self._secret(key, where)

    def structural_string(self, value: str, where: str) -> None:
        if self.facts.provider_id.match(value):
            self.add(
                "provider_id", where, f"{quote(value)} is a provider-native id; provider ids never enter a cassette (they become call-N)"
            )
        elif CREDENTIAL_NAME.fullmatch(value):
            self.add(
                "credential_name", where, f"{quote(value)} names a credential; API keys and their variable names never enter a cassette"
            )
        else:
            self._secret(value, where)

    def call_id(self, value: Any, where: str) -> None:
        if isinstance(value, str) and self.facts.provider_id.match(value):
            self.structural_string(value, where)
        elif not (isinstance(value, str) and _CALL_ID.fullmatch(value)):
            self.add(
                "tool_call_id", where, f"tool-call id {quote(value)} is not Blackbox's own call-N; provider ids never enter a cassette"
            )

    def _data(self, value: Any, where: str) -> None:
        stack: list[tuple[Any, str]] = [(value, where)]
        while stack:
            node, path = stack.pop()
            if isinstance(node, str):
                self._secret(node, path)
            elif isinstance(node, dict):
                for key, child in node.items():
                    child_path = f"{path}{key_path(key)}"
                    self._secret(key, child_path)
                    if key.lower() in _TOKEN_FIELDS and isinstance(child, str) and child:
                        self.add("credential", child_path, f"{quote(key)} holds a credential; it never enters a cassette: re-record")
                        continue
                    stack.append((child, child_path))
            elif isinstance(node, list):
                stack.extend((item, f"{path}[{n}]") for n, item in enumerate(node))

    def _secret(self, text: str, where: str) -> None:
        if "<tool-use-id>" in text:
            echoed = _echo_tag(self.facts.id_prefixes).search(text)
            if echoed is not None:
                self.add(
                    "provider_id",
                    where,
                    f"{quote(echoed.group(1))} in <tool-use-id> is a provider-native tool-call id the agent echoed; "
                    "provider ids never enter a cassette (the recorder writes call-N there): re-record",
                )
        for m in SECRET.finditer(text):
            if realistic(m.group()):
                self.add(
                    "credential",
                    where,
                    f"holds what looks like a real credential ({redact_secret(m.group())}); remove it and re-record, or rotate the key",
                )
                return
        found = scheme_credential(text.encode("utf-8", "surrogatepass"))
        if found is not None:
            self.add("credential", where, f"holds what looks like a real credential ({found}); remove it and re-record, or rotate the key")


FIELDS = _FIELDS
STRUCT = _STRUCT
