"""The golden-suite benchmark cannot rot: its ``--quick`` run (2 goldens) makes every measurement and reports it.

Only the shape is checked — each variant measured, the shards merged back to the
whole suite. The numbers are never asserted: timing belongs to benchmarks/. The goldens
section is read from the session's one quick run of every section (``quick_run`` in
tests/benchmarks/bench_run.py, shared with test_bench_smoke.py), not run a second time.
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.bench]
pytest_plugins = ["bench_run"]  # its quick_run fixture: the session's one quick run


def test_the_quick_golden_suite_benchmark_reports_every_variant(quick_run: tuple[str, dict[str, Any], str]) -> None:
    text, data, _ = quick_run
    (section,) = [s for s in data["sections"] if s["key"] == "goldens"]
    assert section["key"] == "goldens" and section["error"] is None
    figures = section["data"]
    assert figures["goldens"] == figures["merged_tests"] == 2
    assert len(figures["shard_s"]) == 4 and sum(figures["shard_goldens"]) == 2
    for key in ("bare_s", "shared_s", "per_golden_s", "bare_each_s", "shared_each_s", "per_golden_each_s"):
        assert figures[key] > 0, key
    for row in (
        "bare agents, no proxy",
        "`blackbox test -j 2` (one proxy)",
        "`blackbox test -j 2 --proxy-per-golden`",
        "4 shards, longest (`--shard K/4`)",
    ):
        assert f"| {row} |" in text, row
    assert "saves **" in text and "ms a golden**" in text
