"""The docs that are generated from code say what the code says."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_refusals", DOCS / "gen_refusals.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_refusal_table_in_providers_md_is_the_generated_one() -> None:
    gen = _generator()
    page = (DOCS / "providers.md").read_text()
    assert page == gen.page_with_table(page), "docs/providers.md's refusal table is stale: run python docs/gen_refusals.py --write"


def test_every_registered_refusal_row_is_in_the_table() -> None:
    from blackbox_mitm.codecs import all_refusals

    table = _generator().table()
    assert all(f"`{r.id}`" in table for r in all_refusals())
