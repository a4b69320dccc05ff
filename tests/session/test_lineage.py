"""``session/lineage``: a run's forks found in a folder, each summarized and diffed against its parent."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mcp_server"))  # the blackbox mcp tests' folder of runs
from mcp_runs import make_folder

from blackbox_mitm.errors import CassetteError
from blackbox_mitm.session.lineage import list_forks, render_forks, run_summary


def test_the_forks_of_a_run_newest_first_with_their_cut_and_first_divergence(tmp_path: Path) -> None:
    runs = make_folder(tmp_path)
    listing = list_forks(runs / "weather.json")
    assert listing["run"] == "weather-1"
    assert [f["run"] for f in listing["forks"]] == ["snowy-1", "sunny-1"]  # newest first; other runs are not forks
    snowy, sunny = listing["forks"]
    assert (sunny["fork_step"], sunny["outcome"], sunny["diverged_before_cut"]) == (3, "completed", False)
    assert (snowy["fork_step"], snowy["diverged_before_cut"]) == (5, True)  # parted at step 3, cut at 5
    assert snowy["first_divergence"] is not None
    assert snowy["first_divergence"]["index"] == 3 and "celsius" in snowy["first_divergence"]["explanation"]
    assert sunny["delta"]["steps"] == sunny["steps"] - listing["parent"]["steps"]
    assert listing["skipped"] == []  # notes.json is some other JSON file, not a cassette: left out silently
    text = render_forks(listing)
    assert text.splitlines()[0].startswith("run weather-1: ")
    assert "  fork sunny-1 (" in text and "    cut at step 3; completed;" in text
    assert "; DIVERGED BEFORE THE CUT" in text  # snowy


def test_only_the_files_given_are_looked_at_and_a_broken_cassette_is_listed_as_skipped(tmp_path: Path) -> None:
    runs = make_folder(tmp_path)
    only = list_forks(runs / "weather.json", files=[runs / "sunny.json"])
    assert [f["run"] for f in only["forks"]] == ["sunny-1"]
    (runs / "cut.json").write_text((runs / "sunny.json").read_text()[:-40])
    listing = list_forks(runs / "weather.json")
    assert [s["file"] for s in listing["skipped"]] == [str(runs / "cut.json")]
    assert f"  skipped {runs / 'cut.json'}: " in render_forks(listing)


def test_a_run_without_forks_and_a_folder_that_is_not_one(tmp_path: Path) -> None:
    runs = make_folder(tmp_path)
    lone = list_forks(runs / "long.json")
    assert lone["forks"] == [] and "  no forks found" in render_forks(lone)
    with pytest.raises(CassetteError, match="not a folder"):
        list_forks(runs / "weather.json", tmp_path / "nowhere")


def test_a_run_summary_counts_its_errors_and_says_how_it_ended(tmp_path: Path) -> None:
    from blackbox_mitm.cassette import Trace

    trace = Trace.new("failing-1", created_at=1_000)
    trace.append("model_input", {"messages": [{"role": "user", "content": "go"}], "tools": []}, timestamp=1_001)
    trace.append("tool_result", {"toolCallId": "call-0", "toolName": "t", "error": "boom"}, timestamp=1_002)
    assert run_summary(trace)["outcome"] == "unfinished"
    trace.append("metadata", {"event": "run_failed", "reason": "exit", "exitCode": 3}, timestamp=1_003)
    summary = run_summary(trace, tmp_path / "f.json")
    assert (summary["errors"], summary["outcome"], summary["file"]) == (2, "failed (exit, exit 3)", str(tmp_path / "f.json"))
