"""Shared fixtures: a CA directory made once per session, the fake provider, running `blackbox` for real."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))


@pytest.fixture(scope="session")
def confdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """mitmproxy's confdir with a CA, shared by the whole run (creating a CA takes a moment)."""
    from blackbox_mitm.proxy.environment import ensure_ca

    d = tmp_path_factory.mktemp("mitmproxy-confdir")
    ensure_ca(d)
    return d


@pytest.fixture
def fake_provider() -> Iterator[object]:
    from fake_provider import FakeProvider

    with FakeProvider() as provider:
        yield provider


def map_remote_for(url: str) -> list[str]:
    """map_remote specs sending both providers' hosts to a local fake provider."""
    return [rf"|https://api\.openai\.com|{url}", rf"|https://api\.anthropic\.com|{url}"]


def blackbox(*args: str, env: dict[str, str] | None = None, timeout: float = 180, check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the real `blackbox` command (a separate process, a real proxy)."""
    full_env = dict(os.environ)
    full_env.pop("HTTPS_PROXY", None)
    full_env.pop("https_proxy", None)
    full_env.setdefault("OPENAI_API_KEY", "sk-test-not-a-real-key-000")
    full_env.setdefault("ANTHROPIC_API_KEY", "sk-test-not-a-real-key-000")
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "blackbox_mitm", *args], env=full_env, capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"blackbox {' '.join(args)} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc
