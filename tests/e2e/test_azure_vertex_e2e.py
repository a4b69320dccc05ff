"""End to end: Azure OpenAI (the openai SDK's AzureOpenAI, chat and Responses, and the /openai/v1 paths) and
Vertex AI's Anthropic models (AnthropicVertex), through a real proxy against fakes on 127.0.0.1.

The agents use their SDKs' default hosts (``{resource}.openai.azure.com``,
``{region}-aiplatform.googleapis.com``, the global ``aiplatform.googleapis.com``),
matched by Blackbox's host patterns; ``--map-remote`` sends them to the fakes.
Each case: record -> nothing of the cloud (key, token, resource, project, region,
api-version) is in the cassette -> strict offline replay with no credential gives
the same answer -> a changed prompt fails. A capability's variants (whole or streamed, two regions, two
modes) are runs of one agent session (tests/e2e/several_runs.py), recorded once for the module; each variant's
test checks its own run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, ROOT, blackbox
from fake_clouds import FakeClouds
from fake_provider import FakeProvider
from fake_responses import FakeResponses
from once import shared
from several_runs import calls_per_run, outputs, per_run, several

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.codecs.verified import verify_trace

pytestmark = pytest.mark.e2e

QUESTION = "What's the weather in Paris and Lyon?"
CHANGED = "What's the weather in Paris and Oslo?"
ANSWER = "Paris: cloudy, 18°C. Lyon: rain, 15°C."
RESOURCE = "https://contoso-eastus.openai.azure.com"
AZURE_KEY = "3f9c1a7be2d84c60b5e9a1d7c4f20e8b"  # the shape of an Azure OpenAI key; never a real one
AZURE = {"AZURE_OPENAI_ENDPOINT": RESOURCE, "OPENAI_API_VERSION": "2024-10-21"}
TOKEN = "ya29.a0AfB_byC3kQ9xLm2Np7Rt4Vw8Yz1Bc5Df0Gh6Jk3Lm9Np2Qr"  # the shape of a Google OAuth token
VERTEX = {"ANTHROPIC_VERTEX_PROJECT_ID": "acme-prod-417203"}


def _record(cassette: Path, confdir: Path, remotes: list[str], command: list[str], env: dict[str, str]) -> Any:
    mapped = [arg for remote in remotes for arg in ("--map-remote", remote)]
    return blackbox("record", "-o", str(cassette), "--confdir", str(confdir), *mapped, "--", *command, env=env)


def _replay(cassette: Path, confdir: Path, command: list[str], env: dict[str, str]) -> Any:
    return blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *command, env=env)


@dataclass
class RoundTrip:
    """One agent session of several runs (one a variant), recorded, replayed and replayed with a changed prompt."""

    rec: Any
    trace: Trace
    requests: list[list[dict[str, Any]]]  # what the fake was sent, run by run (one request a model call)


def _round_trip(folder: Path, confdir: Path, fake: Any, remotes: list[str], script: Path, runs: list[list[str]], env: dict[str, str], *,
                secret: str, replay_env: dict[str, str], banned: tuple[str, ...], changed_at: tuple[int, ...] = (0,)) -> RoundTrip:  # fmt: skip
    """Record ``runs`` of ``script`` in one session against ``fake``; check the cassette; replay it, then with a changed prompt.

    A changed replay for each run in ``changed_at``: the runs before it as recorded, then it with the changed prompt, which
    fails (the divergence is read from the neutral input, the same whole or streamed: once a capability)."""
    cassette = folder / "run.json"
    rec = _record(cassette, confdir, remotes, several(script, runs), {**env, **replay_env})
    assert rec.returncode == 0, rec.stderr
    requests = list(fake.requests)
    raw = cassette.read_bytes()
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    for word in (secret, *banned):
        assert word.encode() not in raw, word
    rep = _replay(cassette, confdir, several(script, runs), replay_env)  # the fake is gone, and no credential is given
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert len(outputs(rep.stdout)) == len(runs)
    for at in changed_at:
        bad = _replay(cassette, confdir, several(script, [*runs[:at], [CHANGED if w == QUESTION else w for w in runs[at]]]), replay_env)
        assert bad.returncode != 0
        assert "differs" in bad.stderr
    counts = calls_per_run(trace)
    assert len(counts) == len(runs), counts
    return RoundTrip(rec, trace, per_run(requests, counts))


def _first_input(trip: RoundTrip, run: int) -> dict[str, Any]:
    """The first model input of run ``run``."""
    inputs: list[dict[str, Any]] = [s.payload for s in trip.trace.steps if s.type == "model_input"]
    return inputs[sum(len(r) for r in trip.requests[:run])]


# --- Azure OpenAI -------------------------------------------------------------------------

AZURE_REMOTE = r"|https://contoso-eastus\.openai\.azure\.com|"
AZURE_BANNED = ("contoso", "azure", "api-version", "2024-10-21", "prompt_filter", "content_filter")
OPENAI_AGENT = EXAMPLES / "openai_weather_agent.py"
STREAMS = [False, True]


@pytest.fixture(scope="module")
def azure_chat(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> RoundTrip:
    """The chat deployments' runs, whole and streamed (AzureOpenAI), then a run on the /openai/v1 paths (a plain OpenAI
    client at OPENAI_BASE_URL): one session; the changed prompt fails the first run and, on its own path, the last."""

    def make(folder: Path) -> RoundTrip:
        runs = [["--cloud", "azure", *(["--stream"] if stream else []), QUESTION] for stream in STREAMS]
        runs.append([f"OPENAI_BASE_URL={RESOURCE}/openai/v1", QUESTION])
        with FakeProvider() as fake:
            return _round_trip(
                folder, confdir, fake, [AZURE_REMOTE + fake.url], OPENAI_AGENT, runs,
                {"AZURE_OPENAI_API_KEY": AZURE_KEY, "OPENAI_API_KEY": AZURE_KEY}, secret=AZURE_KEY, replay_env=AZURE,
                banned=AZURE_BANNED, changed_at=(0, len(STREAMS)),
            )  # fmt: skip

    return shared(tmp_path_factory, "azure-chat", make)  # once a test session (tests/once.py)


@pytest.mark.parametrize("stream", STREAMS, ids=["whole", "stream"])
def test_azure_openai_chat_deployments_record_and_replay(stream: bool, azure_chat: RoundTrip) -> None:
    run = STREAMS.index(stream)
    requests = azure_chat.requests[run]
    assert all(r["headers"].get("api-key") == AZURE_KEY for r in requests)  # the key went to the resource only
    assert all(bool(r["body"].get("stream")) is stream for r in requests)  # this run's requests
    assert outputs(azure_chat.rec.stdout)[run].strip() == ANSWER
    assert all(r["path"].startswith("/openai/deployments/gpt-4.1/chat/completions?api-version=") for r in requests)
    assert _first_input(azure_chat, run)["model"] == "gpt-4.1"  # the deployment, as the agent asked for it


def test_azure_openai_v1_paths_record_and_replay(azure_chat: RoundTrip) -> None:
    run = len(STREAMS)  # the last run
    assert {r["path"] for r in azure_chat.requests[run]} == {"/openai/v1/chat/completions"}
    assert all(r["headers"].get("authorization") == f"Bearer {AZURE_KEY}" for r in azure_chat.requests[run])  # this run's requests
    assert outputs(azure_chat.rec.stdout)[run].strip() == ANSWER


RESPONSES_AGENT = ROOT / "tests" / "e2e" / "agents" / "responses_agent.py"
RESPONSES_MODES = ["create", "stream"]


@pytest.fixture(scope="module")
def azure_responses(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> RoundTrip:
    def make(folder: Path) -> RoundTrip:
        with FakeResponses() as fake:
            return _round_trip(
                folder, confdir, fake, [AZURE_REMOTE + fake.url], RESPONSES_AGENT,
                [[mode, QUESTION] for mode in RESPONSES_MODES], {"AZURE_OPENAI_API_KEY": AZURE_KEY},
                secret=AZURE_KEY, replay_env=AZURE, banned=AZURE_BANNED,
            )  # fmt: skip

    return shared(tmp_path_factory, "azure-responses", make)  # once a test session (tests/once.py)


@pytest.mark.parametrize("mode", RESPONSES_MODES)
def test_azure_openai_responses_record_and_replay(mode: str, azure_responses: RoundTrip) -> None:
    run = RESPONSES_MODES.index(mode)
    requests = azure_responses.requests[run]
    assert all(bool(r["body"].get("stream")) is (mode == "stream") for r in requests)  # this run's requests
    assert {r["path"].split("?")[0] for r in requests} == {"/openai/responses"}
    assert outputs(azure_responses.rec.stdout)[run].startswith("answer: " + ANSWER)


# --- Vertex AI, Anthropic models ------------------------------------------------------------

VERTEX_AGENT = EXAMPLES / "anthropic_weather_agent.py"
VERTEX_MODEL = "claude-sonnet-4-6@20260101"
REGIONS = {"us-east5": r"us-east5-aiplatform\.googleapis\.com", "global": r"aiplatform\.googleapis\.com"}
VERTEX_RUNS = [(region, stream) for region in REGIONS for stream in STREAMS]


@pytest.fixture(scope="module")
def anthropic_vertex(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> RoundTrip:
    def make(folder: Path) -> RoundTrip:
        runs = [[f"CLOUD_ML_REGION={region}", "--cloud", "vertex", "--model", VERTEX_MODEL, *(["--stream"] if stream else []), QUESTION]
                for region, stream in VERTEX_RUNS]  # fmt: skip
        with FakeClouds() as fake:
            return _round_trip(
                folder, confdir, fake, [f"|https://{host}|{fake.url}" for host in REGIONS.values()],
                VERTEX_AGENT, runs, {"CLOUDSDK_AUTH_ACCESS_TOKEN": TOKEN}, secret=TOKEN, replay_env=VERTEX,
                banned=("acme-prod", "417203", *REGIONS, "projects/", "vertex-2023", "googleapis", "toolu_"),
            )  # fmt: skip

    return shared(tmp_path_factory, "anthropic-vertex", make)  # once a test session (tests/once.py)


@pytest.mark.parametrize("stream", STREAMS, ids=["rawPredict", "streamRawPredict"])
@pytest.mark.parametrize("region", list(REGIONS))
def test_anthropic_vertex_records_and_replays(stream: bool, region: str, anthropic_vertex: RoundTrip) -> None:
    run = VERTEX_RUNS.index((region, stream))
    calls = anthropic_vertex.requests[run]
    assert outputs(anthropic_vertex.rec.stdout)[run].strip() == ANSWER
    assert all(c["headers"]["authorization"] == f"Bearer {TOKEN}" for c in calls)
    op = ":streamRawPredict" if stream else ":rawPredict"
    assert all(
        c["path"] == f"/v1/projects/acme-prod-417203/locations/{region}/publishers/anthropic/models/{VERTEX_MODEL}{op}" for c in calls
    )
    assert _first_input(anthropic_vertex, run)["model"] == VERTEX_MODEL


# --- Vertex AI, Gemini models (google-genai with vertexai) ------------------------------------

GEMINI_KEY = "AIzaSyBx9Q2mZ7kL4pW1cV8nR3tY6uH0jF5dG2a"  # the shape of a Google API key; never a real one
GEMINI_AGENT = EXAMPLES / "gemini_weather_agent.py"
GEMINI_MODES = ["stream", "manual"]  # a streamed call; a manual function-calling round


@pytest.fixture(scope="module")
def gemini_express(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> RoundTrip:
    def make(folder: Path) -> RoundTrip:
        from fake_gemini import FakeGemini

        with FakeGemini() as fake:
            return _round_trip(
                folder, confdir, fake, [rf"|https://aiplatform\.googleapis\.com|{fake.url}"], GEMINI_AGENT,
                [["--mode", mode, QUESTION] for mode in GEMINI_MODES], {"GOOGLE_API_KEY": GEMINI_KEY}, secret=GEMINI_KEY,
                replay_env={"GOOGLE_GENAI_USE_VERTEXAI": "true"}, banned=("aiplatform", "v1beta1", "publishers", "usageMetadata", "responseId"),
            )  # fmt: skip

    return shared(tmp_path_factory, "gemini-express", make)  # once a test session (tests/once.py)


@pytest.mark.parametrize("mode", GEMINI_MODES)
def test_google_genai_on_vertex_records_and_replays(mode: str, gemini_express: RoundTrip) -> None:
    """A default ``genai.Client()`` with ``GOOGLE_GENAI_USE_VERTEXAI=true`` (Vertex express mode: an API key, the global host)."""
    run = GEMINI_MODES.index(mode)
    paths = {r["path"] for r in gemini_express.requests[run]}
    assert outputs(gemini_express.rec.stdout)[run].strip() == (ANSWER if mode == "manual" else f"You said: {QUESTION}")
    assert paths == {
        f"/v1beta1/publishers/google/models/gemini-2.5-flash:{'streamGenerateContent' if mode == 'stream' else 'generateContent'}"
    }
    assert _first_input(gemini_express, run)["model"] == "gemini-2.5-flash"


# --- Vertex AI, Gemini models with a project and OAuth -----------------------------------------

OAUTH_TOKEN = "ya29.a0AfB_fakeVertexOAuthTok3nQ9xLm2Np7Rt4Vw8Yz1"  # the shape of a Google OAuth token; never a real one
REFRESH_TOKEN = "1//0gFakeRefreshTokenXq7Lm2Np9Rt4Vw8Yz1Bc5Df0Gh6Jk"
CLIENT_SECRET = "GOCSPX-fakeClientSecret9Lm2Np7Rt4"
GOOGLE_PROJECT = {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "acme-prod-417203", "GOOGLE_CLOUD_LOCATION": "us-central1"}


class FakeTokenEndpoint:
    """Google's OAuth token endpoint on 127.0.0.1: a refresh_token grant answered with an access token."""

    def __init__(self) -> None:
        import http.server
        import threading
        import urllib.parse

        self.grants: list[dict[str, list[str]]] = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0)).decode()
                fake.grants.append(urllib.parse.parse_qs(body))
                answer = json.dumps({"access_token": OAUTH_TOKEN, "expires_in": 3599, "token_type": "Bearer", "scope": "cloud-platform"})
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer.encode())

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeTokenEndpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class OAuthSession:
    rec: Any
    requests: list[list[dict[str, Any]]]  # run by run
    grants: list[dict[str, list[str]]]
    cassette: Path
    replays: list[Any]
    bad: Any


