"""`blackbox verify FILE`: peak memory of verifying a ~40 MB Claude Code-shaped cassette, step by step and whole.

The cassette is made up (``tests/view/view_big_run.py``, the run ``big_runs``
uses): model calls that each re-send ~32 KB of tool definitions, a ~7 KB
system prompt and a history that grows by a tool round per call. Each
measurement runs in a fresh process, so its peak resident memory (``VmHWM``,
less the RSS after imports) is its own:

* ``whole`` — what ``verify_file`` did before: decode the whole file, parse the
  whole document, build the trace, verify it against the file's bytes;
* ``stepwise`` — ``verify_file`` now: the step-at-a-time reader, then the same checks;
* ``cli`` — the ``blackbox verify FILE`` process itself, its peak RSS against the
  peak of ``blackbox verify`` on a one-step file (the interpreter and imports).

    python -m benchmarks.verify_file_memory [--calls N]     # prints a table (N=165: about 43 MB)

A measurement, not a test: nothing here passes or fails on a number.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import PYTHON, ROOT
from benchmarks.verify_load import _memory_bytes

sys.path.insert(0, str(ROOT / "tests" / "view"))


def child(mode: str, path: Path) -> dict[str, Any]:
    import blackbox_mitm.codecs  # noqa: F401  (registers the provider facts verify checks)
    from blackbox_mitm.cassette import compression
    from blackbox_mitm.cassette.jsonfile import read_file
    from blackbox_mitm.cassette.store import parse_document, trace_from_json
    from blackbox_mitm.codecs.verified import verify_file, verify_trace

    base = _memory_bytes("VmRSS")
    if mode == "whole":
        raw = compression.decode(path, read_file(path))
        trace = trace_from_json(parse_document(raw, path=str(path)), path=str(path))
        problems = [str(p) for p in verify_trace(trace, source=raw)]
    else:
        problems = [str(p) for p in verify_file(path).problems]
    return {"peak": _memory_bytes("VmHWM") - base, "problems": problems}


def _cli_peak(path: Path) -> int:
    """The peak RSS (bytes) of a `blackbox verify FILE` process, from GNU time's %M."""
    out = subprocess.run(
        ["/usr/bin/time", "-f", "%M", PYTHON, "-m", "blackbox_mitm", "verify", str(path)], capture_output=True, text=True, cwd=ROOT
    )
    return int(out.stderr.strip().splitlines()[-1]) * 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs=2, metavar=("MODE", "FILE"))
    parser.add_argument("--calls", type=int, default=165)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]))))
        return 0
    from view_big_run import claude_code_run

    from blackbox_mitm.cassette.store import save_trace
    from blackbox_mitm.cassette.trace import Trace

    with tempfile.TemporaryDirectory() as tmp:
        path = claude_code_run(Path(tmp) / "big.json", calls=args.calls)
        small = Trace.new("small", created_at=1)
        small.append("metadata", {"event": "run_completed", "status": "success"}, timestamp=2)
        tiny = save_trace(small, Path(tmp) / "tiny.json")
        size = path.stat().st_size
        rows = {}
        for mode in ("whole", "stepwise"):
            proc = subprocess.run(
                [PYTHON, "-m", "benchmarks.verify_file_memory", "--child", mode, str(path)], capture_output=True, text=True, cwd=ROOT
            )
            if proc.returncode != 0:
                raise SystemExit(proc.stderr[-2000:])
            rows[mode] = json.loads(proc.stdout)
        if rows["whole"]["problems"] != rows["stepwise"]["problems"]:
            raise SystemExit("the two paths disagree")
        cli = _cli_peak(path) - _cli_peak(tiny)
        print(f"cassette: {args.calls} calls, {size / 1e6:.1f} MB, problems: {len(rows['stepwise']['problems'])}")
        print("| path | peak memory over imports | / file size |")
        print("|---|---|---|")
        for mode in ("whole", "stepwise"):
            print(f"| verify_file, {mode} | {rows[mode]['peak'] / 1e6:.0f} MB | {rows[mode]['peak'] / size:.2f}x |")
        print(f"| `blackbox verify FILE` (process peak less a one-step verify's) | {cli / 1e6:.0f} MB | {cli / size:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
