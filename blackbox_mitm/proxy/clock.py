"""``blackbox replay --clock recorded``: the wrapped command's clock set to the recorded run's start, running from there.

Environment substitution (``session.environment``) covers the dates an agent
writes into what it sends; a date that reaches the model some other way — a
tool's output (``date``), a file's mtime — needs the agent's own clock to be
the recorded one. Debian's ``libfaketime`` (``apt-get install faketime``) does
that for a dynamically linked program: the wrapped command gets
``LD_PRELOAD=libfaketime.so.1`` and ``FAKETIME=@<the recorded start>``, and so
does every dynamically linked program it starts (each starts at the recorded
start again: libfaketime's shared clock across processes fails inside Node's
process tree, so it is not used). A statically linked binary
(most Go programs, Codex CLI's Rust binary) keeps the real clock.

The proxy itself keeps the real clock. mitmproxy makes each certificate valid
from two days before it is made; a clock set further back would find the
certificates not yet valid, so ``reach_back`` makes new ones valid from before
the recorded start (and the CA, if it is created now).
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from blackbox_mitm.errors import BlackboxError

__all__ = ["ClockUnavailable", "faketime_env", "find_libfaketime", "reach_back"]

LIBFAKETIME_ENV = "BLACKBOX_LIBFAKETIME"
_CANDIDATES = (
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
)


class ClockUnavailable(BlackboxError):
    """``--clock recorded`` without libfaketime on this machine."""


def find_libfaketime() -> Path:
    """The libfaketime library (``BLACKBOX_LIBFAKETIME`` names another); ``ClockUnavailable`` when there is none."""
    named = os.environ.get(LIBFAKETIME_ENV, "").strip()
    for candidate in (named,) if named else _CANDIDATES:
        if Path(candidate).is_file():
            return Path(candidate)
    where = f"{LIBFAKETIME_ENV}={named} is not a file" if named else "libfaketime.so.1 was not found"
    raise ClockUnavailable(
        f"--clock recorded needs Debian's libfaketime ({where}): apt-get install faketime, "
        f"or name the library with {LIBFAKETIME_ENV}=/path/to/libfaketime.so.1"
    )


def faketime_env(start_ms: int | float, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The variables that start a command's clock at ``start_ms`` (epoch milliseconds), running from there."""
    env = os.environ if environ is None else environ
    lib = str(find_libfaketime())
    preload = env.get("LD_PRELOAD", "").strip()
    start = dt.datetime.fromtimestamp(float(start_ms) / 1000).astimezone()  # local time, as libfaketime reads it
    return {
        "LD_PRELOAD": f"{lib} {preload}".strip() if lib not in preload.split() else preload,
        "FAKETIME": start.strftime("@%Y-%m-%d %H:%M:%S"),
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",  # timers and event loops keep the real monotonic clock
    }


def reach_back(start_ms: int | float) -> None:
    """Make the certificates mitmproxy creates from now on valid from a day before ``start_ms``."""
    from mitmproxy import certs

    back = dt.datetime.now(dt.UTC) - dt.datetime.fromtimestamp(float(start_ms) / 1000, dt.UTC) + dt.timedelta(days=1)
    if -back < certs.CERT_VALIDITY_OFFSET:
        certs.CERT_VALIDITY_OFFSET = -back
