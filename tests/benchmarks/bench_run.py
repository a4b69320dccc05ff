"""One ``benchmarks/run.py --quick`` run a test session, read by every benchmark smoke test (both modules).

The quick run is the suite's longest single item (every section's proxies, fakes and
agents): it is made once, in a folder every xdist worker of the session shares
(tests/once.py), under a file lock. The first worker to ask runs it; any other waits
for it and reads the same report, JSON and stderr (``--dist worksteal`` may hand a module's
tests to several workers), so the run is never repeated in one session. Both test modules
load this file as a plugin (``pytest_plugins``): one fixture, whichever module asks first.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from once import once, session_folder

ROOT = Path(__file__).resolve().parents[2]

QuickRun = tuple[str, dict[str, Any], str]


def _run(out: Path) -> None:
    report, data = out / "benchmarks.md", out / "benchmarks.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--write", str(report), "--json", str(data)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    (out / "stderr.txt").write_text(proc.stderr, encoding="utf-8")
    (out / "returncode").write_text(str(proc.returncode), encoding="utf-8")


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> QuickRun:
    """(the markdown report, the JSON figures, the run's stderr) of the session's one quick run; it must have exited 0."""
    out = session_folder(tmp_path_factory, "bench-quick-run")
    once(out, "quick-run", lambda: _run(out))  # its outcome is in its files, a failed run's too: never run twice
    stderr = (out / "stderr.txt").read_text(encoding="utf-8")
    assert (out / "returncode").read_text() == "0", f"the quick benchmark run failed:\n{stderr[-6000:]}"
    report = (out / "benchmarks.md").read_text(encoding="utf-8")
    return report, json.loads((out / "benchmarks.json").read_text(encoding="utf-8")), stderr
