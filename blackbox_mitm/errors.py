"""The exceptions Blackbox raises: one tree, each class also a built-in where that helps callers.

    BlackboxError(Exception)                      every error Blackbox raises on purpose
    ├── CassetteError(BlackboxError, ValueError)  a cassette cannot be read, written or trusted
    │   └── CassetteExistsError(CassetteError, FileExistsError)
    │                                             refusing to replace an existing cassette
    ├── BlackboxUnsupportedError(BlackboxError, ValueError)
    │                                             a request or response field the cassette cannot carry
    ├── ForkRefused(BlackboxError, ValueError)    a fork request that cannot be served
    ├── OutputPathError(BlackboxError, ValueError)
    │                                             an output file that cannot be written (checked before a run)
    ├── ProxyStartError(BlackboxError, RuntimeError)
    │                                             the in-process proxy could not listen
    ├── TapeMismatch(BlackboxError, AssertionError)
    │                                             a tape test's agent left its recorded path
    │
    │   defined beside the code that raises them (same base, listed here for the whole tree):
    ├── CassetteError
    │   ├── UnverifiedCassetteError               cassette.verify: read, but does not verify (``problems``)
    │   └── CompressedCassetteError               cassette.compression: a .gz / .zst that cannot be read
    ├── StreamIncomplete(BlackboxError)           codecs.base: a stream that ended before its last event
    ├── SecretLeak(BlackboxError)                 session.recorder: a step would hold a credential
    ├── RecordFailed(BlackboxError)               session.recorder: a call's steps could not be made durable
    ├── RouteRefused(BlackboxError)               session.router: proxy credentials that name no run
    ├── MaskError(BlackboxError, ValueError)      matcher.masks: a mask that cannot be used
    │   └── RedactionError(MaskError)             session.redact: a redaction rule that cannot be used
    ├── ConfigError(BlackboxError, ValueError)    config: a project setting that cannot be used
    ├── ShardError(BlackboxError, ValueError)     golden.shards: a --shard that is not K/N, a JUnit file that cannot be merged
    └── GoldenError(BlackboxError, ValueError)    golden.suite: a golden that cannot be added/removed/found
        └── NoSuiteError(GoldenError)             golden.suite: no goldens folder

Every error has ``hint``: what to do about it, in the library's own words (``None``
when the message says it already), and ``options``: the names of the parameters
the hint is about (``("overwrite",)``). A library message never quotes a command
line flag; the ``blackbox`` command turns ``options`` into its own flags.

Foreign exceptions (OSError, orjson.JSONDecodeError, ...) are translated at the
boundary with ``raise ... from exc`` so that callers catch one family.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "BlackboxError",
    "BlackboxUnsupportedError",
    "CassetteError",
    "CassetteExistsError",
    "ForkRefused",
    "OutputPathError",
    "ProxyStartError",
    "TapeMismatch",
]


class BlackboxError(Exception):
    """Base class of every error Blackbox raises on purpose.

    ``str(exc)`` is the message (what is wrong); ``hint`` says what to do;
    ``options`` names the parameters (Python names) the hint is about.
    """

    def __init__(self, message: str = "", *, hint: str | None = None, options: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.hint = hint
        self.options = tuple(options)


class CassetteError(BlackboxError, ValueError):
    """A cassette file that cannot be loaded, saved or verified.

    ``path`` is the file, ``where`` a JSON path inside it (``$.steps[3].type``) when
    the problem has a place, and the message always says what to do next.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        where: str | None = None,
        hint: str | None = None,
        options: Sequence[str] = (),
    ) -> None:
        self.path = path
        self.where = where
        self.detail = message
        prefix = ""
        if path:
            prefix = f"{path}: "
        if where:
            prefix += f"at {where}: "
        super().__init__(prefix + message, hint=hint, options=options)


class CassetteExistsError(CassetteError, FileExistsError):
    """Refusing to overwrite an existing cassette."""


class BlackboxUnsupportedError(BlackboxError, ValueError):
    """A field the cassette cannot carry, named as a JSON path, with the reason.

    Raised instead of recording something a replay could not give back.
    """

    def __init__(self, field: str, reason: str, *, provider: str | None = None, hint: str | None = None, value: str | None = None) -> None:
        self.field = field
        self.reason = reason
        self.provider = provider
        self.value = value  # the refused value, as JSON text, when the message names it
        shown = "" if value is None else f" (it was {value})"
        super().__init__(f"BlackboxUnsupportedError: {field}: {reason}{shown}", hint=hint)


class ForkRefused(BlackboxError, ValueError):
    """A fork request that cannot be served; the hint says what to change."""


class OutputPathError(BlackboxError, ValueError):
    """An output file that cannot be written: empty name, a directory, a dangling link, no permission.

    Checked before a run starts, so that nothing runs whose result could not be kept.
    """

    def __init__(self, path: str, reason: str, *, hint: str | None = None) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path or repr(path)}: {reason}", hint=hint)


class ProxyStartError(BlackboxError, RuntimeError):
    """The proxy could not listen (address in use, bad option, ...)."""


class TapeMismatch(BlackboxError, AssertionError):
    """The agent left its recorded path: the message is the full report, difference included.

    ``status`` is the replay status as data (what ``blackbox replay --report`` writes).
    """

    def __init__(self, report: str, status: dict[str, Any]) -> None:
        super().__init__(report)
        self.status = status
