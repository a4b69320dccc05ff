"""Provider codecs: a provider's HTTP request/response <-> the cassette's neutral payloads.

One package per provider API, each satisfying ``base.Codec`` and laid out the
same way (``docs/adding-a-provider.md``); ``common`` holds what they share.
``REGISTERED`` is the registry: adding a provider is one package and one line there. Every other
part of the package asks the registry for provider facts (hosts, credential
headers, key variables, id prefixes, request controls); ``provider_facts()`` is
the value ``cassette.verify`` checks against, and ``codecs.verified`` verifies
with it. Importing this package registers nothing anywhere. Plain Python: no
mitmproxy import.

``codec_for`` is the one place a request's codec is chosen: by its path, unless
its host is one a project named with the codec it speaks (``[tool.blackbox.hosts]``,
``--host HOST=CODEC``; ``host_spec`` reads those), then that codec or none.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Mapping

from blackbox_mitm.cassette.facts import ProviderFacts
from blackbox_mitm.codecs import anthropic_messages, bedrock, bedrock_converse, gemini, openai_chat, openai_responses, vertex_anthropic
from blackbox_mitm.codecs.base import (
    STOP_PAUSE,
    CallIds,
    ChainingCodec,
    Codec,
    DecodedRequest,
    ErrorResponse,
    FramedStreamCodec,
    SseEvent,
    StreamParser,
    TurnFoldingCodec,
)
from blackbox_mitm.codecs.common.refusals import Refusal
from blackbox_mitm.codecs.sse import SseParser
from blackbox_mitm.codecs.websocket_base import WebSocketCapable
from blackbox_mitm.errors import BlackboxUnsupportedError, ConfigError

__all__ = [
    "CHAINING",
    "CODECS",
    "FRAMED",
    "REGISTERED",
    "TOKEN_HOSTS",
    "TURN_FOLDING",
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
    "codec_names",
    "credential_headers",
    "credential_query",
    "default_hosts",
    "error_codec_for",
    "host_matches",
    "host_regex",
    "host_spec",
    "id_prefixes",
    "key_env_vars",
    "neutral_params",
    "one_turn_roles",
    "parse_stream",
    "placeholder_env_vars",
    "provider_facts",
    "response_keys",
    "stream_content_type",
    "stream_parser",
    "unservable_stop",
]

# The registry, in matching order: the first codec that matches a request answers it.
# The cloud transports (Bedrock, Vertex) come before the APIs whose bodies they carry: their paths are theirs
# alone, and their other endpoints get their own error shape.
REGISTERED: tuple[Codec, ...] = (
    openai_chat,
    bedrock,
    bedrock_converse,
    vertex_anthropic,
    openai_responses,
    anthropic_messages,
    gemini,
)

CODECS: dict[str, Codec] = {c.NAME: c for c in REGISTERED}

# The capabilities each codec has, stated so that mypy checks the module against the sub-protocol
# (tests/codecs/test_contract.py checks that isinstance finds exactly these at run time).
# (chat completions: a served audio answer's id, which names nothing at OpenAI after a fork's cut)
CHAINING: tuple[ChainingCodec, ...] = (openai_responses, openai_chat)
TURN_FOLDING: tuple[TurnFoldingCodec, ...] = (gemini,)  # clients that send one turn as several messages
WEBSOCKETS: tuple[WebSocketCapable, ...] = (openai_responses,)
FRAMED: tuple[FramedStreamCodec, ...] = (bedrock, bedrock_converse)  # streams that are not server-sent events
# The clouds' credential endpoints (STS, OAuth, Entra ID, instance metadata): what they answer is a credential.
# The codecs whose answers can say the provider paused a server-tool turn (Anthropic's pause_turn, on every transport
# that carries a Messages body): a neutral "pause" stop reaching any other codec is refused by unservable_stop.
PAUSING: tuple[Codec, ...] = (anthropic_messages, vertex_anthropic, bedrock)
TOKEN_HOSTS: tuple[str, ...] = (*bedrock.TOKEN_HOSTS, *vertex_anthropic.TOKEN_HOSTS, *openai_chat.TOKEN_HOSTS)


def _split(path: str) -> tuple[str, str]:
    bare, _, query = path.partition("?")
    return bare.split("#", 1)[0], query.split("#", 1)[0]


def codec_for(method: str, path: str, host: str | None = None, named: Mapping[str, str] | None = None) -> Codec | None:
    """The codec answering a model call (``path`` may carry its query string).

    ``named`` maps hosts (or host patterns) to the codec each speaks, by name: a
    request to such a host is that codec's model call, or no model call at all.
    Every other request is chosen by its path, first match in registry order.
    """
    bare, query = _split(path)
    spoken = _spoken_by(host, named)
    for codec in REGISTERED if spoken is None else (spoken,):
        if codec.matches(method, bare, query):
            return codec
    return None


def unservable_stop(codec: Codec, output: Mapping[str, object]) -> BlackboxUnsupportedError | None:
    """Why ``codec`` cannot give ``output`` back as recorded: a neutral stop its API has no word for (None: it can).

    Only ``"pause"`` (a paused server-tool turn) is such a stop today: served as another stop, the agent would take
    the partial turn for a whole one.
    """
    if output.get("stop") != STOP_PAUSE or codec in PAUSING:
        return None
    return BlackboxUnsupportedError(
        "stop",
        f"the answer is a server-tool turn the provider paused (recorded from Anthropic's pause_turn); the {codec.NAME} API "
        "has no paused stop, so it cannot be served to this client as recorded",
        provider=codec.PROVIDER,
        value='"pause"',
    )


def one_turn_roles(codec: Codec) -> tuple[str, ...]:
    """The neutral roles whose adjacent messages ``codec``'s clients send as one turn (``matcher.turns``): most, none."""
    return next((c.ONE_TURN_ROLES for c in TURN_FOLDING if c is codec), ())


