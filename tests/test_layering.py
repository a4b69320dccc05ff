"""The package's layering, enforced: imports only go down the layers, provider facts stay in codecs.

* The plain-Python layers import no mitmproxy: they are testable with nothing but pytest.
* Every import in the package (module level, inside functions, under TYPE_CHECKING)
  goes down or across the layer order, never up; module-level imports form no cycle.
* Provider names, hosts, key variables, paths and id prefixes are spelt only in codecs/.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PLAIN = ["cassette", "codecs", "matcher", "session", "golden", "mcp_server"]


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


# --- imports go down the layers ------------------------------------------------------------

# The layer order, lowest first: a module may import its own layer and the ones below it.
# A top-level package not listed (a new one, like mcp_server) sits at the view/cli level.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("cassette",),
    ("codecs",),
    ("matcher",),
    ("session",),
    ("config", "config_keys"),
    ("proxy",),
    ("testing", "golden"),
    ("view",),
    ("cli",),
)
_LEVEL = {name: level for level, names in enumerate(LAYERS) for name in names}
_TOP = len(LAYERS)  # the package itself (its lazy public API) and __main__
PACKAGE = Path(__file__).resolve().parent.parent / "blackbox_mitm"


def _level(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "__main__":
        return _TOP
    return _LEVEL.get(parts[1], _LEVEL["view"])


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, names) of every ``blackbox_mitm`` import anywhere in ``tree``."""
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:  # relative: resolved against this module's package
                base = module.split(".")[: None if is_package else -1]
                target = ".".join(base[: len(base) - node.level + 1] + ([target] if target else []))
            found.append((node.lineno, target, [a.name for a in node.names]))
    return [(line, target, names) for line, target, names in found if target.split(".")[0] == "blackbox_mitm"]


def upward_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    """The imports in ``source`` (the text of ``module``) that go up the layer order."""
    out = []
    for line, target, names in _imports(ast.parse(source), module, is_package):
        targets = [target]
        if target == "blackbox_mitm" and names:  # ``from blackbox_mitm import config``: the submodule's layer
            targets = [f"{target}.{n}" if n in _LEVEL or (PACKAGE / n).is_dir() else target for n in names if n != "__version__"]
        out += [f"{module}:{line} imports {t}" for t in targets if _level(t) > _level(module)]
    return out


def test_imports_only_go_down_the_layers() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += upward_imports(path.read_text(), _module_name(path), path.name == "__init__.py")
    order = " < ".join("/".join(names) for names in LAYERS)
    assert not found, f"imports against the layer order ({order}):\n" + "\n".join(found)


def test_an_upward_import_is_caught() -> None:
    """The check above can fail: a planted upward import is found, at module level and inside a function."""
    planted = "from blackbox_mitm.cassette import trace\nfrom blackbox_mitm.session.engine import Session\n\ndef f():\n    import blackbox_mitm.codecs\n"
    assert upward_imports(planted, "blackbox_mitm.cassette.planted") == [
        "blackbox_mitm.cassette.planted:2 imports blackbox_mitm.session.engine",
        "blackbox_mitm.cassette.planted:5 imports blackbox_mitm.codecs",
    ]
    assert upward_imports("from .. import config\n", "blackbox_mitm.matcher.planted") == [
        "blackbox_mitm.matcher.planted:1 imports blackbox_mitm.config"
    ]
    assert upward_imports("from blackbox_mitm import __version__\n", "blackbox_mitm.cli.planted") == []
    assert upward_imports("from blackbox_mitm import load_verified\n", "blackbox_mitm.view.planted") != []
    # a new package (mcp_server) sits at the view level: it may use the library, and only cli sits above it
    assert upward_imports("from blackbox_mitm.view import page\n", "blackbox_mitm.mcp_server.planted") == []
    assert upward_imports("from blackbox_mitm.cli import main\n", "blackbox_mitm.mcp_server.planted") != []


