"""Provider codecs: a provider's HTTP request/response <-> the cassette's neutral payloads.

One package per provider API, each satisfying ``base.Codec`` and laid out the
same way (``docs/adding-a-provider.md``); ``common`` holds what they share.
``REGISTERED`` is the registry: adding a provider is one package and one line there. Every other
part of the package asks the registry for provider facts (hosts, credential
headers, key variables, id prefixes, request controls). Plain Python: no
mitmproxy import.
"""

from __future__ import annotations

from blackbox_mitm.cassette.facts import ProviderFacts
from blackbox_mitm.cassette.facts import register as register_facts
from blackbox_mitm.codecs import anthropic_messages, gemini, openai_chat, openai_responses
from blackbox_mitm.codecs.base import CallIds, ChainingCodec, Codec, DecodedRequest, ErrorResponse, SseEvent
from blackbox_mitm.codecs.common.refusals import Refusal
from blackbox_mitm.codecs.websocket_base import WebSocketCapable

__all__ = [
    "CHAINING",
    "CODECS",
    "REGISTERED",
    "WEBSOCKETS",
    "CallIds",
    "Codec",
    "DecodedRequest",
    "ErrorResponse",
    "SseEvent",
    "all_refusals",
    "codec_for",
    "codec_for_path",
    "codec_named",
    "credential_headers",
    "credential_query",
    "default_hosts",
    "error_codec_for",
    "id_prefixes",
    "key_env_vars",
    "neutral_params",
    "placeholder_env_vars",
    "provider_facts",
    "response_keys",
]

# The registry, in matching order: the first codec that matches a request answers it.
REGISTERED: tuple[Codec, ...] = (
    openai_chat,
    openai_responses,
    anthropic_messages,
    gemini,
)

CODECS: dict[str, Codec] = {c.NAME: c for c in REGISTERED}

# The capabilities each codec has, stated so that mypy checks the module against the sub-protocol
# (tests/codecs/test_contract.py checks that isinstance finds exactly these at run time).
CHAINING: tuple[ChainingCodec, ...] = (openai_responses,)
WEBSOCKETS: tuple[WebSocketCapable, ...] = (openai_responses,)


def _split(path: str) -> tuple[str, str]:
    bare, _, query = path.partition("?")
    return bare.split("#", 1)[0], query.split("#", 1)[0]


def codec_for(method: str, path: str) -> Codec | None:
    """The codec answering a model call (``path`` may carry its query string)."""
    bare, query = _split(path)
    for codec in REGISTERED:
        if codec.matches(method, bare, query):
            return codec
    return None


def codec_for_path(path: str) -> Codec | None:
    """The codec for a ``POST`` to ``path`` (query ignored: Claude Code posts ``/v1/messages?beta=true``)."""
    return codec_for("POST", path)


def error_codec_for(path: str, host: str | None = None) -> Codec:
    """Whose error shape to answer a non-model request with: by path, then by host, else the first codec."""
    bare, _ = _split(path)
    for codec in REGISTERED:
        if codec.speaks_for(bare):
            return codec
    for codec in REGISTERED:
        if host is not None and host in codec.DEFAULT_HOSTS:
            return codec
    return REGISTERED[0]


def codec_named(name: str) -> Codec:
    return CODECS[name]


def _union(values: list[tuple[str, ...]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for group in values for v in group))


def default_hosts() -> tuple[str, ...]:
    return _union([c.DEFAULT_HOSTS for c in REGISTERED])


def credential_headers() -> tuple[str, ...]:
    return _union([c.CREDENTIAL_HEADERS for c in REGISTERED])


def credential_query() -> tuple[str, ...]:
    return _union([c.CREDENTIAL_QUERY for c in REGISTERED])


def key_env_vars() -> tuple[str, ...]:
    return _union([c.KEY_ENV_VARS for c in REGISTERED])


def placeholder_env_vars() -> tuple[str, ...]:
    """Each codec's first key variable: the one its SDK needs set to start (a replay sets a placeholder there)."""
    return _union([c.KEY_ENV_VARS[:1] for c in REGISTERED])


def id_prefixes() -> tuple[str, ...]:
    return _union([c.ID_PREFIXES for c in REGISTERED])


def response_keys() -> tuple[str, ...]:
    return _union([c.RESPONSE_KEYS for c in REGISTERED])


def neutral_params() -> frozenset[str]:
    """Every neutral request-control name a registered codec writes (and ``stream``)."""
    return frozenset({"stream", *(neutral for c in REGISTERED for _, neutral in c.PARAMS)})


def provider_facts() -> ProviderFacts:
    """What ``cassette.verify`` checks cassettes against: every registered codec's ids, response fields and controls."""
    return ProviderFacts(
        id_prefixes=id_prefixes(),
        response_keys=response_keys(),
        neutral_params=neutral_params(),
        wire_params=frozenset(wire for c in REGISTERED for wire, _ in c.PARAMS),
    )


def all_refusals() -> tuple[Refusal, ...]:
    """Every registered codec's refusal rows, in registry order (the limitations table)."""
    return tuple(r for c in REGISTERED for r in c.REFUSALS)


register_facts(provider_facts())  # verify's default (it sits below the codecs and never imports them)
