"""The page `blackbox view` writes, read as a file: self-contained, escaped, deduplicated, and saying what show/diff/forks say."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from view_big_run import claude_code_run
from view_runs import INJECTIONS, fork_of, injection_trace, make_runs, overlapping_trace, replay_report, save, weather_trace

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.cassette.diff import first_divergence
from blackbox_mitm.cassette.timeline import summarize_step
from blackbox_mitm.errors import CassetteError
from blackbox_mitm.view import build_page, page_data, write_page

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    return make_runs(tmp_path)


def embedded(page: bytes) -> dict[str, Any]:
    """The data the page carries, parsed back as the page's script parses it."""
    text = page.decode("utf-8")
    m = re.search(r'<script type="application/json" id="blackbox-data">(.*?)</script>', text, re.S)
    assert m is not None
    data: dict[str, Any] = json.loads(m.group(1))
    return data


def test_the_page_is_one_file_that_loads_nothing(runs: Path) -> None:
    page = build_page(runs / "weather.json")
    text = page.decode("utf-8")
    assert text.startswith("<!DOCTYPE html>\n<!-- blackbox view page -->")
    # No external anything: no src/href attributes, no URLs but the page's own text.
    assert not re.search(r"\s(src|href)\s*=", text, re.I)
    assert "http://" not in text and "https://" not in text
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', text)
    assert csp is not None and "default-src 'none'" in csp.group(1) and "connect-src 'none'" in csp.group(1)
    # The one script runs by its hash (inline event handlers cannot run at all).
    scripts = re.findall(r"<script>(.*?)</script>", text, re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode("utf-8")).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp.group(1)


def test_markup_in_a_prompt_cannot_close_the_data_element(tmp_path: Path) -> None:
    path = save(injection_trace(), tmp_path / "inject.json")
    text = build_page(path).decode("utf-8")
    data_start = text.index('id="blackbox-data">')
    data = text[data_start : text.index("</script>", data_start)]
    assert "<" not in data[len('id="blackbox-data">') :]  # every "<" is written \u003c
    assert text.count("</script>") == 2 and text.count("<script") == 2  # the data element and the page's script: no more
    assert "<img" not in text
    back = embedded(text.encode())
    assert back["runs"]["r0"]["steps"][3][4]["result"] == " ".join(INJECTIONS)  # shown exactly, once parsed


def test_header_figures_are_shows(runs: Path) -> None:
    data = page_data(runs / "sunny.json", forks=False)
    run = data["runs"]["r0"]
    assert run["id"] == "sunny-1"
    assert run["modelCalls"] == 2 and run["toolCalls"] == 1
    assert run["outcome"] == "ended: run completed"
    assert run["verify"] == {"ok": True, "problems": [], "count": 0}
    assert (run["parentId"], run["forkedFromStepId"], run["forkStep"]) == ("weather-1", "weather-1:3", 3)
    trace = load_trace(runs / "sunny.json")
    assert [s[3] for s in run["steps"]] == [summarize_step(s) for s in trace.steps]  # the summaries `blackbox show` prints


def test_a_tampered_run_says_its_chain_fails(runs: Path) -> None:
    raw = json.loads((runs / "weather.json").read_text())
    raw["steps"][5]["payload"]["text"] = "It is sunny."
    (runs / "weather.json").write_text(json.dumps(raw))
    run = page_data(runs / "weather.json", forks=False)["runs"]["r0"]
    assert run["verify"]["ok"] is False
    assert "step 5" in run["verify"]["problems"][0] and "does not match" in run["verify"]["problems"][0]


def test_model_calls_are_bars_from_request_to_answer(runs: Path) -> None:
    run = page_data(runs / "weather.json", forks=False)["runs"]["r0"]
    # weather_trace: createdAt T0, requests at +10 / +521, answers at +410 / +1100.
    assert run["calls"] == [[0, 1, 10, 410], [4, 5, 521, 1100]]