@pytest.fixture(scope="module")
def gemini_oauth(tmp_path_factory: pytest.TempPathFactory, confdir: Path) -> OAuthSession:
    """Both modes' runs in one agent session: recorded (each run's client refreshing its token), replayed three times
    with no credentials, and replayed with a changed prompt."""

    def make(folder: Path) -> OAuthSession:
        from fake_gemini import FakeGemini

        credentials = folder / "adc.json"
        credentials.write_text(json.dumps({"type": "authorized_user", "client_id": "764086051850-fake.apps.googleusercontent.com",
                                           "client_secret": CLIENT_SECRET, "refresh_token": REFRESH_TOKEN}))  # fmt: skip
        cassette = folder / "run.json"

        def agent(question: str) -> list[str]:
            return several(GEMINI_AGENT, [["--mode", mode, question] for mode in GEMINI_MODES])

        with FakeGemini() as fake, FakeTokenEndpoint() as tokens:
            rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir),
                           "--map-remote", rf"|https://us-central1-aiplatform\.googleapis\.com|{fake.url}",
                           "--map-remote", rf"|https://oauth2\.googleapis\.com|{tokens.url}",
                           "--", *agent(QUESTION), env={**GOOGLE_PROJECT, "GOOGLE_APPLICATION_CREDENTIALS": str(credentials)})  # fmt: skip
            assert rec.returncode == 0, rec.stderr
            requests, grants = list(fake.requests), list(tokens.grants)
        # no credentials file, the fakes gone: the placeholder token, nothing contacted
        replays = [
            blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *agent(QUESTION), env=GOOGLE_PROJECT) for _ in range(3)
        ]
        bad = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *agent(CHANGED), env=GOOGLE_PROJECT)
        return OAuthSession(rec, per_run(requests, calls_per_run(load_trace(cassette))), grants, cassette, replays, bad)

    return shared(tmp_path_factory, "gemini-oauth", make)  # once a test session (tests/once.py)


