"""Blackbox for mitmproxy: record an LLM agent's model calls at the network level, replay them offline, fork them.

Data flow, one subpackage per stage:

    request -> codecs (provider wire format <-> neutral step) -> cassette (hash chain)
            -> matcher (strict / sequence, divergence reports) -> codecs (synthesized response)

``session`` drives a run (record, replay, fork) in plain Python; ``proxy`` is the
thin mitmproxy layer; ``cli`` the ``blackbox`` command; ``testing`` the pytest plugin.

The public API is ``__all__`` below. Its names load on first use, so that
``import blackbox_mitm`` (and every subpackage import) stays cheap and free of
mitmproxy until a tape is actually used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "BlackboxError",
    "BlackboxUnsupportedError",
    "CassetteError",
    "CassetteExistsError",
    "ForkRefused",
    "OutputPathError",
    "ProxyStartError",
    "Tape",
    "TapeMismatch",
    "Trace",
    "TraceStep",
    "__version__",
    "load_trace",
    "load_verified",
    "recover_journal",
    "replay_test",
    "save_trace",
    "verify_file",
]

# name -> the module that defines it
_HOMES = {
    "BlackboxError": "blackbox_mitm.errors",
    "BlackboxUnsupportedError": "blackbox_mitm.errors",
    "CassetteError": "blackbox_mitm.errors",
    "CassetteExistsError": "blackbox_mitm.errors",
    "ForkRefused": "blackbox_mitm.errors",
    "OutputPathError": "blackbox_mitm.errors",
    "ProxyStartError": "blackbox_mitm.errors",
    "TapeMismatch": "blackbox_mitm.errors",
    "Trace": "blackbox_mitm.cassette.trace",
    "TraceStep": "blackbox_mitm.cassette.trace",
    "load_trace": "blackbox_mitm.cassette.load",
    "save_trace": "blackbox_mitm.cassette.store",
    "recover_journal": "blackbox_mitm.cassette.journal",
    "load_verified": "blackbox_mitm.codecs.verified",
    "verify_file": "blackbox_mitm.codecs.verified",
    "Tape": "blackbox_mitm.testing.tape",
    "replay_test": "blackbox_mitm.testing.tape",
}

if TYPE_CHECKING:
    from blackbox_mitm.cassette.journal import recover_journal
    from blackbox_mitm.cassette.load import load_trace
    from blackbox_mitm.cassette.store import save_trace
    from blackbox_mitm.cassette.trace import Trace, TraceStep
    from blackbox_mitm.codecs.verified import load_verified, verify_file
    from blackbox_mitm.errors import (
        BlackboxError,
        BlackboxUnsupportedError,
        CassetteError,
        CassetteExistsError,
        ForkRefused,
        OutputPathError,
        ProxyStartError,
        TapeMismatch,
    )
    from blackbox_mitm.testing.tape import Tape, replay_test


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'blackbox_mitm' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
