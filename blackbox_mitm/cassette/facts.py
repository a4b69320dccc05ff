"""What verify must know about the providers, as a value: ``ProviderFacts``, built by the codec registry.

The cassette layer sits below the codecs, so it never imports them: the registry
(``blackbox_mitm.codecs.provider_facts``) builds this value from every registered
codec, and ``verify_trace`` takes it as ``facts=`` (required: there is no global
default). The layers above the codecs verify through ``codecs.verified``, which
passes the registry's value. Plain Python, no provider names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["ProviderFacts"]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def _trie(words: list[str]) -> str:
    """An alternation shaped as a trie: the engine rejects most positions on one character."""
    branches: dict[str, list[str]] = {}
    for word in words:
        branches.setdefault(word[:1], []).append(word[1:])
    optional = "" in branches
    parts = [re.escape(head) + _trie(tails) for head, tails in sorted(branches.items()) if head]
    if not parts:
        return ""
    body = parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"
    return f"(?:{body})?" if optional else body


@dataclass(frozen=True, slots=True)
class ProviderFacts:
    """The provider facts a cassette is checked against (every registered codec's, joined).

    * ``id_prefixes``: provider-native ids, never in a cassette (matched at the start of a structural string);
    * ``response_keys``: provider response fields, never in a neutral payload (matched as whole keys,
      as providers spell them and in camelCase; ``toolCallId`` is ours);
    * ``neutral_params``: the request controls a model_input's ``params`` may hold, by neutral name;
    * ``wire_params``: the codecs' wire names of those controls (a params key with one is never a
      response field: ``logprobs`` is both).
    """

    id_prefixes: tuple[str, ...]
    response_keys: tuple[str, ...]
    neutral_params: frozenset[str]
    wire_params: frozenset[str] = frozenset()
    control_names: frozenset[str] = field(init=False)
    response_key_set: frozenset[str] = field(init=False)
    provider_id: re.Pattern[str] = field(init=False)
    suspect_structure: tuple[re.Pattern[bytes], ...] = field(init=False)

    def __post_init__(self) -> None:
        keys = frozenset(n for name in self.response_keys for n in (name, _camel(name))) - {"toolCallId"}
        ids = "(?:" + "|".join(re.escape(p) for p in self.id_prefixes) + ")"
        object.__setattr__(self, "control_names", self.neutral_params | self.wire_params)
        object.__setattr__(self, "response_key_set", keys)
        object.__setattr__(self, "provider_id", re.compile(ids))
        # The pre-scan of a payload's canonical JSON (see verify's _scan): literal-led, so fast.
        suspect = (
            re.compile(f'"{ids}'.encode()),  # a string starting with a provider id
            re.compile(f'"{_trie(sorted(keys))}":'.encode()),  # a response field as a key
            re.compile(rb'"toolCallId":(?!"call-(?:0|[1-9][0-9]*)")'),  # a tool-call id not call-N
        )
        object.__setattr__(self, "suspect_structure", suspect)