def test_overlapping_calls_keep_their_own_times(tmp_path: Path) -> None:
    path = save(overlapping_trace(), tmp_path / "overlap.json")
    run = page_data(path, forks=False)["runs"]["r0"]
    assert run["calls"] == [[0, 1, 300, 700], [2, 3, 100, 1100]]  # recorded side call first; the bars overlap in time


def test_repeated_texts_are_stored_once_and_the_new_turn_is_marked(tmp_path: Path) -> None:
    path = claude_code_run(tmp_path / "big.json", calls=12)
    data = page_data(path, forks=False)
    steps = data["runs"]["r0"]["steps"]
    inputs = [s[4] for s in steps if s[1] == "model_input" and s[4]["x"]["model"] == "claude-sonnet"]
    assert len({i["s"] for i in inputs}) == 1 and len({tuple(i["t"]) for i in inputs}) == 1  # one system prompt, one tool list
    pooled_messages = {r for i in inputs for r in i["m"]}
    assert len(pooled_messages) == len(inputs[-1]["m"])  # every history message once, however often it was sent
    assert [i["h"] for i in inputs] == [0] + [len(i["m"]) - 2 for i in inputs[1:]]  # each call's new turn: its last 2 messages
    # And every request is rebuilt exactly from the pool.
    trace = load_trace(path)
    by_index = {s[0]: s[4] for s in steps}
    for step in trace.steps:
        if step.type == "model_input":
            p = by_index[step.index]
            rebuilt = {**p.get("x", {}), "messages": [data["pool"][r] for r in p["m"]], "tools": [data["pool"][r] for r in p["t"]]}
            if "s" in p:
                rebuilt["systemPrompt"] = data["pool"][p["s"]]
            assert rebuilt == step.payload


def test_a_claude_code_sized_page_is_at_most_1_2_times_its_cassette(tmp_path: Path) -> None:
    path = claude_code_run(tmp_path / "big.json")
    size = path.stat().st_size
    assert size > 20_000_000  # tens of MB, as the issue asks
    page = write_page(path, tmp_path / "big.html")
    assert page.stat().st_size <= 1.2 * size
    data = embedded(page.read_bytes())
    assert data["runs"]["r0"]["modelCalls"] == 208 and len(data["runs"]["r0"]["steps"]) == len(load_trace(path).steps)


def test_the_diff_is_blackbox_diffs_with_the_character_located(runs: Path) -> None:
    data = page_data(runs / "weather.json", other=runs / "sunny.json", forks=False)
    d = first_divergence(load_trace(runs / "weather.json"), load_trace(runs / "sunny.json"))
    assert d is not None
    dv = data["diff"]["divergence"]
    assert (dv["index"], dv["kind"], dv["field"], dv["explanation"]) == (d.index, d.kind, d.field, d.explanation)
    assert d.field == "payload.result.celsius"
    assert dv["segments"] == ["result", "celsius"] and dv["atChar"] is None  # 12 against 24: the field, not a character
    # The other side shares the prefix: only its own steps are stored.
    assert data["runs"]["d1"]["shared"] == {"run": "r0", "count": 3}
    assert [s[0] for s in data["runs"]["d1"]["steps"]] == [3, 4, 5, 6]


def test_a_string_difference_is_located_to_the_character(tmp_path: Path) -> None:
    a = save(weather_trace("a-1", answer="It is raining in Paris, 12 °C."), tmp_path / "a.json")
    b = save(weather_trace("b-1", answer="It is raining in Paris, 14 °C."), tmp_path / "b.json")
    dv = page_data(a, other=b, forks=False)["diff"]["divergence"]
    assert dv["index"] == 5 and dv["field"] == "payload.text"
    assert dv["segments"] == ["text"] and dv["atChar"] == 25
    assert "differs at character 25" in dv["explanation"]


