"""Files that are not what their names say get a named error and exit 2, never a traceback or silence.

* a ``blackbox.toml`` that is not UTF-8 (saved as UTF-16: it begins ``FF FE``), for every command that reads the config;
* a ``blackbox.toml`` that is a directory: said to be no file, not silently skipped;
* a ``.json.gz`` compressed twice (or a zstd stream inside a gzip one): the decompressed content is said to be another stream.

Each case runs the real ``blackbox`` program (a process per command), so the file is marked e2e, as
tests/cli/test_cli_e2e.py is: ``make test`` runs it, ``make test-fast`` does not.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard
from conftest import ROOT

pytestmark = pytest.mark.e2e

GOOD = ROOT / "tests" / "fixtures" / "cassettes" / "js_weather.json"


def blackbox(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "BLACKBOX_CONFIG"}
    return subprocess.run([sys.executable, "-m", "blackbox_mitm", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


READS_CONFIG = [
    ["config"],
    ["record", "-o", "x.json", "--", "true"],
    ["replay", str(GOOD), "--", "true"],
    ["fork", str(GOOD), "--at", "3", "--tool-result", "{}", "-o", "f.json", "--", "true"],
    ["test", "--", "true"],
]


@pytest.mark.parametrize("args", READS_CONFIG, ids=lambda a: a[0])
def test_a_config_saved_as_utf16_is_a_named_error(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "blackbox.toml").write_bytes('match = "strict"\n'.encode("utf-16"))  # BOM FF FE, then UTF-16-LE
    assert (tmp_path / "blackbox.toml").read_bytes()[:2] == b"\xff\xfe"
    done = blackbox(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{tmp_path / 'blackbox.toml'}: not UTF-8 text" in done.stderr
    assert "UTF-16 byte order mark" in done.stderr and "BLACKBOX_CONFIG=" in done.stderr


def test_a_config_that_is_a_directory_is_said_to_be_no_file(tmp_path: Path) -> None:
    (tmp_path / "blackbox.toml").mkdir()
    done = blackbox("config", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{tmp_path / 'blackbox.toml'}: is not a file (a directory)" in done.stderr
    named = subprocess.run(
        [sys.executable, "-m", "blackbox_mitm", "config"],
        cwd=ROOT,
        env={**os.environ, "BLACKBOX_CONFIG": str(tmp_path / "blackbox.toml")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert named.returncode == 2 and "is a directory, not a file" in named.stderr


@pytest.mark.parametrize("inner", ["gzip", "zstd"])
def test_a_cassette_compressed_twice_says_what_its_content_looks_like(tmp_path: Path, inner: str) -> None:
    once = gzip.compress(GOOD.read_bytes()) if inner == "gzip" else zstandard.ZstdCompressor().compress(GOOD.read_bytes())
    twice = tmp_path / "run.json.gz"
    twice.write_bytes(gzip.compress(once))
    for args in (["verify", str(twice)], ["show", str(twice)], ["decompress", str(twice), "-o", str(tmp_path / "out.json")]):
        done = blackbox(*args, cwd=tmp_path)
        out = done.stdout + done.stderr
        assert done.returncode == 2, (args, out)
        assert "Traceback" not in out and "surrogates" not in out
        assert f"the decompressed content is not JSON: it looks like another {inner} stream" in out, (args, out)
        assert "compressed twice" in out and str(twice) in out
