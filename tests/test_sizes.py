"""The package's sizes, enforced: no function over 50 lines, no module over 400, unless allow-listed with a reason.

A function is counted from its ``def`` line to its last line (decorators, such as a
command's click options, are declarations, not body); methods and nested functions
count on their own. A module is counted in lines. A new long one fails the test; one
that must stay long goes in the allow-list below, with a one-line reason. An entry
that is no longer needed fails the test too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "blackbox_mitm"
LONGEST_FUNCTION = 50
LARGEST_MODULE = 400

# "path relative to blackbox_mitm[:qualified.function]" -> why it stays over the limit (for now)
ALLOWED: dict[str, str] = {}


def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, int]]:
    """(qualified name, lines from ``def`` to its end) of every function and method in ``tree``, nested ones too."""
    found = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = prefix + node.name
            found.append((name, (node.end_lineno or node.lineno) - node.lineno + 1))
            found += _functions(node, name + ".")
        elif isinstance(node, ast.ClassDef):
            found += _functions(node, prefix + node.name + ".")
        else:
            found += _functions(node, prefix)
    return found


def oversized(source: str, where: str) -> list[str]:
    """``where`` (and ``where:function``) for the module and each function of ``source`` over the limits."""
    out = [f"{where}:{name}" for name, lines in _functions(ast.parse(source)) if lines > LONGEST_FUNCTION]
    if len(source.splitlines()) > LARGEST_MODULE:
        out.insert(0, where)
    return out


def _package_oversized() -> dict[str, int]:
    sizes: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        source = path.read_text()
        lengths = dict(_functions(ast.parse(source)))
        for entry in oversized(source, where):
            sizes[entry] = lengths[entry.split(":", 1)[1]] if ":" in entry else len(source.splitlines())
    return sizes


def test_no_function_or_module_is_over_the_limits() -> None:
    found = {entry: n for entry, n in _package_oversized().items() if entry not in ALLOWED}
    listing = "\n".join(f"{entry}: {n} lines" for entry, n in sorted(found.items()))
    assert not found, (
        f"over {LONGEST_FUNCTION} lines per function or {LARGEST_MODULE} per module (split it into well-named "
        f"helpers or modules by concern, or allow-list it in tests/test_sizes.py with a reason):\n{listing}"
    )


def test_the_allow_list_holds_only_what_is_still_over() -> None:
    stale = sorted(set(ALLOWED) - set(_package_oversized()))
    assert not stale, f"no longer over the limits, take them off ALLOWED in tests/test_sizes.py: {stale}"
    assert all(reason.strip() for reason in ALLOWED.values())


def test_a_long_function_and_a_large_module_are_caught() -> None:
    """The check above can fail: a planted 51-line method and a 401-line module are found; 50 lines are not."""
    body = "\n".join(f"        x{i} = {i}" for i in range(LONGEST_FUNCTION - 1))
    planted = f"class C:\n    def long(self):\n{body}\n        return 0\n\n    def short(self):\n        return 1\n"
    assert oversized(planted, "m.py") == ["m.py:C.long"]
    just = "def f():\n" + "\n".join(f"    x{i} = {i}" for i in range(LONGEST_FUNCTION - 1)) + "\n"
    assert oversized(just, "m.py") == []
    nested = "def outer():\n    def inner():\n" + "\n".join(f"        y{i} = {i}" for i in range(LONGEST_FUNCTION)) + "\n    return inner\n"
    assert oversized(nested, "m.py") == ["m.py:outer", "m.py:outer.inner"]
    assert oversized("x = 1\n" * (LARGEST_MODULE + 1), "big.py") == ["big.py"]
    assert oversized("x = 1\n" * LARGEST_MODULE, "big.py") == []
