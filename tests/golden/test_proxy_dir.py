"""`blackbox proxy --cassette-dir`: one real proxy process shared by two agent processes, each its own run.

Like two containers pointed at one proxy: a Python agent (the openai SDK) and a
Node agent (the openai npm package through the Node preload) differ only in the
run their HTTPS_PROXY names. Both are recorded through one `blackbox proxy`
process into one folder, then replayed through another with the provider gone;
clients naming no run or an unknown one are refused on their own.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT, free_port, remote_args, wait_for_port
from fake_provider import FakeProvider

from blackbox_mitm.codecs.verified import load_verified
from blackbox_mitm.proxy.environment import client_env

pytestmark = pytest.mark.e2e

AGENTS = {
    "run-py": [sys.executable, str(EXAMPLES / "openai_weather_agent.py"), "What's the weather in Paris?"],
    "run-node": ["node", str(EXAMPLES / "node" / "weather_agent.js"), "What's the weather in Lyon?"],
}
ANSWERS = {"run-py": "Paris: cloudy, 18°C.", "run-node": "Lyon: rain, 15°C."}


def start_proxy(mode: str, folder: Path, confdir: Path, *extra: str) -> tuple[subprocess.Popen[str], int]:
    port = free_port()
    argv = [sys.executable, "-m", "blackbox_mitm", "proxy", "--mode", mode, "--cassette-dir", str(folder)]
    argv += ["--listen-port", str(port), "--confdir", str(confdir), *extra]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    wait_for_port(proc, port)
    return proc, port


def stop_proxy(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return err


def agent(run: str | None, port: int, confdir: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    url = f"http://{run}@127.0.0.1:{port}" if run else f"http://127.0.0.1:{port}"
    base = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    base["OPENAI_API_KEY"] = "sk-test-not-a-real-key-000"
    return subprocess.run(argv, env=client_env(url, confdir=confdir, base=base), capture_output=True, text=True, timeout=120)


def run_both(port: int, confdir: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    """Both agents at once, as two containers would be."""
    procs = {}
    for run, argv in AGENTS.items():
        url = f"http://{run}@127.0.0.1:{port}"
        base = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        base["OPENAI_API_KEY"] = "sk-test-not-a-real-key-000"
        env = client_env(url, confdir=confdir, base=base)
        procs[run] = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    done = {}
    for run, p in procs.items():
        out, err = p.communicate(timeout=120)
        done[run] = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    return done


def test_two_agents_share_one_proxy_process_each_with_its_own_cassette(tmp_path: Path, confdir: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    with FakeProvider() as provider:
        proc, port = start_proxy("record", folder, confdir, *remote_args(provider.url))
        recorded = run_both(port, confdir)
        err = stop_proxy(proc)
    for run, result in recorded.items():
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == ANSWERS[run]
        trace = load_verified(folder / f"{run}.json")
        assert trace.id == run
        assert f"blackbox: run {run}: recorded {folder / f'{run}.json'} — 2 model calls" in err

    # Replay, the provider gone: both at once, and two clients that name no run it can serve.
    proc, port = start_proxy("replay", folder, confdir)
    replayed = run_both(port, confdir)
    nobody = agent(None, port, confdir, AGENTS["run-py"])
    unknown = agent("run-z", port, confdir, AGENTS["run-py"])
    err = stop_proxy(proc)
    for run, result in replayed.items():
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == ANSWERS[run]
        assert f"blackbox: run {run}: ok — 2 of 2 recorded model calls served; report {folder / f'{run}.report.json'}" in err
        report_path = folder / f"{run}.report.json"
        assert stat.S_IMODE(report_path.stat().st_mode) == 0o600
        report = json.loads(report_path.read_text())
        assert (report["run"], report["verdict"], report["model_calls_served"]) == (run, "ok", 2)
    # Each refused with a provider-shaped error saying what it sent; neither got a cassette.
    assert nobody.returncode != 0 and "named none" in nobody.stderr and "HTTPS_PROXY=http://<run>@" in nobody.stderr
    assert unknown.returncode != 0 and "'run-z'" in unknown.stderr and "no cassette" in unknown.stderr
    assert "blackbox: run run-z: not served" in err
    assert not (folder / "run-z.report.json").exists()
    assert sorted(p.name for p in folder.iterdir()) == sorted([*(f"{r}.json" for r in AGENTS), *(f"{r}.report.json" for r in AGENTS)])


def test_cassette_and_cassette_dir_are_one_or_the_other(tmp_path: Path, confdir: Path) -> None:
    base = [sys.executable, "-m", "blackbox_mitm", "proxy", "--mode", "replay", "--confdir", str(confdir)]
    both = subprocess.run([*base, "--cassette", "x.json", "--cassette-dir", str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    neither = subprocess.run(base, capture_output=True, text=True, cwd=ROOT)
    missing = subprocess.run([*base, "--cassette-dir", str(tmp_path / "nowhere")], capture_output=True, text=True, cwd=ROOT)
    report = subprocess.run([*base, "--cassette-dir", str(tmp_path), "--report", "r.json"], capture_output=True, text=True, cwd=ROOT)
    assert report.returncode == 2 and "DIR/<run>.report.json" in report.stderr
    for proc in (both, neither):
        assert proc.returncode == 2
        assert "either --cassette FILE (one run) or --cassette-dir DIR" in proc.stderr
    assert missing.returncode != 0
    assert "nowhere: not a directory" in missing.stderr and "Traceback" not in missing.stderr


# Every ending of a file Blackbox writes beside a cassette, as the end of a run name.
SUFFIXES = ["report", "report.json", "json", "journal", "json.journal", "gz", "zst", "json.gz", "json.zst", "html", "tmp", "blackbox.toml"]

ONE_CALL_PER_RUN = """
import json, os, sys, openai
port, runs = sys.argv[1], json.loads(sys.argv[2])
for run in runs:
    for name in ("HTTPS_PROXY", "https_proxy"):  # the SDK's client reads it when it is made
        os.environ[name] = f"http://{run}@127.0.0.1:{port}"
    client = openai.OpenAI(api_key="sk-test-not-a-real-key-000", max_retries=0)
    try:
        r = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": f"hello from {run}"}])
        print(run, "ok", r.choices[0].message.content)
    except openai.APIStatusError as exc:
        print(run, "refused", exc.status_code, exc.message)
