"""Request digests with a memo of their pieces: a request that repeats earlier history does not re-mask or re-encode it.

An agent re-sends its whole conversation on every call: the system prompt, the
tool definitions and every earlier message, then a turn or two that are new. The
digest strict replay looks requests up by (``normalize.request_digest``) is the
SHA-256 of the canonical JSON of the compared view, and the costly parts of
making it — the masks (RE2 over every text) and the canonical-JSON checks over
the whole body — were paid again for all of that history on every call.

Canonical JSON is compositional: an object is ``{`` + its sorted ``"key":value``
members joined with ``,`` + ``}``, a list is ``[`` + its items joined + ``]``,
and each member or item is itself canonical. So the canonical bytes of a view can
be assembled from the canonical bytes of its pieces — the system prompt, each
message, each tool definition — and each piece depends on that piece of the
request alone (and the rules; with ``rules.one_turn`` a piece is a message as
``matcher.turns`` folds it, several adjacent ones joined). ``PieceDigester`` keeps the canonical bytes of the
masked view of each piece it has seen, keyed by the piece's exact JSON
(``orjson.dumps`` of the decoded value, not sorted: a key that differs in any way
is a miss, never a wrong hit), and joins them. On a hit a piece costs one
``orjson.dumps`` and one dict look-up instead of its masks and its canonical
encoding; the SHA-256 is still taken over the whole canonical view, so the digest
is the same bytes as ``request_digest`` gives — ``tests/matcher/test_digests.py``
checks that over random histories.

A piece that ``orjson`` cannot dump (a lone surrogate, an integer past 64 bits)
is not memoized: its canonical bytes are made as ``request_digest`` makes them.
The memo holds at most ``MEMO_PIECES`` pieces and ``MEMO_BYTES`` bytes of keys
and values (the oldest dropped first), one entry per distinct message, tool or
system prompt; a piece larger than a sixteenth of the budget is not kept. It is
shared by the recorded calls (their digests at load) and the live requests: an
agent's history repeats within a few calls, so a small memo catches it. Safe across threads: a race
costs a duplicate computation, never a wrong value (dict operations are atomic).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from blackbox_mitm.cassette.canonical import canonical_bytes
from blackbox_mitm.cassette.payloads import order_tool_results
from blackbox_mitm.matcher.masks import NO_RULES, CompareRules
from blackbox_mitm.matcher.normalize import _as_list, _message, _neutral_params, _tool
from blackbox_mitm.matcher.turns import fold_turns

if TYPE_CHECKING:
    from _hashlib import HASH

__all__ = ["MEMO_PIECES", "PieceDigester"]

#: Pieces kept (messages, tools, system prompts). A 200-call agent run has a few hundred distinct ones.
MEMO_PIECES = 8192
#: Bytes kept, keys and values: a bound on the memo's memory whatever the run (a 10,000-call run of distinct
#: 4 KB tool results would otherwise keep 8,192 of them twice over).
MEMO_BYTES = 32 * 1024 * 1024


class PieceDigester:
    """``request_digest(model_input, rules)``, with the canonical bytes of every piece memoized (module docstring)."""

    def __init__(self, rules: CompareRules = NO_RULES, *, max_pieces: int = MEMO_PIECES, max_bytes: int = MEMO_BYTES) -> None:
        self.rules = rules
        self.max_pieces = max_pieces
        self.max_bytes = max_bytes
        self._memo: dict[tuple[str, bytes], bytes] = {}
        self._bytes = 0  # len(key) + len(value) over the memo
        self.hits = 0
        self.misses = 0
        masks = rules if rules else None
        self._mask_message: Callable[[Any], Any] = masks._message if masks is not None else _same
        self._mask_tool: Callable[[Any], Any] = masks._tool if masks is not None else _same
        self._mask_text: Callable[[str], str] = masks.mask_text if masks is not None else _same
        # The previous request's message pieces and the hash state after each prefix of them (``_messages_hash``).
        self._prefix: tuple[list[bytes], list[HASH]] = ([], [hashlib.sha256(b'{"messages":[')])
        # Per kind of piece, the previous request's pieces in order: (their exact JSON, their canonical bytes).
        self._last: dict[str, tuple[list[bytes | None], list[bytes]]] = {}

    def digest(self, model_input: Mapping[str, Any]) -> str:
        """The hex SHA-256 ``normalize.request_digest(model_input, self.rules)`` gives."""
        return self._hashed(order_tool_results(model_input))

    def digest_ordered(self, model_input: Mapping[str, Any]) -> str:
        """``digest`` of a model_input whose tool results are in call order already (the session put them so)."""
        return self._hashed(model_input)

    def canonical(self, model_input: Mapping[str, Any], *, ordered: bool = False) -> bytes:
        """The canonical JSON of the masked compared view of ``model_input``, assembled from its pieces."""
        if not ordered:
            model_input = order_tool_results(model_input)
        pieces = self._message_pieces(model_input)
        return b"".join([b'{"messages":[', b",".join(pieces), b"]", *(b"," + m for m in self._after_messages(model_input)), b"}"])

    def same(self, recorded: Mapping[str, Any], live: Mapping[str, Any]) -> bool:
        """Whether two model_inputs (tool results in call order) have the same digest, found with no hash taken.

        The canonical view is its pieces joined, each piece one JSON value, so two views are the same bytes exactly
        when their pieces are, place by place. A piece whose exact JSON is the same on both sides is the same
        (``orjson.dumps``: types included, so ``true`` is not ``1``); another is compared by its masked canonical
        bytes, from the memo. An agent replayed on another day differs from its recording in the masked parts
        only (a date in the system prompt): those pieces are masked, the rest of the request costs a serialization.
        The last messages are compared first: a request for another call differs there, and is told apart at once.
        """
        a = fold_turns(_as_list(recorded.get("messages")), self.rules.one_turn)
        b = fold_turns(_as_list(live.get("messages")), self.rules.one_turn)
        tools_a, tools_b = _as_list(recorded.get("tools")), _as_list(live.get("tools"))
        if len(a) != len(b) or len(tools_a) != len(tools_b):
            return False
        if not all(self._same_piece("m", x, y, self._message_bytes) for x, y in zip(reversed(a), reversed(b), strict=True)):
            return False
        if _head_bytes(recorded) != _head_bytes(live):
            return False
        system_a, system_b = recorded.get("systemPrompt"), live.get("systemPrompt")
        if (system_a is None) != (system_b is None):
            return False
        if system_a is not None and not self._same_piece("s", system_a, system_b, self._system_bytes):
            return False
        return all(self._same_piece("t", x, y, self._tool_bytes) for x, y in zip(tools_a, tools_b, strict=True))

    def _same_piece(self, kind: str, a: Any, b: Any, make: Callable[[Any], bytes]) -> bool:
        """Whether two pieces of one kind have the same masked canonical bytes (``same``)."""
        try:
            key_a, key_b = orjson.dumps(a), orjson.dumps(b)
        except (TypeError, orjson.JSONEncodeError):
            return make(a) == make(b)  # not memoizable (lone surrogate, huge integer): made the slow, exact way
        return key_a == key_b or self._keyed_piece((kind, key_a), a, make) == self._keyed_piece((kind, key_b), b, make)

    def _hashed(self, model_input: Mapping[str, Any]) -> str:
        """``sha256(self.canonical(model_input, ordered=True))``, the history's part hashed once (``_messages_hash``)."""
        h = self._messages_hash(self._message_pieces(model_input))
        for member in self._after_messages(model_input):
            h.update(b",")
            h.update(member)
        h.update(b"}")
        return h.hexdigest()

    def _message_pieces(self, model_input: Mapping[str, Any]) -> list[bytes]:
        """Each compared message's canonical bytes (adjacent messages of a one-turn role folded first: ``matcher.turns``)."""
        messages = fold_turns(_as_list(model_input.get("messages")), self.rules.one_turn)
        return self._pieces("m", messages, self._message_bytes)

    def _messages_hash(self, pieces: list[bytes]) -> HASH:
        """SHA-256 of ``{"messages":[`` + the pieces joined + ``]``, resumed after the previous request's longest same prefix.

        A memo hit returns the very bytes object the memo holds, so a piece that ``is`` the previous request's piece
        at the same place is the same canonical bytes: the hash state after that prefix (kept, never updated again)
        is copied and only the new messages are hashed. Anything else — a miss, a piece too big to keep — starts
        over from the first piece that differs. Safe across threads: the previous request's pieces and states are
        replaced as one tuple and only read.
        """
        last_pieces, states = self._prefix
        n, limit = 0, min(len(pieces), len(last_pieces))
        while n < limit and pieces[n] is last_pieces[n]:
            n += 1
        h = states[n].copy()
        kept = states[: n + 1]
        for i in range(n, len(pieces)):
            if i:
                h.update(b",")
            h.update(pieces[i])
            kept.append(h.copy())
        self._prefix = (pieces, kept)
        h.update(b"]")
        return h

    def _after_messages(self, model_input: Mapping[str, Any]) -> list[bytes]:
        """The canonical members after ``messages``, in sorted key order: model, params, systemMedia, systemPrompt, tools."""
        members: list[bytes] = []
        model = model_input.get("model")
        if model is not None:
            members.append(b'"model":' + canonical_bytes(model))
        params = model_input.get("params")
        if params is not None and params != {}:
            members.append(b'"params":' + canonical_bytes(_neutral_params(params)))
        media = model_input.get("systemMedia")
        if media:
            members.append(b'"systemMedia":' + canonical_bytes(media))
        system = model_input.get("systemPrompt")
        if system is not None:
            members.append(b'"systemPrompt":' + self._piece("s", system, self._system_bytes))
        tools = _as_list(model_input.get("tools"))
        members.append(b'"tools":[' + b",".join(self._pieces("t", tools, self._tool_bytes)) + b"]")
        return members

    # -- pieces ------------------------------------------------------------------------

    def _pieces(self, kind: str, values: list[Any], make: Callable[[Any], bytes]) -> list[bytes]:
        """Each value's canonical bytes; one whose exact JSON is the previous request's at the same place reuses its piece.

        An agent's next request repeats its history in the same places: comparing a piece's JSON with the one there
        before is a memcmp, where the memo look-up hashes the whole key first (SipHash over every byte, on a new
        bytes object every call). The memo still answers everything else. Safe across threads: the previous pieces
        are replaced as one tuple, and a piece depends on its JSON alone, whichever request left it there.
        """
        last_keys, last_pieces = self._last.get(kind, ((), ()))
        keys: list[bytes | None] = []
        pieces: list[bytes] = []
        for i, value in enumerate(values):
            try:
                key: bytes | None = orjson.dumps(value)
            except (TypeError, orjson.JSONEncodeError):
                key = None  # not memoizable (lone surrogate, huge integer): made the slow, exact way
            if key is not None and i < len(last_keys) and last_keys[i] == key:
                self.hits += 1
                piece = last_pieces[i]
            else:
                piece = make(value) if key is None else self._keyed_piece((kind, key), value, make)
            keys.append(key)
            pieces.append(piece)
        self._last[kind] = (keys, pieces)
        return pieces

    def _piece(self, kind: str, value: Any, make: Callable[[Any], bytes]) -> bytes:
        try:
            key = (kind, orjson.dumps(value))
        except (TypeError, orjson.JSONEncodeError):
            return make(value)  # not memoizable (lone surrogate, huge integer): made the slow, exact way
        return self._keyed_piece(key, value, make)

    def _keyed_piece(self, key: tuple[str, bytes], value: Any, make: Callable[[Any], bytes]) -> bytes:
        found = self._memo.get(key)
        if found is not None:
            self.hits += 1
            return found
        self.misses += 1
        out = make(value)
        size = len(key[1]) + len(out)
        if size * 16 > self.max_bytes:
            return out  # too big to be worth keeping
        while self._memo and (len(self._memo) >= self.max_pieces or self._bytes + size > self.max_bytes):
            try:
                old_key = next(iter(self._memo))  # the oldest piece
                old = self._memo.pop(old_key)
            except (KeyError, StopIteration, RuntimeError):  # another thread got there first
                break
            self._bytes -= len(old_key[1]) + len(old)
        if key not in self._memo:
            self._memo[key] = out
            self._bytes += size
        return out

    def _message_bytes(self, message: Any) -> bytes:
        return canonical_bytes(self._mask_message(_message(message)))

    def _tool_bytes(self, tool: Any) -> bytes:
        return canonical_bytes(self._mask_tool(_tool(tool)))

    def _system_bytes(self, system: Any) -> bytes:
        return canonical_bytes(self._mask_text(system) if isinstance(system, str) else system)


def _same(value: Any) -> Any:
    return value


def _head_bytes(model_input: Mapping[str, Any]) -> bytes:
    """The canonical bytes of the small members of the view (model, params, systemMedia), as present in it (``same``)."""
    params = model_input.get("params")
    return canonical_bytes(
        [
            model_input.get("model"),  # None: absent from the view
            _neutral_params(params) if params is not None and params != {} else None,
            model_input.get("systemMedia") or None,
        ]
    )
