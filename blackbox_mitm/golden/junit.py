"""The JUnit XML report of a golden run, in the shape Jenkins and GitLab read.

::

    <testsuites name="blackbox" tests failures errors time>
      <testsuite name="blackbox.golden" tests failures errors skipped="0" time timestamp>
        <testcase name="RUN-ID" classname="blackbox.golden" file="GOLDEN" time>
          <failure type="divergence|incomplete|overrun|exit|timeout" message="...">details</failure>
          <error type="error" message="...">details</error>
          <system-out>the last 64 KiB of stdout</system-out>
          <system-err>the last 64 KiB of stderr</system-err>

Built with ElementTree (which escapes), after removing what XML 1.0 cannot hold
at all: control characters other than tab, newline and carriage return, lone
surrogates, U+FFFE and U+FFFF. An agent's output is arbitrary bytes; a report
that a CI parser rejects would hide every result in it.
"""

from __future__ import annotations

import os
import re
import secrets
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from blackbox_mitm.golden.runner import GoldenResult, TailBuffer

__all__ = ["CLASSNAME", "SUITE_NAME", "build_junit", "junit_bytes", "stream_text", "write_junit", "xml_text"]

SUITE_NAME = "blackbox.golden"
CLASSNAME = "blackbox.golden"
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """``text`` without the characters XML 1.0 forbids (everything else is ElementTree's to escape)."""
    return _NOT_XML.sub("", text)


def stream_text(buf: TailBuffer) -> str:
    """A captured stream for system-out / system-err: its tail, saying how much came before it."""
    text = buf.text()
    if buf.dropped:
        text = f"[blackbox: {buf.dropped} earlier bytes of this stream were not kept; the last {len(buf.getvalue())} follow]\n" + text
    return xml_text(text)


def build_junit(results: Sequence[GoldenResult], *, duration: float | None = None, timestamp: datetime | None = None) -> ET.Element:
    """The ``<testsuites>`` element for ``results`` (in their order). ``duration`` defaults to the sum of the runs."""
    failures = sum(r.outcome == "failure" for r in results)
    errors = sum(r.outcome == "error" for r in results)
    total = sum(r.duration for r in results) if duration is None else duration
    when = (timestamp or datetime.now(UTC)).replace(microsecond=0, tzinfo=None).isoformat()
    counts = {"tests": str(len(results)), "failures": str(failures), "errors": str(errors)}
    root = ET.Element("testsuites", {"name": "blackbox", **counts, "time": _seconds(total)})
    suite = ET.SubElement(root, "testsuite", {"name": SUITE_NAME, **counts, "skipped": "0", "time": _seconds(total), "timestamp": when})
    seen = Counter(r.case.testcase_name for r in results)
    for result in results:
        name = result.case.testcase_name
        if seen[name] > 1:  # the same run golden twice: keep testcase names apart
            name = f"{name} [{result.case.path.name}]"
        case = ET.SubElement(
            suite,
            "testcase",
            {"name": xml_text(name), "classname": CLASSNAME, "file": xml_text(str(result.case.path)), "time": _seconds(result.duration)},
        )
        if result.outcome in ("failure", "error"):
            tag = "failure" if result.outcome == "failure" else "error"
            element = ET.SubElement(case, tag, {"type": result.kind or tag, "message": xml_text(result.message)})
            element.text = xml_text(result.details)
        if result.stdout.total:
            ET.SubElement(case, "system-out").text = stream_text(result.stdout)
        if result.stderr.total:
            ET.SubElement(case, "system-err").text = stream_text(result.stderr)
    return root


def junit_bytes(results: Sequence[GoldenResult], *, duration: float | None = None, timestamp: datetime | None = None) -> bytes:
    root = build_junit(results, duration=duration, timestamp=timestamp)
    ET.indent(root)
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"


def write_junit(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write the report atomically (a CI step reading it never sees half a file), creating its folder."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return target


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}"
