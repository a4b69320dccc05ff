"""The golden-suite benchmark cannot rot: its ``--quick`` run (8 goldens) makes every measurement and reports it.

Only the shape is checked — each variant measured, the shards merged back to the
whole suite. The numbers are never asserted: timing belongs to benchmarks/.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.e2e, pytest.mark.bench]


def test_the_quick_golden_suite_benchmark_reports_every_variant(tmp_path: Path) -> None:
    data, report = tmp_path / "b.json", tmp_path / "b.md"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--only", "goldens", "--json", str(data), "--write", str(report)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    (section,) = json.loads(data.read_text())["sections"]
    assert section["key"] == "goldens" and section["error"] is None
    figures = section["data"]
    assert figures["goldens"] == figures["merged_tests"] == 8
    assert len(figures["shard_s"]) == 4 and sum(figures["shard_goldens"]) == 8
    for key in ("bare_s", "shared_s", "per_golden_s", "bare_each_s", "shared_each_s", "per_golden_each_s"):
        assert figures[key] > 0, key
    text = report.read_text()
    for row in (
        "bare agents, no proxy",
        "`blackbox test -j 2` (one proxy)",
        "`blackbox test -j 2 --proxy-per-golden`",
        "4 shards, longest (`--shard K/4`)",
    ):
        assert f"| {row} |" in text, row
    assert "saves **" in text and "ms a golden**" in text