def codec_for_path(path: str) -> Codec | None:
    """The codec for a ``POST`` to ``path`` (query ignored: Claude Code posts ``/v1/messages?beta=true``)."""
    return codec_for("POST", path)


def error_codec_for(path: str, host: str | None = None, named: Mapping[str, str] | None = None) -> Codec:
    """Whose error shape to answer a non-model request with: the host's named codec, by path, by host, else the first."""
    spoken = _spoken_by(host, named)
    if spoken is not None:
        return spoken
    bare, _ = _split(path)
    for codec in REGISTERED:
        if codec.speaks_for(bare):
            return codec
    for codec in REGISTERED:
        if host is not None and host_matches(host, codec.DEFAULT_HOSTS):
            return codec
    return REGISTERED[0]


def _spoken_by(host: str | None, named: Mapping[str, str] | None) -> Codec | None:
    """The codec ``named`` gives ``host`` (a host's own name before any pattern), or None."""
    if host is None or not named:
        return None
    host = host.lower()
    name = named.get(host) or next((n for pattern, n in named.items() if "*" in pattern and host_matches(host, (pattern,))), None)
    return None if name is None else CODECS[name]


def codec_names() -> tuple[str, ...]:
    """The registered codecs' names, sorted (what ``[tool.blackbox.hosts]`` and ``--host HOST=CODEC`` accept)."""
    return tuple(sorted(CODECS))


def host_spec(spec: str, codec: str | None = None) -> tuple[str, str | None]:
    """``HOST`` or ``HOST=CODEC`` as (host in lower case, codec name or None); ``ConfigError`` for an unknown codec.

    ``codec`` given: ``spec`` is the host alone and ``codec`` its codec (a config table's key and value).
    """
    host, sep, name = spec.partition("=") if codec is None else (spec, "=", codec)
    host, name = host.strip().lower(), name.strip()
    if not host or "=" in name or (sep and not name):
        raise ConfigError(f"{spec!r} is not a host: give HOST or HOST=CODEC, e.g. llm.corp.example=openai")
    if not sep:
        return host, None
    if name not in CODECS:
        close = difflib.get_close_matches(name, CODECS, n=1, cutoff=0.7)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"{host}: unknown codec {name!r}{hint}; the codecs are {', '.join(codec_names())}")
    return host, name


def host_regex(pattern: str) -> str:
    """A host or host pattern as a regular expression (``*`` is one label or part of one; an optional port)."""
    parts = [re.escape(p) for p in pattern.lower().split("*")]
    return "^" + "[a-z0-9-]+".join(parts) + r"(:\d+)?$"


@functools.lru_cache(maxsize=512)
def _host_pattern(pattern: str) -> re.Pattern[str]:
    return re.compile(host_regex(pattern))


def host_matches(host: str, patterns: Iterable[str]) -> bool:
    """Whether ``host`` is one of ``patterns`` (names, or patterns such as ``bedrock-runtime.*.amazonaws.com``).

    On every request: a set of names is looked up first, and each pattern is compiled once.
    """
    host = host.lower()
    if isinstance(patterns, (set, frozenset)) and host in patterns:
        return True
    return any(pattern == host or ("*" in pattern and _host_pattern(pattern).match(host)) for pattern in patterns)


def stream_content_type(codec: Codec) -> str:
    """The content-type of ``codec``'s streamed answers."""
    return codec.STREAM_CONTENT_TYPE if isinstance(codec, FramedStreamCodec) else "text/event-stream; charset=utf-8"


def stream_parser(codec: Codec) -> StreamParser:
    """A new incremental parser of ``codec``'s streams (server-sent events unless it frames them otherwise)."""
    return codec.stream_parser() if isinstance(codec, FramedStreamCodec) else SseParser()


def parse_stream(codec: Codec, body: bytes) -> list[SseEvent]:
    """Every complete event of a whole streamed body, as ``codec`` frames it."""
    return [ev for _, ev in stream_parser(codec).feed_blocks(body) if ev is not None]


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


@functools.cache
def provider_facts() -> ProviderFacts:
    """What ``cassette.verify`` checks cassettes against: every registered codec's ids, response fields and controls.

    Built once, on first use (the registry is a constant; nothing is built or registered at import):
    ``codecs.verified`` passes it to ``verify_trace`` for every caller above the codecs.
    """
    return ProviderFacts(
        id_prefixes=id_prefixes(),
        response_keys=response_keys(),
        neutral_params=neutral_params(),
        wire_params=frozenset(wire for c in REGISTERED for wire, _ in c.PARAMS),
    )


def all_refusals() -> tuple[Refusal, ...]:
    """Every registered codec's refusal rows, in registry order (the limitations table)."""
    return tuple(r for c in REGISTERED for r in c.REFUSALS)