def _module_level_imports(path: Path) -> set[str]:
    """The package's modules ``path`` imports when it is imported (not in functions, not under TYPE_CHECKING)."""
    module, is_package = _module_name(path), path.name == "__init__.py"
    body = [
        node
        for node in ast.parse(path.read_text()).body
        if not (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test))
        and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]
    out = set()
    for _, target, names in _imports(ast.Module(body=body, type_ignores=[]), module, is_package):
        out |= {target, *(f"{target}.{n}" for n in names)}
    return out


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    reach, todo = {start}, [start]
    while todo:
        for n in graph.get(todo.pop(), set()) - reach:
            reach.add(n)
            todo.append(n)
    return reach


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a loop."""
    reach = {m: _reachable(graph, m) for m in graph}
    groups = {frozenset(n for n in reach[m] if m in reach.get(n, set())) for m in graph}
    return sorted(sorted(g) for g in groups if len(g) > 1)


def test_modules_import_no_cycle() -> None:
    """A package and its own submodules are one unit (a codec's __init__ imports its parts after its facts)."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for module, path in paths.items():
        graph[module] = {
            t for t in _module_level_imports(path) if t in paths and not (t.startswith(module + ".") or module.startswith(t + "."))
        }
    assert import_cycles(graph) == []


def test_the_cassette_layer_has_no_cycle_even_through_imports_in_functions() -> None:
    """store <-> recovery was one (store's loader recovered a journal; recovery saves through store): cassette/load.py sits above both."""
    paths = {_module_name(p): p for p in (PACKAGE / "cassette").rglob("*.py") if p.name != "__init__.py"}
    graph = {}
    for module, path in paths.items():
        graph[module] = {
            t
            for _, target, names in _imports(ast.parse(path.read_text()), module, False)
            for t in (target, *(f"{target}.{n}" for n in names))
        } & set(paths)
    assert import_cycles(graph) == []


def test_a_cycle_is_caught() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c"]]


def test_verify_checks_the_facts_it_is_given() -> None:
    """verify sits below the codecs: the registry hands it a ProviderFacts value, and verify uses that one."""
    from blackbox_mitm.cassette.facts import ProviderFacts
    from blackbox_mitm.cassette.trace import Trace
    from blackbox_mitm.cassette.verify import verify_trace
    from blackbox_mitm.codecs import provider_facts

    trace = Trace.new()
    trace.append("model_output", {"type": "final_answer", "text": "x", "zz_999": 1})
    mine = ProviderFacts(id_prefixes=("zz_",), response_keys=(), neutral_params=frozenset())
    assert [p.code for p in verify_trace(trace, facts=mine)] == ["provider_id"]
    assert [p.code for p in verify_trace(trace, facts=provider_facts())] == []


def test_verify_without_facts_is_an_error_not_a_silent_global() -> None:
    """No registry-wide default: verify below the codecs must be handed the facts; the facade above passes the registry's."""
    import inspect

    from blackbox_mitm.cassette import diff, facts, verify
    from blackbox_mitm.cassette.trace import Trace
    from blackbox_mitm.codecs import provider_facts, verified

    trace = Trace.new()
    trace.append("model_output", {"type": "final_answer", "text": "x"})
    for fn in (verify.verify_trace, verify.verify_file, verify.load_verified, diff.diff_verified):
        param = inspect.signature(fn).parameters["facts"]
        assert param.kind is inspect.Parameter.KEYWORD_ONLY and param.default is inspect.Parameter.empty, fn.__name__
    unchecked: Any = verify.verify_trace  # mypy refuses the call below; at run time it is a TypeError naming facts
    with pytest.raises(TypeError, match="facts"):
        unchecked(trace)
    assert not {"register", "registered", "_registered"} & set(vars(facts)), "cassette.facts keeps no global registry"
    assert verified.verify_trace(trace) == verify.verify_trace(trace, facts=provider_facts()) == []
    assert provider_facts() is provider_facts()  # built once, on first use


def test_importing_the_codecs_registers_nothing() -> None:
    """No import-time side effect: a fresh interpreter importing the registry leaves cassette.facts as it was."""
    code = (
        "import blackbox_mitm.cassette.facts as f\n"
        "before = set(vars(f))\n"
        "import blackbox_mitm.codecs\n"
        "print(sorted(set(vars(f)) - before), blackbox_mitm.codecs.provider_facts.cache_info().currsize)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "0"]
