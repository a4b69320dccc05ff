"""Shards are stable and complete; merged JUnit sums the shards."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from blackbox_mitm.golden.shards import ShardError, in_shard, merge_junit, parse_shard


def test_every_name_is_in_exactly_one_shard_and_stays_there() -> None:
    names = [f"golden-{i}" for i in range(200)]
    for n in (1, 2, 3, 4, 7):
        owners = [[k for k in range(1, n + 1) if in_shard(name, k, n)] for name in names]
        assert all(len(o) == 1 for o in owners)
        if n == 4:
            sizes = [sum(o == [k] for o in owners) for k in range(1, 5)]
            assert min(sizes) > 30  # roughly even
    assert [in_shard("weather", k, 4) for k in range(1, 5)] == [in_shard("weather", k, 4) for k in range(1, 5)]


@pytest.mark.parametrize("bad", ["0/4", "5/4", "2", "a/b", "1/0", "-1/3"])
def test_a_shard_must_be_k_of_n(bad: str) -> None:
    with pytest.raises(ShardError):
        parse_shard(bad)


def test_merged_junit_keeps_every_case_and_sums_the_counts(tmp_path: Path) -> None:
    for i, (tests, failures) in enumerate([(3, 1), (2, 0)]):
        cases = "".join(f'<testcase name="g{i}-{j}"/>' for j in range(tests))
        (tmp_path / f"s{i}.xml").write_text(
            f'<testsuites><testsuite name="goldens" tests="{tests}" failures="{failures}" errors="0" time="1.5">{cases}</testsuite></testsuites>'
        )
    root = ET.fromstring(merge_junit([tmp_path / "s0.xml", tmp_path / "s1.xml"]))
    assert root.get("tests") == "5" and root.get("failures") == "1" and root.get("time") == "3.000"
    assert len(root.findall(".//testcase")) == 5


def test_an_unreadable_report_is_named(tmp_path: Path) -> None:
    (tmp_path / "bad.xml").write_text("<testsuites>")
    with pytest.raises(ShardError, match=r"bad\.xml"):
        merge_junit([tmp_path / "bad.xml"])
