"""`blackbox test --update` end to end: a changed agent, a fake provider, real proxies, the goldens on disk read back.

The agent's tool now reports other weather for Paris (golden_agents.py ``weather``): the Paris golden
diverges at its second model call; the fake provider, asked live, answers from the new tool result.
The Lyon golden still passes and must stay byte for byte as it was.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from conftest import blackbox, remote_args
from fake_provider import FakeProvider
from test_golden_e2e import QUESTIONS

from blackbox_mitm.cassette import load_trace

pytestmark = pytest.mark.e2e

HELPER = [sys.executable, str(Path(__file__).with_name("golden_agents.py"))]
CHANGED = [*HELPER, "weather", "paris", "sunny", "24", "{input}"]  # Paris is sunny now


@pytest.fixture(scope="module")
def recorded(weather_runs: dict[str, Path]) -> dict[str, Path]:
    """The Paris and Lyon runs, recorded once per session (tests/conftest.py): every test copies what it changes."""
    return weather_runs


def suite(tmp_path: Path, recorded: dict[str, Path]) -> Path:
    goldens = tmp_path / "goldens"
    goldens.mkdir()
    for name in QUESTIONS:
        shutil.copy(recorded[name], goldens / f"{name}.json")
    return goldens


def test_update_rewrites_the_diverging_golden_from_step_3_and_leaves_the_passing_one(
    tmp_path: Path, confdir: Path, recorded: dict[str, Path]
) -> None:
    goldens = suite(tmp_path, recorded)
    old = load_trace(goldens / "paris.json")
    lyon_bytes = (goldens / "lyon.json").read_bytes()
    with FakeProvider() as provider:
        junit = str(tmp_path / "j.xml")
        proc = blackbox(
            "test",
            "--confdir",
            str(confdir),
            "--goldens",
            str(goldens),
            "--junit",
            junit,
            "--update",
            *remote_args(provider.url),
            "--",
            *CHANGED,
        )
        live_calls = len(provider.requests)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert live_calls == 1  # only the call after the rewind point went to the provider
    assert "2 goldens: 1 passed and left as they were, 1 updated, 0 not updated" in proc.stdout

    assert (goldens / "lyon.json").read_bytes() == lyon_bytes  # passed: untouched
    kept = goldens / ".history" / f"paris.{old.id}.json"
    assert kept.read_bytes() == recorded["paris"].read_bytes()  # nothing lost: the old golden, as it was
    new = load_trace(goldens / "paris.json")
    assert new.parentId == old.id and new.id != old.id  # lineage: the old run is the parent
    assert [s.hash for s in new.steps[:2]] == [s.hash for s in old.steps[:2]]  # steps 0-1: the recording's own
    assert new.steps[2].payload == old.steps[2].payload  # the same tool call ...
    assert old.steps[3].payload["result"] == '{"city":"Paris","forecast":"cloudy","celsius":18}'
    assert new.steps[3].payload["result"] == '{"city":"Paris","forecast":"sunny","celsius":24}'  # ... from step 3 on, the new run
    assert new.steps[5].payload["text"] == "Paris: sunny, 24°C."
    assert new.steps[-1].payload["event"] == "run_completed"

    # The summary is `blackbox diff` of the two: where they part and how each goes on.
    assert f"the old golden is kept as {kept}" in proc.stdout
    assert f"a: {kept} (run {old.id}, 7 steps)" in proc.stdout
    assert "Ignoring time, the runs first differ at step 3 (tool_result get_weather)" in proc.stdout

    # The updated suite now passes offline, and `blackbox forks` finds the new golden as the old one's fork.
    again = blackbox("test", "--confdir", str(confdir), "--goldens", str(goldens), "--junit", junit, "--", *CHANGED)
    assert again.returncode == 0, again.stdout + again.stderr
    forks = blackbox("forks", str(kept), str(goldens), "--json", check=True)
    assert new.id in forks.stdout


def test_update_is_refused_in_ci_unless_asked_for(tmp_path: Path, confdir: Path, recorded: dict[str, Path]) -> None:
    goldens = suite(tmp_path, recorded)
    before = {p.name: p.read_bytes() for p in goldens.iterdir()}
    proc = blackbox("test", "--confdir", str(confdir), "--goldens", str(goldens), "--update", "--", *CHANGED, env={"CI": "true"})
    assert proc.returncode == 2
    assert "CI is set: updating goldens in CI is refused" in proc.stderr and "--update=ci" in proc.stderr
    assert {p.name: p.read_bytes() for p in goldens.iterdir()} == before

    with FakeProvider() as provider:
        ci = blackbox(
            "test", "--confdir", str(confdir), "--goldens", str(goldens), "--update=ci", *remote_args(provider.url), "--", *CHANGED,
            env={"CI": "true"},
        )  # fmt: skip
    assert ci.returncode == 0, ci.stderr
    assert load_trace(goldens / "paris.json").parentId == load_trace(recorded["paris"]).id


def test_a_golden_whose_live_rerun_fails_is_left_as_it_was(tmp_path: Path, confdir: Path, recorded: dict[str, Path]) -> None:
    goldens = suite(tmp_path, recorded)
    before = (goldens / "paris.json").read_bytes()
    with FakeProvider(script=[{"status": 500, "times": 5}]) as provider:  # the provider fails every live call
        proc = blackbox(
            "test", "--confdir", str(confdir), "--goldens", str(goldens), "--update", *remote_args(provider.url), "--", *CHANGED
        )
    assert proc.returncode == 1
    assert "1 updated" not in proc.stderr and "0 updated, 1 not updated" in proc.stderr
    assert "paris: not updated" in proc.stderr
    assert (goldens / "paris.json").read_bytes() == before
    assert not (goldens / ".history").exists()
