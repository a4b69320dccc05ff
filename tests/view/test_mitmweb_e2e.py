"""mitmweb with the addon: each model call's "Blackbox" content view is the neutral step the cassette holds.

A real mitmweb process records the real OpenAI example agent (the openai SDK)
against the local fake provider; its web API renders the content views exactly
as its UI shows them.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, ROOT, free_port, map_remote_for, wait_for_port
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.proxy.environment import client_env

pytestmark = pytest.mark.e2e

QUESTION = "What's the weather in Paris and Lyon?"
TOKEN = "blackbox-view-test"


def _get(port: int, path: str) -> Any:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # straight to 127.0.0.1, never a proxy
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Bearer {TOKEN}"})
    with opener.open(req, timeout=30) as resp:
        return json.loads(resp.read())


def _below_comments(text: str) -> Any:
    return json.loads("\n".join(line for line in text.splitlines() if not line.startswith("#")))


def _views(confdir: Path, mode_args: list[str], question: str) -> tuple[subprocess.CompletedProcess[str], list[tuple[Any, Any]]]:
    """Run mitmweb with the addon, the example agent through it, and fetch each model call's two content views."""
    mitmweb = Path(sys.executable).with_name("mitmweb")
    port, web = free_port(), free_port()
    proc = subprocess.Popen(
        [str(mitmweb), "--listen-host", "127.0.0.1", "--listen-port", str(port), "--web-host", "127.0.0.1", "--web-port", str(web),
         "--set", "web_open_browser=false", "--set", f"web_password={TOKEN}", "--set", f"confdir={confdir}",
         "-s", str(ROOT / "addon" / "blackbox_addon.py"), *mode_args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        wait_for_port(proc, port, "mitmweb")
        wait_for_port(proc, web, "mitmweb's web UI")
        env = client_env(f"http://127.0.0.1:{port}", confdir=confdir)
        env["OPENAI_API_KEY"] = "sk-test-not-a-real-key-000"
        agent = subprocess.run(
            [sys.executable, str(EXAMPLES / "openai_weather_agent.py"), question], env=env, capture_output=True, text=True, timeout=120
        )
        flows = [f for f in _get(web, "/flows") if f["request"]["path"].endswith("/chat/completions")]
        shown = [
            (_get(web, f"/flows/{f['id']}/request/content/auto.json"), _get(web, f"/flows/{f['id']}/response/content/auto.json"))
            for f in flows
        ]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
    return agent, shown


def test_mitmweb_shows_each_model_call_as_its_neutral_step(tmp_path: Path, confdir: Path) -> None:
    cassette = tmp_path / "run.json"
    with FakeProvider() as provider:
        remote = [arg for spec in map_remote_for(provider.url) for arg in ("--set", f"map_remote={spec}")]
        agent, shown = _views(confdir, ["--set", "blackbox_mode=record", "--set", f"blackbox_cassette={cassette}", *remote], QUESTION)
    assert agent.returncode == 0, agent.stderr
    trace = load_trace(cassette)
    inputs = [s.payload for s in trace.steps if s.type == "model_input"]
    outputs = [s.payload for s in trace.steps if s.type == "model_output"]
    assert len(shown) == len(inputs) == 2
    for (request, response), model_input, model_output in zip(shown, inputs, outputs, strict=True):
        assert request["view_name"] == response["view_name"] == "Blackbox"  # chosen by default for a model call
        assert "# model_input: the request as the cassette holds it" in request["text"]
        assert _below_comments(request["text"]) == model_input
        assert "# the provider's answer" in response["text"]
        assert _below_comments(response["text"]) == model_output

    # Replayed offline: the same steps, each answer marked as made from the cassette.
    replay = ["--set", "blackbox_mode=replay", "--set", f"blackbox_cassette={cassette}"]
    again, replayed = _views(confdir, replay, QUESTION)
    assert again.returncode == 0, again.stderr
    assert [_below_comments(r["text"]) for _, r in replayed] == outputs
    assert all("# answered by Blackbox from the cassette (replay)" in r["text"] for _, r in replayed)

    # Another question: the request is refused as a divergence, and the view says so.
    _, diverged = _views(confdir, replay, "What's the weather in Paris and Nice?")
    (request, response), *_ = diverged
    assert _below_comments(request["text"])["messages"][0]["content"] == "What's the weather in Paris and Nice?"
    assert response["text"].startswith(
        "# Blackbox · openai model call\n# REFUSED by Blackbox (HTTP 400): nothing was recorded for this call\n"
    )
    assert "content differs at character 32" in response["text"]
