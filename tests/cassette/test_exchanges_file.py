"""The exchanges file beside a cassette: its name, the seal in the terminal event, and what verify says of it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from blackbox_mitm.cassette import save_trace
from blackbox_mitm.cassette.exchanges import exchanges_path, exchanges_ref, load_exchanges, write_exchanges
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.codecs.verified import load_verified, verify_file
from blackbox_mitm.errors import CassetteError
from blackbox_mitm.session.exchanges import ExchangeBook


def _run_with_exchanges(tmp_path: Path, name: str = "run.json") -> Path:
    cassette = tmp_path / name
    book = ExchangeBook()
    book.add(
        method="GET",
        url="https://docs.example.com/a",
        request_body=b"",
        status=200,
        headers={"content-type": "text/plain"},
        body=b"hi",
        started_ms=1,
    )
    document = book.document("run-1")
    write_exchanges(cassette, document)
    trace = Trace.new("run-1", created_at=1_700_000_000_000)
    trace.append(
        "metadata",
        {"event": "run_completed", "status": "success", "result": "", "exchanges": exchanges_ref(cassette, document)},
        timestamp=1_700_000_000_001,
    )
    save_trace(trace, cassette)
    return cassette


def test_the_file_is_named_after_the_cassette_and_compressed_like_it(tmp_path: Path) -> None:
    assert exchanges_path(tmp_path / "a.json").name == "a.exchanges.json"
    assert exchanges_path(tmp_path / "a.json.zst").name == "a.exchanges.json.zst"
    assert exchanges_path(tmp_path / "a.json.gz").name == "a.exchanges.json.gz"
    cassette = _run_with_exchanges(tmp_path, "z.json.zst")
    assert exchanges_path(cassette).read_bytes()[:4] == b"\x28\xb5\x2f\xfd"  # zstd
    assert verify_file(cassette).ok


def test_verify_passes_and_catches_a_changed_or_missing_exchanges_file(tmp_path: Path) -> None:
    cassette = _run_with_exchanges(tmp_path)
    assert verify_file(cassette).ok
    side = exchanges_path(cassette)
    side.write_text(side.read_text().replace('"hi"', '"ho"'))
    problems = verify_file(cassette).problems
    assert problems and problems[0].code == "exchanges" and "changed after recording" in problems[0].reason
    with pytest.raises(CassetteError, match="changed after recording"):
        load_verified(cassette)
    side.unlink()
    assert "keep it beside the cassette" in verify_file(cassette).problems[0].reason


def test_a_reader_that_predates_exchanges_still_verifies_every_step(tmp_path: Path) -> None:
    """The docs' Node rehash script (an implementation of the spec alone) checks the chain of a run with exchanges."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is needed (make test needs Node.js 20+)")
    cassette = _run_with_exchanges(tmp_path)
    script = tmp_path / "rehash.js"
    script.write_text(
        "const fs = require('fs'); const crypto = require('crypto');\n"
        "const sort = (v) => Array.isArray(v) ? v.map(sort) : v && typeof v === 'object' ? "
        "Object.fromEntries(Object.keys(v).sort().map((k) => [k, sort(v[k])])) : v;\n"
        "const t = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));\n"
        "if (t.version !== 2) throw new Error('version');\n"
        "const types = ['model_input', 'model_output', 'tool_call', 'tool_result', 'metadata'];\n"
        "let prev = null;\n"
        "for (const s of t.steps) { if (!types.includes(s.type)) throw new Error('type ' + s.type);\n"
        "  const input = { index: s.index, type: s.type, timestamp: s.timestamp, payload: s.payload, prevHash: s.prevHash };\n"
        "  const h = crypto.createHash('sha256').update(JSON.stringify(sort(input))).digest('hex');\n"
        "  if (h !== s.hash || s.prevHash !== prev) throw new Error('chain at ' + s.index); prev = s.hash; }\n"
        "console.log('ok', t.steps.length);\n"
    )
    out = subprocess.run([node, str(script), str(cassette)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok 1", out.stderr


def test_load_exchanges_returns_the_document(tmp_path: Path) -> None:
    cassette = _run_with_exchanges(tmp_path)
    ref = json.loads(cassette.read_text())["steps"][-1]["payload"]["exchanges"]
    assert ref["count"] == 1 and ref["file"] == "run.exchanges.json"
    assert load_exchanges(cassette, ref)["exchanges"][0]["path"] == "/a"


def test_a_golden_takes_its_exchanges_along_and_they_are_not_a_golden_themselves(tmp_path: Path) -> None:
    from blackbox_mitm.golden.suite import add_golden, collect, golden_paths

    cassette = _run_with_exchanges(tmp_path)
    goldens = tmp_path / "goldens"
    info = add_golden(cassette, goldens, name="fetch")
    assert (goldens / "run.exchanges.json").is_file()
    assert [p.name for p in golden_paths(goldens)] == ["fetch.json"]
    assert verify_file(goldens / "fetch.json").ok
    cases = collect(goldens)
    assert [(c.name, c.error) for c in cases] == [(info.name, None)]
