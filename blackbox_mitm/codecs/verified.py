"""Verify cassettes against the codec registry's provider facts: the one way the layers above the codecs verify.

``cassette.verify`` sits below the codecs and never imports them, so each of its
functions takes the providers' facts as ``facts=`` (a ``ProviderFacts``), with no
global default. The registry builds that value (``provider_facts()``); these
functions pass it, so no caller (cli, session, golden, testing, view, the MCP
server, the public ``blackbox_mitm.load_verified``) builds facts by hand or
relies on an import having registered them. Same arguments and answers as the
functions they wrap, less ``facts``.
"""

from __future__ import annotations

import os

from blackbox_mitm.cassette import diff, verify
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.codecs import provider_facts

__all__ = ["diff_verified", "load_verified", "verify_file", "verify_trace"]


def verify_trace(trace: Trace, *, source: bytes | None = None) -> list[verify.Problem]:
    """``cassette.verify.verify_trace`` with every registered codec's facts."""
    return verify.verify_trace(trace, facts=provider_facts(), source=source)


def verify_file(path: str | os.PathLike[str]) -> verify.VerifyResult:
    """``cassette.verify.verify_file`` with every registered codec's facts."""
    return verify.verify_file(path, facts=provider_facts())


def load_verified(path: str | os.PathLike[str], *, recover: bool = True) -> Trace:
    """``cassette.verify.load_verified`` with every registered codec's facts (``UnverifiedCassetteError`` unless it verifies)."""
    return verify.load_verified(path, facts=provider_facts(), recover=recover)


def diff_verified(a_path: str | os.PathLike[str], b_path: str | os.PathLike[str]) -> diff.VerifiedDiff:
    """``cassette.diff.diff_verified`` with every registered codec's facts."""
    return diff.diff_verified(a_path, b_path, facts=provider_facts())
