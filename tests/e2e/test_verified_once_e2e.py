"""End to end: `blackbox replay` verifies a cassette's bytes once, and still refuses a tampered copy (real proxy processes).

The weather agent's Paris run (recorded once for the session) is replayed twice with a cache folder of this test's
own: the first replay verifies it and leaves one entry, the second serves it with the same result. A copy with one
recorded number changed (the hash chain no longer holds) is then refused by `replay` before the agent runs, and
`blackbox verify` names the step — a cache that holds the original's answer never vouches for other bytes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import WEATHER_AGENT, WEATHER_ANSWERS, WEATHER_QUESTIONS, blackbox

pytestmark = pytest.mark.e2e


def _replay(cassette: Path, confdir: Path, cache: Path) -> tuple[int, str, str]:
    proc = blackbox(
        "replay",
        str(cassette),
        "--confdir",
        str(confdir),
        "--",
        *WEATHER_AGENT,
        WEATHER_QUESTIONS["paris"],
        env={"BLACKBOX_CACHE_DIR": str(cache)},
    )
    return proc.returncode, proc.stdout, proc.stderr


def test_a_replay_verifies_the_bytes_once_and_refuses_a_tampered_copy(weather_runs: dict[str, Path], confdir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run = shutil.copy(weather_runs["paris"], tmp_path / "paris.json")
    for _ in range(2):
        code, out, err = _replay(Path(run), confdir, cache)
        assert code == 0, err
        assert WEATHER_ANSWERS["paris"] in out
        assert "no divergence" in err
    entries = [p for p in cache.rglob("*") if p.is_file()]
    assert len(entries) == 1 and entries[0].parent.parent.name == "verified"

    data = json.loads(Path(run).read_text(encoding="utf-8"))
    changed = next(i for i, s in enumerate(data["steps"]) if s["type"] == "tool_result")
    data["steps"][changed]["payload"]["result"] = {"forecast": "sun", "celsius": 30}
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(data, indent=2), encoding="utf-8")
    code, out, err = _replay(tampered, confdir, cache)
    assert code == 2, err
    assert "does not verify" in err and f"step {changed}" in err
    assert WEATHER_ANSWERS["paris"] not in out  # refused before the agent ran
    assert len([p for p in cache.rglob("*") if p.is_file()]) == 1  # nothing remembered for the tampered bytes
    verify = blackbox("verify", str(tampered), env={"BLACKBOX_CACHE_DIR": str(cache)})
    assert verify.returncode == 1 and f"step {changed}" in verify.stdout + verify.stderr
