"""What a real credential looks like, in a payload's text: the names, the shapes, and the other schemes' values.

``cassette.neutrality`` (the spec's provider-neutrality rules, run by verify) asks
this module whether a string holds a credential: ``CREDENTIAL_NAME`` (a key named
like ``OPENAI_API_KEY``, ``x-api-key``, ``authorization``), ``SECRET`` (the shape of
a provider's key, a bearer token) judged by ``realistic`` (a key's randomness), and
``scheme_credential`` (an Authorization ``Token``/``Basic`` value, an API-key header
line, a ``key=`` query parameter). ``redact_secret`` shows one in a message.
"""

from __future__ import annotations

import base64
import re

__all__ = ["CREDENTIAL_NAME", "QUERY_KEY", "SECRET", "realistic", "redact_secret", "scheme_credential"]

# Names of credentials: environment variables (OPENAI_API_KEY, ANTHROPIC_AUTH_TOKEN),
# headers (x-api-key, authorization) and fields (apiKey).
CREDENTIAL_NAME_RE = r"(?i:(?:[a-z0-9]+[_-])*api[_-]?key|(?:[a-z0-9]+[_-])*auth[_-]?token|(?:proxy[_-])?authorization)"
# Shapes of real credentials; ``realistic`` then asks for a key's randomness.
SECRET_RE = (
    r"(?:sk-ant-[A-Za-z0-9_-]{32,}"
    r"|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{32,}"
    r"|sk-[A-Za-z0-9]{32,}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|gsk_[A-Za-z0-9]{40,}"
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"  # an AWS access key id (long-term, temporary)
    r"|ya29\.[A-Za-z0-9_-]{20,}"  # a Google OAuth access token
    r"|[Bb]earer +[A-Za-z0-9._~+/-]{24,}=*)"
)

CREDENTIAL_NAME = re.compile(CREDENTIAL_NAME_RE, re.ASCII)
SECRET = re.compile(r"(?<![A-Za-z0-9_-])" + SECRET_RE)

# Credentials in the other schemes a request carries them in: an Authorization header's
# ``Token`` or ``Basic`` value, an API-key header line (``x-goog-api-key: …``), and a
# ``key=`` / ``api_key=`` query parameter. Searched in the lowercased bytes; the value
# is then read from the original bytes at the same offsets and judged (``_scheme_value``).
# ``neutrality.scan`` looks for them only in a payload that names a credential (``authorization``,
# ``api-key``, ``api_key``: ``_CREDENTIAL_WORDS``) or holds a ``?key=`` / ``&key=``
# query parameter (``QUERY_KEY``, led by a literal: one fast pass).
_SCHEMES: tuple[tuple[str, re.Pattern[bytes]], ...] = (
    ("token", re.compile(rb"token +([a-z0-9._~+/-]{16,}=*)")),
    ("basic", re.compile(rb"basic +([a-z0-9+/]{4,}={0,2})")),
    ("api-key", re.compile(rb"api-key\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?([a-z0-9._~+/-]{16,})")),
    ("key", re.compile(rb"key=([a-z0-9._~%+/-]{16,})")),
)
QUERY_KEY = re.compile(rb"key=(?<=[?&]key=)[a-z0-9._~%+/-]{16}")
_QUERY_LEADS = (b"?", b"&", b"?api_", b"&api_", b"?api-", b"&api-", b"?api", b"&api")
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")


def scheme_credential(data: bytes, lowered: bytes | None = None) -> str | None:
    """A credential of another scheme in ``data`` (UTF-8), redacted for a message; None when there is none."""
    lowered = data.lower() if lowered is None else lowered  # ASCII only: offsets stay the same
    for scheme, pattern in _SCHEMES:
        for m in pattern.finditer(lowered):
            value = data[m.start(1) : m.end(1)].decode()
            if _scheme_value(scheme, value, lowered[max(0, m.start() - 5) : m.start()]):
                return f"{scheme} {value[:4]}… ({len(value)} characters)"
    return None


def _scheme_value(scheme: str, value: str, before: bytes) -> bool:
    if scheme == "key":
        return before.endswith(_QUERY_LEADS) and realistic(value)
    if scheme in ("token", "basic") and before[-1:].isalnum():
        return False  # part of a longer word ("keytoken abc…")
    return _basic_pair(value) if scheme == "basic" else realistic(value)


def _basic_pair(value: str) -> bool:
    """A Basic credential: base64 of ``user:password``, both non-empty and printable."""
    if not _BASE64.fullmatch(value) or len(value) % 4:
        return False
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except ValueError:
        return False
    user, sep, password = decoded.partition(":")
    return bool(sep and user and password and decoded.isprintable())


def realistic(secret: str) -> bool:
    """A key's randomness: letters and digits, a long unbroken run, many distinct characters."""
    body = re.sub(r"^(?:sk-(?:ant-|proj-|svcacct-|admin-)?|AIza|gsk_|[Bb]earer +)", "", secret)
    longest = max((len(run) for run in re.findall(r"[A-Za-z0-9]+", body)), default=0)
    return any(c.isdigit() for c in body) and any(c.isalpha() for c in body) and longest >= 16 and len(set(body)) >= 10


def redact_secret(secret: str) -> str:
    keep = 12 if secret.lower().startswith("bearer") else 10
    return f"{secret[:keep]}… ({len(secret)} characters)"
