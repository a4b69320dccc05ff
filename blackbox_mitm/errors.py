"""The exceptions Blackbox raises, one small tree that subclasses built-ins.

    BlackboxError(Exception)
    ├── CassetteError(BlackboxError, ValueError)      a cassette cannot be read, written or trusted
    │   └── CassetteExistsError(CassetteError, FileExistsError)
    ├── BlackboxUnsupportedError(BlackboxError, ValueError)
    │       a request or response field the cassette cannot carry (limitations page)
    └── ReplayError(BlackboxError, AssertionError)   a replay could not answer a request

Foreign exceptions (OSError, orjson.JSONDecodeError, ...) are translated at the
boundary with ``raise ... from exc`` so that callers catch one family.
"""

from __future__ import annotations

__all__ = [
    "BlackboxError",
    "BlackboxUnsupportedError",
    "CassetteError",
    "CassetteExistsError",
    "ReplayError",
]


class BlackboxError(Exception):
    """Base class of every error Blackbox raises on purpose."""


class CassetteError(BlackboxError, ValueError):
    """A cassette file that cannot be loaded, saved or verified.

    ``path`` is the file, ``where`` a JSON path inside it (``$.steps[3].type``) when
    the problem has a place, and the message always says what to do next.
    """

    def __init__(self, message: str, *, path: str | None = None, where: str | None = None) -> None:
        self.path = path
        self.where = where
        self.detail = message
        prefix = ""
        if path:
            prefix = f"{path}: "
        if where:
            prefix += f"at {where}: "
        super().__init__(prefix + message)


class CassetteExistsError(CassetteError, FileExistsError):
    """Refusing to overwrite an existing cassette."""


class BlackboxUnsupportedError(BlackboxError, ValueError):
    """A field the cassette cannot carry, named as a JSON path, with the reason.

    Raised instead of recording something a replay could not give back.
    """

    def __init__(self, field: str, reason: str, *, provider: str | None = None) -> None:
        self.field = field
        self.reason = reason
        self.provider = provider
        super().__init__(f"BlackboxUnsupportedError: {field}: {reason}")


class ReplayError(BlackboxError, AssertionError):
    """A replay that cannot answer a request: a divergence, an exhausted cassette, ..."""
