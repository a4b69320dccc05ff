"""Every command that reads a cassette stops a decompression bomb at the size cap, with the same named error.

A bomb here is a cassette header and then whitespace (so a reader that looks for
the next step keeps reading): one compressed 16 MiB member repeated, cheap to
make, decompressing to twice the cap. The cap is lowered to 128 MiB through
``BLACKBOX_MAX_CASSETTE_BYTES`` (the documented way to move it) to keep the test
cheap; a reader whose cost grew with the square of what it read (as ``show``'s
did) still runs past the timeout at this size. Each command runs as a real
process under a generous timeout: a hang fails the test, a slow machine does not.
The two bomb runs are marked e2e (a dozen real processes each reading 256 MiB:
most of ``make test-fast``'s CPU), so ``make test`` runs them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
import zstandard
from conftest import ROOT

CAP = 128 << 20
LISTINGS = {"golden list": 0, "test": 1}
GOOD = ROOT / "tests" / "fixtures" / "cassettes" / "js_weather.json"
_HEAD = b'{"version": 2, "id": "bomb", "createdAt": 0, "steps": [{"id": "bomb:0", "index": 0, '
_FILL = b" " * (16 << 20)


def _gzip(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def make_bomb(path: Path, expands_to: int = 2 * CAP) -> Path:
    """A ``.json.gz`` or ``.json.zst`` of a cassette header and ``expands_to`` bytes of spaces (members concatenated)."""
    pack = _gzip if path.name.endswith(".gz") else zstandard.ZstdCompressor(level=3).compress
    fill = pack(_FILL)
    path.write_bytes(pack(_HEAD) + fill * (expands_to // len(_FILL)))
    return path


def _commands(bomb: Path, tmp: Path) -> dict[str, list[str]]:
    """Every command that reads a cassette, pointed at the bomb (or a folder holding it)."""
    folder = tmp / "goldens"
    folder.mkdir()
    (folder / bomb.name).write_bytes(bomb.read_bytes())
    good = GOOD
    journal = tmp / journal_name(bomb)  # an interrupted recording's journal, a bomb
    journal.write_bytes(bomb.read_bytes())
    agent = [sys.executable, "-c", "pass"]
    return {
        "show": ["show", str(bomb)],
        "verify": ["verify", str(bomb)],
        "view": ["view", str(bomb), "-o", str(tmp / "page.html")],
        "diff": ["diff", str(good), str(bomb)],
        "replay": ["replay", str(bomb), "--", *agent],
        "fork": ["fork", str(bomb), "--at", "0", "--tool-result", "{}", "-o", str(tmp / "f.json"), "--", *agent],
        "forks": ["forks", str(bomb), str(tmp)],
        "decompress": ["decompress", str(bomb), "-o", str(tmp / "plain.json")],
        "compress": ["compress", str(bomb), "-o", str(tmp / "again.json.gz")],
        "recover": ["recover", str(journal.with_name(journal.name.removesuffix(".journal")))],
        "proxy": ["proxy", "--mode", "replay", "--cassette", str(bomb), "--listen-port", "0"],
        "golden add": ["golden", "add", str(bomb), "--goldens", str(tmp / "suite")],
        "golden list": ["golden", "list", "--goldens", str(folder)],
        "test": ["test", "--goldens", str(folder), "--", *agent],
    }


def journal_name(bomb: Path) -> str:
    return f"cut{bomb.name.removeprefix('bomb')}.journal"


@pytest.mark.e2e
@pytest.mark.parametrize("suffix", [".json.gz", ".json.zst"])
def test_every_reader_stops_a_bomb_at_the_cap(tmp_path: Path, suffix: str) -> None:
    bomb = make_bomb(tmp_path / f"bomb{suffix}")
    assert bomb.stat().st_size < 2 << 20  # a small file ...
    env = {**os.environ, "BLACKBOX_MAX_CASSETTE_BYTES": str(CAP)}
    kind = "gzip" if suffix == ".json.gz" else "zstd"
    said = f"the {kind} data decompresses to more than the {CAP:,} bytes a reader accepts"
    for name, args in _commands(bomb, tmp_path).items():
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "blackbox_mitm", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"`blackbox {name}` on a {kind} bomb ran past 120 s")
        out = proc.stdout + proc.stderr
        assert "Traceback" not in out, (name, out)
        assert said in out, (name, out)  # ... named, with the limit ...
        assert "BLACKBOX_MAX_CASSETTE_BYTES" in out, (name, out)  # ... and how to raise it
        assert (journal_name(bomb) if name == "recover" else bomb.name) in out, (name, out)
        # A command given the file exits 2; `golden list` lists it as an ERROR row (0), `test` as an errored golden (1).
        assert proc.returncode == LISTINGS.get(name, 2), (name, proc.returncode, out)
