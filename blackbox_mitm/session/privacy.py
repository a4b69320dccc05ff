"""What a run must never write: the credentials it knows (the agent's environment, each request's auth headers and
query keys) and the redaction and environment placeholders every payload passes through before it is hashed.

``Privacy`` is held once per run and shared by the session (which redacts each request before it is matched) and the
recorder (which refuses a step that still holds a known secret: ``SecretLeak``).
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import threading
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any
from urllib.parse import parse_qsl

import orjson

from blackbox_mitm.codecs import credential_headers, credential_query, key_env_vars
from blackbox_mitm.session.environment import EnvSubstitution
from blackbox_mitm.session.redact import Redactor

__all__ = ["Privacy", "payload_bytes", "scrub", "secret_env_names", "secrets_from_environ", "secrets_from_request", "unchanged"]

_MIN_SECRET = 8
# Environment variable names that say they hold a secret (besides the codecs' own key variables).
_SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH)$", re.IGNORECASE)
_ALWAYS_CREDENTIAL_HEADERS = ("authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key")
_ALWAYS_CREDENTIAL_QUERY = ("key", "api_key", "api-key", "access_token")


def secret_env_names(environ: Mapping[str, str]) -> list[str]:
    """The variables whose values are never recorded: the codecs' key variables, and any named like a secret."""
    known = set(key_env_vars())
    return [k for k in environ if k in known or _SECRET_NAME.search(k)]


def secrets_from_environ(environ: Mapping[str, str] | None = None) -> set[str]:
    env = os.environ if environ is None else environ
    return {v for k in secret_env_names(env) if len(v := env.get(k, "").strip()) >= _MIN_SECRET}


def _credential_values(value: str) -> list[str]:
    """A header's credential: the whole value, the part after its scheme, and a Basic pair's parts."""
    value = value.strip()
    out = [value]
    scheme, _, rest = value.partition(" ")
    rest = rest.strip()
    if rest:
        out.append(rest)
        if scheme.lower() == "basic":
            try:
                pair = base64.b64decode(rest, validate=True).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                pair = ""
            user, _, password = pair.partition(":")
            out += [pair, user, password]
    return out


@functools.cache
def _credential_names() -> tuple[tuple[str, ...], frozenset[str]]:
    """The header and query names that carry a credential: the codecs' registry is fixed, so read once, not per call."""
    return tuple(dict.fromkeys((*_ALWAYS_CREDENTIAL_HEADERS, *credential_headers()))), frozenset(
        (*_ALWAYS_CREDENTIAL_QUERY, *credential_query())
    )


def secrets_from_request(headers: Mapping[str, str], query: str = "") -> set[str]:
    """Every credential a request carried: auth headers of any scheme, key query parameters."""
    found: set[str] = set()
    header_names, names = _credential_names()
    for name in header_names:
        raw = headers.get(name)
        if raw:
            found.update(v for v in _credential_values(raw) if len(v) >= _MIN_SECRET)
    if query:
        for name, value in parse_qsl(query, keep_blank_values=False):
            if name.lower() in names and len(value.strip()) >= _MIN_SECRET:
                found.add(value.strip())
    return found


def scrub(value: Any, secrets: AbstractSet[str]) -> Any:
    """``value`` (text, or JSON-shaped data) with every known credential replaced by ``[credential]``."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in sorted(secrets, key=len, reverse=True):
            value = value.replace(secret, "[credential]")
        return value
    if isinstance(value, dict):
        return {k: scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, secrets) for v in value]
    return value


def unchanged(value: Any) -> Any:
    return value


def payload_bytes(payload: Any) -> bytes:
    """A payload's JSON for the leak check (a lone surrogate from a JavaScript agent included)."""
    try:
        return orjson.dumps(payload)
    except TypeError:
        return json.dumps(payload, ensure_ascii=False).encode("utf-8", "surrogatepass")


class Privacy:
    """One run's scrubbing, owned once: shared by its session and its recorder, built by ``session/build.py``.

    The redaction rules (applied before a payload is matched or hashed), the environment's placeholders
    (``session.environment``), and the credentials known so far: never recorded, never quoted in a report.
    """

    def __init__(
        self, *, redactor: Redactor | None = None, env: EnvSubstitution | None = None, secrets: AbstractSet[str] | None = None
    ) -> None:
        self.redactor = redactor or Redactor()
        self.env = env
        self._secrets: set[str] = set(secrets_from_environ() if secrets is None else secrets)
        self._lock = threading.Lock()

    @property
    def secrets(self) -> frozenset[str]:
        """The credentials known so far (a snapshot: calls on other threads may add to them)."""
        with self._lock:
            return frozenset(self._secrets)

    def learn(self, secrets: AbstractSet[str]) -> None:
        """Credentials a request carried: from now on never recorded, never quoted."""
        if secrets:
            with self._lock:
                self._secrets |= secrets