"""


def one_call_per_run(port: int, confdir: Path, runs: list[str]) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env = client_env(f"http://127.0.0.1:{port}", confdir=confdir, base=base)
    argv = [sys.executable, "-c", ONE_CALL_PER_RUN, str(port), json.dumps(runs)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr
    return {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in done.stdout.splitlines()}


def test_a_replay_report_never_lands_on_another_runs_cassette(tmp_path: Path, confdir: Path) -> None:
    """Runs named like every by-product (``alice.report``, ``alice.json.journal``...) never share a file with ``alice``'s."""
    folder = tmp_path / "runs"
    folder.mkdir()
    others = [f"alice.{suffix}" for suffix in SUFFIXES]
    with FakeProvider() as provider:
        proc, port = start_proxy("record", folder, confdir, *remote_args(provider.url))
        recorded = one_call_per_run(port, confdir, ["alice", *others])
        stop_proxy(proc)
    # A run name ending in .report is refused (its cassette would be alice's report); every other one is a run of its own.
    assert recorded["alice.report"].startswith("refused 404") and "may not end in '.report'" in recorded["alice.report"]
    for run in ["alice", *others]:
        if run != "alice.report":
            assert recorded[run].startswith("ok"), (run, recorded[run])
            assert load_verified(folder / f"{run}.json").id == run
    assert not (folder / "alice.report.json").exists()
    # A file there that is not a report (put there by hand) is never overwritten either.
    stranger = folder / "alice.json.report.json"
    stranger.write_text('{"version": 2, "note": "not a report"}\n')
    before = {p.name: p.read_bytes() for p in folder.iterdir()}

    proc, port = start_proxy("replay", folder, confdir)
    replayed = one_call_per_run(port, confdir, ["alice", "alice.json"])
    err = stop_proxy(proc)
    assert replayed["alice"].startswith("ok") and replayed["alice.json"].startswith("ok"), replayed
    assert f"run alice: ok — 1 of 1 recorded model calls served; report {folder / 'alice.report.json'}" in err
    assert f"the report {stranger} could not be written" in err and "not this run's replay report" in err
    after = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert sorted(after) == sorted([*before, "alice.report.json"])
    assert {name: after[name] for name in before} == before  # every cassette (and the stranger) byte for byte
    for run in ["alice", *others]:
        if run != "alice.report":
            load_verified(folder / f"{run}.json")
    assert json.loads((folder / "alice.report.json").read_text())["verdict"] == "ok"
