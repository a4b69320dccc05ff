"""Spreading a golden suite over CI machines: stable shards by name, and merging their JUnit reports.

``blackbox test --shard K/N`` runs the goldens whose name hashes to shard K of N
(SHA-256 of the name, so a golden stays in its shard whatever else is added or
removed, on every machine and Python); ``blackbox junit merge`` joins the shards'
reports into one ``<testsuites>`` with summed counts, which CI systems read like
any other JUnit file.
"""

from __future__ import annotations

import hashlib
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from blackbox_mitm.errors import ShardError
from blackbox_mitm.golden.suite import GoldenCase

__all__ = ["ShardError", "in_shard", "merge_junit", "parse_shard", "shard_cases"]

_SHARD = re.compile(r"([1-9][0-9]*)/([1-9][0-9]*)")
_COUNTS = ("tests", "failures", "errors", "skipped")


def parse_shard(text: str) -> tuple[int, int]:
    m = _SHARD.fullmatch(text.strip())
    if not m or int(m[1]) > int(m[2]):
        raise ShardError(f"--shard {text!r} is not K/N with 1 <= K <= N", hint="for example --shard 2/4 runs the second quarter")
    return int(m[1]), int(m[2])


def in_shard(name: str, k: int, n: int) -> bool:
    """Whether the golden ``name`` belongs to shard ``k`` of ``n`` (1-based)."""
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % n == k - 1


def shard_cases(cases: Sequence[GoldenCase], k: int, n: int) -> list[GoldenCase]:
    return [c for c in cases if in_shard(c.testcase_name, k, n)]


def merge_junit(paths: Sequence[Path]) -> bytes:
    """One ``<testsuites>`` holding every suite of ``paths``, its counts and time summed."""
    root = ET.Element("testsuites", {"name": "blackbox"})
    totals = dict.fromkeys(_COUNTS, 0)
    seconds = 0.0
    for path in paths:
        try:
            tree = ET.parse(path)
        except (OSError, ET.ParseError) as exc:
            raise ShardError(
                f"{path}: cannot read this JUnit report ({exc})", hint="check the path; each shard writes its own --junit"
            ) from exc
        top = tree.getroot()
        suites = [top] if top.tag == "testsuite" else list(top.iter("testsuite"))
        for suite in suites:
            root.append(suite)
            for key in _COUNTS:
                totals[key] += int(suite.get(key) or 0)
            seconds += float(suite.get("time") or 0)
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{seconds:.3f}")
    ET.indent(root)
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"
