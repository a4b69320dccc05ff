"""One proxy, many runs: each client names its run in its proxy URL (a real mitmproxy, the real openai SDK).

(``session/router``'s own rules, without a proxy, are tested in tests/session/test_router.py.)

Two runs are recorded into one directory through one proxy, then replayed through
one proxy with the provider gone, at the same time; a client that names no run, an
unknown run or a broken cassette is refused on its own, never given another run's
cassette and never fatal to the others.
"""

from __future__ import annotations

import ssl
import threading
from pathlib import Path
from typing import Any

import httpx2 as httpx  # the HTTP client the provider SDKs ship with
import openai
import pytest
from conftest import map_remote_for
from fake_provider import FakeProvider

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace
from blackbox_mitm.proxy.addon import BlackboxAddon
from blackbox_mitm.proxy.environment import ca_bundle
from blackbox_mitm.proxy.runner import ProxyRunner
from blackbox_mitm.session.router import RunRouter

pytestmark = pytest.mark.e2e

PROMPTS = {"run-a": "What's the weather in Paris?", "run-b": "And in Lyon?"}


def _client(proxy_url: str, run: str | None, confdir: Path) -> openai.OpenAI:
    url = proxy_url if run is None else proxy_url.replace("http://", f"http://{run}@")
    verify = ssl.create_default_context(cafile=str(ca_bundle(confdir)))
    http_client = httpx.Client(proxy=url, verify=verify, trust_env=False, timeout=30)
    return openai.OpenAI(api_key="sk-test-not-a-real-key-000", max_retries=0, http_client=http_client)


def _ask(client: openai.OpenAI, prompt: str) -> str:
    r = client.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": prompt}])
    return r.choices[0].message.content or ""


def _runner(router: RunRouter, confdir: Path, *, replaying: bool, map_remote: list[str] | None = None) -> ProxyRunner:
    addon = BlackboxAddon(router=router, on_done=lambda: None)
    return ProxyRunner(addon, confdir=confdir, map_remote=map_remote or [], offline=replaying)


@pytest.fixture
def recorded(tmp_path: Path, confdir: Path) -> tuple[Path, dict[str, str]]:
    runs = tmp_path / "runs"
    runs.mkdir()
    router = RunRouter(runs, mode="record")
    answers = {}
    with FakeProvider() as provider, _runner(router, confdir, replaying=False, map_remote=map_remote_for(provider.url)) as proxy:
        for run, prompt in PROMPTS.items():
            answers[run] = _ask(_client(proxy.url, run, confdir), prompt)
    reports = router.finish_all()
    assert sorted(reports) == sorted(PROMPTS)
    return runs, answers


def test_each_run_is_recorded_into_its_own_cassette(recorded: tuple[Path, dict[str, str]]) -> None:
    runs, _ = recorded
    for run, prompt in PROMPTS.items():
        trace = load_trace(runs / f"{run}.json")
        assert verify_trace(trace) == []
        assert trace.id == run
        inputs = [s.payload for s in trace.steps if s.type == "model_input"]
        assert [m["messages"][-1]["content"] for m in inputs] == [prompt]


def test_runs_replay_at_once_through_one_offline_proxy(recorded: tuple[Path, dict[str, str]], confdir: Path) -> None:
    runs, answers = recorded
    (runs / "broken.json").write_text("{not json")
    router = RunRouter(runs, mode="replay")
    results: dict[str, Any] = {}
    with _runner(router, confdir, replaying=True) as proxy:

        def one(run: str) -> None:
            try:
                results[run] = _ask(_client(proxy.url, run, confdir), PROMPTS[run])
            except Exception as exc:
                results[run] = exc

        threads = [threading.Thread(target=one, args=(run,)) for run in PROMPTS]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        with pytest.raises(openai.APIStatusError) as nobody:
            _ask(_client(proxy.url, None, confdir), PROMPTS["run-a"])
        with pytest.raises(openai.APIStatusError) as unknown:
            _ask(_client(proxy.url, "run-z", confdir), PROMPTS["run-a"])
        with pytest.raises(openai.APIStatusError) as broken:
            _ask(_client(proxy.url, "broken", confdir), PROMPTS["run-a"])
        with pytest.raises(openai.APIStatusError) as again:  # run-a's one call was served: one more overruns it
            _ask(_client(proxy.url, "run-a", confdir), PROMPTS["run-a"])
    assert results == answers
    assert nobody.value.status_code == 407 and "named none" in str(nobody.value)
    assert unknown.value.status_code == 404 and "'run-z'" in str(unknown.value)
    assert broken.value.status_code == 404 and "broken" in str(broken.value)
    assert again.value.status_code == 400 and "overran its recording" in str(again.value)
    reports = router.finish_all()
    assert reports["run-b"]["verdict"] == "ok"
    assert reports["run-a"]["verdict"] == "overran"