@pytest.mark.parametrize("mode", GEMINI_MODES)
def test_google_genai_on_vertex_with_a_project_and_oauth_records_and_replays(mode: str, gemini_oauth: OAuthSession) -> None:
    """``genai.Client()`` on Vertex with a project and location, authenticated by an OAuth credentials file.

    The recording refreshes the token for real (google-auth posts the refresh token
    to oauth2.googleapis.com, answered by a fake through the proxy); the token
    exchange is never kept, and no token, project or location is in the cassette.
    The replay has no credentials file: gcloud's token variable gets the replay's
    placeholder, and nothing is contacted.
    """
    run = GEMINI_MODES.index(mode)
    rec, cassette = gemini_oauth.rec, gemini_oauth.cassette
    paths = {r["path"] for r in gemini_oauth.requests[run]}
    bearers = {r["headers"].get("authorization") for r in gemini_oauth.requests[run]}
    assert outputs(rec.stdout)[run].strip() == (ANSWER if mode == "manual" else f"You said: {QUESTION}")
    # the OAuth refresh went through the proxy, once for each run's client
    assert [g["grant_type"] for g in gemini_oauth.grants] == [["refresh_token"]] * len(GEMINI_MODES)
    assert bearers == {f"Bearer {OAUTH_TOKEN}"}
    op = "streamGenerateContent" if mode == "stream" else "generateContent"
    assert paths == {f"/v1beta1/projects/acme-prod-417203/locations/us-central1/publishers/google/models/gemini-2.5-flash:{op}"}
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    assert [s.payload for s in trace.steps if s.type == "model_input"][sum(len(r) for r in gemini_oauth.requests[:run])]["model"] == (
        "gemini-2.5-flash"
    )
    raw = cassette.read_bytes()
    for word in (OAUTH_TOKEN, "ya29.", REFRESH_TOKEN, CLIENT_SECRET, "oauth2", "/token", "acme-prod", "417203", "us-central1",
                 "projects/", "aiplatform", "googleapis"):  # fmt: skip
        assert word.encode() not in raw, word

    for rep in gemini_oauth.replays:
        assert rep.returncode == 0, rep.stderr
        assert rep.stdout == rec.stdout
        assert "no divergence" in rep.stderr
    assert gemini_oauth.bad.returncode != 0
    assert "differs" in gemini_oauth.bad.stderr
