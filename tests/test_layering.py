"""The data flow's plain-Python layers import no mitmproxy: they are testable with nothing but pytest."""

from __future__ import annotations

import subprocess
import sys

import pytest

PLAIN = ["cassette", "codecs", "matcher", "session", "golden"]


@pytest.mark.parametrize("package", PLAIN)
def test_layer_imports_no_mitmproxy(package: str) -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        f"import blackbox_mitm.{package} as p\n"
        f"for m in pkgutil.iter_modules(p.__path__): importlib.import_module('blackbox_mitm.{package}.' + m.name)\n"
        "print(sorted(n for n in sys.modules if n == 'mitmproxy' or n.startswith('mitmproxy.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", f"blackbox_mitm.{package} pulls in {out.stdout.strip()}"
