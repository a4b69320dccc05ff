"""The exceptions Blackbox raises: one tree, each class also a built-in where that helps callers.

    BlackboxError(Exception)                      every error Blackbox raises on purpose
    ├── CassetteError(BlackboxError, ValueError)  a cassette cannot be read, written or trusted
    │   ├── CassetteExistsError(CassetteError, FileExistsError)
    │   │                                         refusing to replace an existing cassette
    │   ├── UnverifiedCassetteError               read, but does not verify (``problems``; cassette.verify)
    │   └── CompressedCassetteError               a .gz / .zst that cannot be read (cassette.compression)
    ├── BlackboxUnsupportedError(BlackboxError, ValueError)
    │                                             a request or response field the cassette cannot carry
    ├── StreamIncomplete(BlackboxError)           a recorded stream that ended before its last event (codecs)
    ├── ForkRefused(BlackboxError, ValueError)    a fork request that cannot be served
    ├── OutputPathError(BlackboxError, ValueError)
    │                                             an output file that cannot be written (checked before a run)
    ├── SecretLeak(BlackboxError)                 a step would hold a credential (session.recorder)
    ├── RecordFailed(BlackboxError)               a call's steps could not be made durable (session.recorder)
    ├── RouteRefused(BlackboxError)               proxy credentials that name no run (session.router)
    ├── MaskError(BlackboxError, ValueError)      a mask that cannot be used (matcher.masks)
    │   └── RedactionError(MaskError)             a redaction rule that cannot be used (session.redact)
    ├── ConfigError(BlackboxError, ValueError)    a project setting that cannot be used (config)
    ├── ShardError(BlackboxError, ValueError)     a --shard that is not K/N, a JUnit file that cannot be merged (golden.shards)
    ├── GoldenError(BlackboxError, ValueError)    a golden that cannot be added/removed/found (golden.suite)
    │   └── NoSuiteError(GoldenError)             no goldens folder
    ├── ProxyStartError(BlackboxError, RuntimeError)
    │                                             the in-process proxy could not listen
    └── TapeMismatch(BlackboxError, AssertionError)
                                                  a tape test's agent left its recorded path

Every class is defined here, as httpx does, so the whole tree is one module; the
module that raises one also re-exports it (``from blackbox_mitm.config import
ConfigError`` keeps working).

Every error has ``hint``: what to do about it, in the library's own words (``None``
when the message says it already), and ``options``: the names of the parameters
the hint is about (``("overwrite",)``). A library message never quotes a command
line flag; the ``blackbox`` command turns ``options`` into its own flags.

Foreign exceptions (OSError, orjson.JSONDecodeError, ...) are translated at the
boundary with ``raise ... from exc`` so that callers catch one family.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

__all__ = [
    "BlackboxError",
    "BlackboxUnsupportedError",
    "CassetteError",
    "CassetteExistsError",
    "CompressedCassetteError",
    "ConfigError",
    "ForkRefused",
    "GoldenError",
    "MaskError",
    "NoSuiteError",
    "OutputPathError",
    "ProxyStartError",
    "RecordFailed",
    "RedactionError",
    "RouteRefused",
    "SecretLeak",
    "ShardError",
    "StreamIncomplete",
    "TapeMismatch",
    "UnverifiedCassetteError",
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


class _Problem(Protocol):
    """What ``UnverifiedCassetteError`` reads of a ``cassette.verify.Problem``."""

    @property
    def code(self) -> str: ...

    @property
    def reason(self) -> str: ...


class UnverifiedCassetteError(CassetteError):
    """A cassette that was read but does not verify; ``problems`` lists every broken rule (``verify.Problem``s)."""

    def __init__(self, path: str, problems: Sequence[_Problem]) -> None:
        self.problems: list[Any] = list(problems)
        first = problems[0]
        if first.code == "empty":
            message = f"the cassette does not verify: {first.reason}"
        else:
            message = f"the cassette does not verify ({first}); run `blackbox verify` for details, and re-record it"
        super().__init__(message, path=path)


class CompressedCassetteError(CassetteError):
    """A compressed cassette or journal that cannot be read: not that format, cut short, or larger than the cap."""


class BlackboxUnsupportedError(BlackboxError, ValueError):
    """A field the cassette cannot carry, named as a JSON path, with the reason.

    Raised instead of recording something a replay could not give back. ``str(exc)``
    is ``field: reason (it was VALUE)``; ``client_message`` is what the agent is
    answered with, the class named first (``BlackboxUnsupportedError: field: …``),
    so that a client's error says who refused the call.
    """

    def __init__(self, field: str, reason: str, *, provider: str | None = None, hint: str | None = None, value: str | None = None) -> None:
        self.field = field
        self.reason = reason
        self.provider = provider
        self.value = value  # the refused value, as JSON text, when the message names it
        shown = "" if value is None else f" (it was {value})"
        super().__init__(f"{field}: {reason}{shown}", hint=hint)

    @property
    def client_message(self) -> str:
        """The refusal as the agent reads it: ``BlackboxUnsupportedError: field: reason (it was VALUE)``."""
        return f"BlackboxUnsupportedError: {self}"


class StreamIncomplete(BlackboxError):
    """A recorded stream that is not a completed call: no final event, or an in-stream error.

    ``error`` holds the in-stream ``error`` object when there was one.
    """

    def __init__(self, message: str, *, error: dict[str, Any] | None = None) -> None:
        self.error = error
        super().__init__(message)


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


class SecretLeak(BlackboxError):
    """A step would contain an API key: the call is refused and nothing is written."""


class RecordFailed(BlackboxError):
    """A call's steps could not be made durable (a full disk, a closed journal): nothing of it is kept."""


class RouteRefused(BlackboxError):
    """A client whose proxy credentials name no run this proxy can serve."""


class MaskError(BlackboxError, ValueError):
    """A mask (or redaction rule) that cannot be used: a bad regular expression, a bad name, an empty match."""


class RedactionError(MaskError):
    """A redaction rule that cannot be used (a bad regular expression, a bad name, an empty match)."""


class ConfigError(BlackboxError, ValueError):
    """A project configuration (or a setting given as a flag) that cannot be used; the message says which and why."""


class ShardError(BlackboxError, ValueError):
    """A shard that is not K/N with 1 <= K <= N, or a JUnit file that cannot be merged."""


class GoldenError(BlackboxError, ValueError):
    """A golden-suite request that cannot be done: no such golden, a bad name, a duplicate run."""


class NoSuiteError(GoldenError):
    """The goldens folder does not exist (or is not a folder): a usage error, with what to do."""


class ProxyStartError(BlackboxError, RuntimeError):
    """The proxy could not listen (address in use, bad option, ...)."""


class TapeMismatch(BlackboxError, AssertionError):
    """The agent left its recorded path: the message is the full report, difference included.

    ``status`` is the replay status as data (what ``blackbox replay --report`` writes).
    """

    def __init__(self, report: str, status: dict[str, Any]) -> None:
        super().__init__(report)
        self.status = status