def test_forks_beside_the_run_are_embedded_with_their_cut_and_divergence(runs: Path) -> None:
    grandchild = fork_of(load_trace(runs / "sunny.json"), at=3, child_id="cloudy-1", result={"forecast": "cloudy"})
    save(grandchild, runs / "cloudy.json")
    data = page_data(runs / "weather.json")
    (fork,) = data["forks"]
    assert (fork["run"], fork["fork_step"], fork["outcome"]) == ("sunny-1", 3, "completed")
    assert fork["first_divergence"]["index"] == 3 and fork["first_divergence"]["kind"] == "input"
    assert data["runs"][fork["key"]]["id"] == "sunny-1"
    assert data["runs"][fork["key"]]["shared"] == {"run": "r0", "count": 3}
    (child,) = fork["children"]
    assert child["run"] == "cloudy-1" and data["runs"][child["key"]]["shared"]["run"] == fork["key"]
    assert data["skipped"] == []  # notes.json is some other JSON file, not a broken cassette


def test_a_replay_report_is_checked_and_kept(runs: Path, tmp_path: Path) -> None:
    status = replay_report(load_trace(runs / "weather.json"))
    report = tmp_path / "report.json"
    report.write_text(json.dumps(status))
    data = page_data(runs / "weather.json", report=report, forks=False)
    assert data["report"]["verdict"] == "diverged"
    assert data["report"]["first_divergence"]["step"] == 0
    assert data["report"]["first_divergence"]["difference"]["at_char"] == 22


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "no such report file"),
        ("{not json", "cannot read the report"),
        (json.dumps({"steps": []}), "not a replay report"),
        (json.dumps({"run": "other-1", "model_calls": 1, "divergences": 0}), "this report is of recorded run 'other-1', not 'weather-1'"),
    ],
)
def test_a_bad_report_is_a_named_error(runs: Path, tmp_path: Path, content: str | None, says: str) -> None:
    report = tmp_path / "report.json"
    if content is not None:
        report.write_text(content)
    with pytest.raises(CassetteError, match=re.escape(says)):
        page_data(runs / "weather.json", report=report)


def test_write_page_never_replaces_an_input_or_a_foreign_file(runs: Path) -> None:
    with pytest.raises(CassetteError, match="would overwrite an input file"):
        write_page(runs / "weather.json", runs / "weather.json")
    other = runs / "mine.html"
    other.write_text("<html>my own page</html>")
    with pytest.raises(CassetteError, match="is not a page `blackbox view` wrote"):
        write_page(runs / "weather.json", other)
    assert other.read_text() == "<html>my own page</html>"
    first = write_page(runs / "weather.json")
    assert first == runs / "weather.html"
    assert write_page(runs / "weather.json") == first  # a page it wrote is rewritten


def _blackbox(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "blackbox_mitm", *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_the_view_command_writes_the_page(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    proc = _blackbox("view", str(runs / "weather.json"), "-o", str(out), "--diff", str(runs / "sunny.json"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"wrote {out} (") and out.as_uri() in proc.stdout
    data = embedded(out.read_bytes())
    assert data["diff"]["divergence"]["index"] == 3 and data["forks"][0]["run"] == "sunny-1"


def test_the_view_command_names_a_missing_cassette(tmp_path: Path) -> None:
    proc = _blackbox("view", str(tmp_path / "nope.json"))
    assert proc.returncode == 2
    assert "no such file" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "nope.html").exists()


def test_the_view_package_imports_no_mitmproxy() -> None:
    code = (
        "import sys, blackbox_mitm.view, blackbox_mitm.view.model, blackbox_mitm.view.compare, blackbox_mitm.view.page\n"
        "print(sorted(n for n in sys.modules if n == 'mitmproxy' or n.startswith('mitmproxy.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_missing_chromium_fails_the_browser_tests_saying_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from view_browser import Browser

    monkeypatch.setenv("BLACKBOX_CHROMIUM", "/nonexistent/chromium")
    with pytest.raises(RuntimeError, match=r"chromium is missing \(/nonexistent/chromium\).*scripts/setup-browser"):
        Browser()
