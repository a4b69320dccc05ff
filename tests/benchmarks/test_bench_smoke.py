"""The benchmark runner cannot rot: a tiny-N run (``--quick``) must produce a complete, well-formed report.

The run is the session's one quick run (``quick_run`` in tests/benchmarks/bench_run.py), shared with
test_goldens_bench.py.

Only the shape is checked — every section, every table, every target stated as met
or missed, versions and machine named. The numbers themselves are never asserted:
a benchmark on a shared 2-core machine is not a test of speed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.bench]
pytest_plugins = ["bench_run"]  # its quick_run fixture: the session's one quick run

SECTIONS = ("calls", "scaling", "verify", "startup")
HEADINGS = (
    "# Benchmarks: what does Blackbox cost?",
    "## The machine",
    "## Summary",
    "## 1. A model call through each proxy (openai SDK)",
    "## 2. Scaling with run length",
    "## 3. Loading and verifying a large cassette",
    "## 4. Start-up",
    "## Reproducing",
)


def test_the_report_has_every_section_and_states_the_machine(quick_run: tuple[str, dict[str, Any], str]) -> None:
    report, _, _ = quick_run
    for heading in HEADINGS:
        assert heading in report, heading
    for label in ("CPU", "RAM", "Python", "mitmproxy", "openai SDK"):
        assert re.search(rf"^\| {re.escape(label)} \| \S", report, re.MULTILINE), label
    assert "Traceback" not in report


def test_every_variant_and_ratio_is_reported(quick_run: tuple[str, dict[str, Any], str]) -> None:
    report, data, _ = quick_run
    for label in ("(a) direct", "(b) mitmdump passthrough", "(c) mitmdump server_replay", "(d) blackbox replay", "(e) blackbox record"):
        assert report.count(label) >= 2, label  # in the sequential and the concurrent table at least
    calls = next(s for s in data["sections"] if s["key"] == "calls")["data"]
    assert set(calls["variants"]) == {"a", "b", "c", "d", "e"}
    for ratio in ("d/c", "d/b", "e/b"):
        for phase in ("seq", "conc"):
            assert calls["ratios"][ratio][phase]["median"] > 0


def test_every_target_is_met_or_missed_never_silently_absent(quick_run: tuple[str, dict[str, Any], str]) -> None:
    report, data, _ = quick_run
    assert [s["key"] for s in data["sections"]][: len(SECTIONS)] == list(SECTIONS)
    assert all(s["error"] is None for s in data["sections"])
    targets = [t for s in data["sections"] for t in s["targets"]]
    names = " ".join(t["name"] for t in targets)
    for fragment in ("server_replay", "passthrough", "last window / first window", "journal append", "peak memory"):
        assert fragment in names, fragment
    for fragment in ("#28: (d) replay ≤ 0.9", "#28: (e) recording", "#28: `blackbox replay", "agent-sized request", "#28: Responses"):
        assert fragment in names, fragment  # issue #28's targets
    for t in targets:
        assert isinstance(t["value"], float), t
        # A difference (an overhead, a cost above the small cassette's) may come out below zero on a busy machine.
        assert t["value"] > 0 or "overhead" in t["name"] or "small cassette)" in t["name"], t
        assert isinstance(t["met"], bool), t
    rows = [line for line in report.splitlines() if line.startswith("| ") and ("met (" in line or "**missed**" in line)]
    assert len(rows) == len(targets)


def test_the_report_states_its_commit_and_load_at_the_top(quick_run: tuple[str, dict[str, Any], str]) -> None:
    report, data, _ = quick_run
    head = report.split("## The machine")[0]
    assert f"Commit {data['machine']['commit']}" in head
    assert "machine load" in head and "at the start" in head and "at the end" in head


def test_the_agent_section_splits_the_cost_by_step(quick_run: tuple[str, dict[str, Any], str]) -> None:
    _, data, _ = quick_run
    (section,) = [s for s in data["sections"] if s["key"] == "agent"]
    assert section["error"] is None
    steps = " ".join(name for name, _ in section["data"]["split_s"])
    for step in ("decode", "mask", "canonicalize", "digest", "lookup", "encode", "warm digest"):
        assert step in steps, step
    assert section["data"]["sizes"][-1] > 100_000  # agent-sized: the last request is over 100 KB


def test_the_quick_run_cleans_up_after_itself(quick_run: tuple[str, dict[str, Any], str]) -> None:
    _, _, stderr = quick_run
    workdir = re.search(r"working in (\S+)", stderr)
    assert workdir is not None
    assert not Path(workdir.group(1)).exists()
    # Every process the run started (proxies, the provider, clients) named files in its working directory.
    left = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if workdir.group(1).encode() in cmdline.read_bytes():
                left.append(cmdline.parent.name)
        except OSError:
            continue
    assert not left, f"processes left running: {left}"


def test_the_big_run_section_compares_plain_gzip_and_zstd(quick_run: tuple[str, dict[str, Any], str]) -> None:
    report, data, _ = quick_run
    assert "## Big runs: a Claude Code-sized cassette plain, gzip and zstd" in report
    (section,) = [s for s in data["sections"] if s["key"] == "big_runs"]
    assert section["error"] is None
    files = section["data"]["files"]
    assert set(files) == {"plain", "gzip", "zstd"}
    assert files["zstd"]["bytes"] < files["plain"]["bytes"] and files["gzip"]["bytes"] < files["plain"]["bytes"]
    for form in ("plain", "gzip", "zstd"):
        assert f"| {form} (`RUN.json" in report, form
        (run,) = section["data"]["runs"][form]
        assert run["problems"] == 0 and run["steps"] == section["data"]["steps"]
        assert run["load_s"] > 0 and run["verify_s"] > 0 and run["startup_s"] > 0 and run["peak_ratio"] > 0
    assert {t["name"] for t in section["targets"]} >= {"big run (zstd): load + verify peak memory / plain file size"}
