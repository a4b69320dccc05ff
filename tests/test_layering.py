"""The data flow's plain-Python layers import no mitmproxy: they are testable with nothing but pytest."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

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


# --- provider facts live in their codec -------------------------------------------------

_PATH_LITERALS = ("/chat/completions", "/v1/messages", "/v1/responses", ":generateContent", ":streamGenerateContent")


def _provider_literals() -> tuple[set[str], set[str], tuple[str, ...]]:
    """(whole strings, substrings, prefixes) only a codec may spell: names, hosts, key variables, paths, id prefixes."""
    from blackbox_mitm.codecs import REGISTERED

    names = {c.NAME for c in REGISTERED} | {c.PROVIDER for c in REGISTERED}
    fragments = set(_PATH_LITERALS)
    for codec in REGISTERED:
        fragments |= set(codec.DEFAULT_HOSTS) | set(codec.KEY_ENV_VARS)
    prefixes = tuple(p for c in REGISTERED for p in c.ID_PREFIXES)
    return names, fragments, prefixes


def _is_provider_literal(text: str, facts: tuple[set[str], set[str], tuple[str, ...]]) -> bool:
    names, fragments, prefixes = facts
    return text.lower() in names or any(f in text for f in fragments) or text.startswith(prefixes)


def _string_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """String constants that are not docstrings."""
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docstrings.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_provider_facts_appear_only_in_codecs() -> None:
    facts = _provider_literals()
    package = Path(__file__).resolve().parent.parent / "blackbox_mitm"
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).parts[0] == "codecs":
            continue
        for line, text in _string_literals(ast.parse(path.read_text(), str(path))):
            if _is_provider_literal(text, facts):
                found.append(f"{path.relative_to(package)}:{line}: {text[:60]!r}")
    assert not found, "provider facts outside codecs/ (ask the registry in blackbox_mitm.codecs):\n" + "\n".join(found)


def test_a_codec_literal_is_caught() -> None:
    """The check above can fail: a host spelt outside codecs/ is found."""
    facts = _provider_literals()
    tree = ast.parse(
        'def f():\n    """api.openai.com in a docstring is fine"""\n    return "https://api.openai.com/v1", "toolu_", "anthropic"\n'
    )
    hits = [t for _, t in _string_literals(tree) if _is_provider_literal(t, facts)]
    assert hits == ["https://api.openai.com/v1", "toolu_", "anthropic"]


def test_every_registered_codec_satisfies_the_contract() -> None:
    """mypy checks the registry's type; this checks at run time that nothing is missing."""
    from blackbox_mitm.codecs import REGISTERED
    from blackbox_mitm.codecs.base import Codec, StreamingCodec

    members = [m for proto in (Codec, StreamingCodec) for m in vars(proto) if not m.startswith("_")]
    for codec in REGISTERED:
        missing = [m for m in members if not hasattr(codec, m)]
        assert not missing, f"{codec.NAME} lacks {missing}"
