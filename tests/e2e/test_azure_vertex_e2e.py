"""End to end: Azure OpenAI (the openai SDK's AzureOpenAI, chat and Responses, and the /openai/v1 paths) and
Vertex AI's Anthropic models (AnthropicVertex), through a real proxy against fakes on 127.0.0.1.

The agents use their SDKs' default hosts (``{resource}.openai.azure.com``,
``{region}-aiplatform.googleapis.com``, the global ``aiplatform.googleapis.com``),
matched by Blackbox's host patterns; ``--map-remote`` sends them to the fakes.
Each case: record -> nothing of the cloud (key, token, resource, project, region,
api-version) is in the cassette -> strict offline replay with no credential gives
the same answer -> a changed prompt fails.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, ROOT, blackbox
from fake_clouds import FakeClouds
from fake_provider import FakeProvider
from fake_responses import FakeResponses

from blackbox_mitm.cassette import load_trace
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


def _record(cassette: Path, confdir: Path, remote: str, command: list[str], env: dict[str, str]) -> Any:
    return blackbox("record", "-o", str(cassette), "--confdir", str(confdir), "--map-remote", remote, "--", *command, env=env)


def _replay(cassette: Path, confdir: Path, command: list[str], env: dict[str, str]) -> Any:
    return blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *command, env=env)


def _round_trip(tmp_path: Path, confdir: Path, remote: str, command: list[str], changed: list[str], env: dict[str, str], *,
                secret: str, replay_env: dict[str, str], banned: tuple[str, ...]) -> tuple[Any, Any]:  # fmt: skip
    cassette = tmp_path / "run.json"
    rec = _record(cassette, confdir, remote, command, {**env, **replay_env})
    assert rec.returncode == 0, rec.stderr
    raw = cassette.read_bytes()
    assert verify_trace(load_trace(cassette)) == []
    for word in (secret, *banned):
        assert word.encode() not in raw, word
    rep = _replay(cassette, confdir, command, replay_env)  # the fake is gone, and no credential is given
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    bad = _replay(cassette, confdir, changed, replay_env)
    assert bad.returncode != 0
    assert "differs" in bad.stderr
    return rec, load_trace(cassette)


# --- Azure OpenAI -------------------------------------------------------------------------

AZURE_REMOTE = r"|https://contoso-eastus\.openai\.azure\.com|"
AZURE_BANNED = ("contoso", "azure", "api-version", "2024-10-21", "prompt_filter", "content_filter")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_azure_openai_chat_deployments_record_and_replay(stream: bool, tmp_path: Path, confdir: Path) -> None:
    agent = [sys.executable, str(EXAMPLES / "openai_weather_agent.py"), "--cloud", "azure", *(["--stream"] if stream else [])]
    with FakeProvider() as fake:
        rec, trace = _round_trip(
            tmp_path, confdir, AZURE_REMOTE + fake.url, [*agent, QUESTION], [*agent, CHANGED], {"AZURE_OPENAI_API_KEY": AZURE_KEY},
            secret=AZURE_KEY, replay_env=AZURE, banned=AZURE_BANNED,
        )  # fmt: skip
        paths = [r["path"] for r in fake.requests]
        assert all(r["headers"].get("api-key") == AZURE_KEY for r in fake.requests)  # the key went to the resource only
    assert rec.stdout.strip() == ANSWER
    assert all(p.startswith("/openai/deployments/gpt-4.1/chat/completions?api-version=") for p in paths)
    assert trace.steps[0].payload["model"] == "gpt-4.1"  # the deployment, as the agent asked for it


def test_azure_openai_v1_paths_record_and_replay(tmp_path: Path, confdir: Path) -> None:
    agent = [sys.executable, str(EXAMPLES / "openai_weather_agent.py")]
    env = {"OPENAI_BASE_URL": RESOURCE + "/openai/v1"}
    with FakeProvider() as fake:
        _round_trip(
            tmp_path, confdir, AZURE_REMOTE + fake.url, [*agent, QUESTION], [*agent, CHANGED], {"OPENAI_API_KEY": AZURE_KEY},
            secret=AZURE_KEY, replay_env=env, banned=AZURE_BANNED,
        )  # fmt: skip
        assert {r["path"] for r in fake.requests} == {"/openai/v1/chat/completions"}


@pytest.mark.parametrize("mode", ["create", "stream"])
def test_azure_openai_responses_record_and_replay(mode: str, tmp_path: Path, confdir: Path) -> None:
    agent = [sys.executable, str(ROOT / "tests" / "e2e" / "agents" / "responses_agent.py"), mode]
    with FakeResponses() as fake:
        rec, _ = _round_trip(
            tmp_path, confdir, AZURE_REMOTE + fake.url, [*agent, QUESTION], [*agent, CHANGED], {"AZURE_OPENAI_API_KEY": AZURE_KEY},
            secret=AZURE_KEY, replay_env=AZURE, banned=AZURE_BANNED,
        )  # fmt: skip
        assert {r["path"].split("?")[0] for r in fake.requests} == {"/openai/responses"}
    assert rec.stdout.startswith("answer: " + ANSWER)


# --- Vertex AI, Anthropic models ------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["rawPredict", "streamRawPredict"])
@pytest.mark.parametrize(
    ("region", "host"), [("us-east5", r"us-east5-aiplatform\.googleapis\.com"), ("global", r"aiplatform\.googleapis\.com")]
)
def test_anthropic_vertex_records_and_replays(stream: bool, region: str, host: str, tmp_path: Path, confdir: Path) -> None:
    agent = [sys.executable, str(EXAMPLES / "anthropic_weather_agent.py"), "--cloud", "vertex", "--model", "claude-sonnet-4-6@20260101"]
    agent += ["--stream"] if stream else []
    env = {**VERTEX, "CLOUD_ML_REGION": region}
    with FakeClouds() as fake:
        rec, trace = _round_trip(
            tmp_path, confdir, f"|https://{host}|{fake.url}", [*agent, QUESTION], [*agent, CHANGED], {"CLOUDSDK_AUTH_ACCESS_TOKEN": TOKEN},
            secret=TOKEN, replay_env=env, banned=("acme-prod", "417203", region, "projects/", "vertex-2023", "googleapis", "toolu_"),
        )  # fmt: skip
        calls = fake.requests
    assert rec.stdout.strip() == ANSWER
    assert all(c["headers"]["authorization"] == f"Bearer {TOKEN}" for c in calls)
    op = ":streamRawPredict" if stream else ":rawPredict"
    assert all(
        c["path"] == f"/v1/projects/acme-prod-417203/locations/{region}/publishers/anthropic/models/claude-sonnet-4-6@20260101{op}"
        for c in calls
    )
    assert trace.steps[0].payload["model"] == "claude-sonnet-4-6@20260101"


# --- Vertex AI, Gemini models (google-genai with vertexai) ------------------------------------

GEMINI_KEY = "AIzaSyBx9Q2mZ7kL4pW1cV8nR3tY6uH0jF5dG2a"  # the shape of a Google API key; never a real one


@pytest.mark.parametrize("mode", ["stream", "manual"])  # a streamed call; a manual function-calling round
def test_google_genai_on_vertex_records_and_replays(mode: str, tmp_path: Path, confdir: Path) -> None:
    """A default ``genai.Client()`` with ``GOOGLE_GENAI_USE_VERTEXAI=true`` (Vertex express mode: an API key, the global host)."""
    from fake_gemini import FakeGemini

    agent = [sys.executable, str(EXAMPLES / "gemini_weather_agent.py"), "--mode", mode]
    with FakeGemini() as fake:
        rec, trace = _round_trip(
            tmp_path, confdir, rf"|https://aiplatform\.googleapis\.com|{fake.url}", [*agent, QUESTION], [*agent, CHANGED],
            {"GOOGLE_API_KEY": GEMINI_KEY}, secret=GEMINI_KEY, replay_env={"GOOGLE_GENAI_USE_VERTEXAI": "true"},
            banned=("aiplatform", "v1beta1", "publishers", "usageMetadata", "responseId"),
        )  # fmt: skip
        paths = {r["path"] for r in fake.requests}
    assert rec.stdout.strip() == (ANSWER if mode == "manual" else f"You said: {QUESTION}")
    assert paths == {
        f"/v1beta1/publishers/google/models/gemini-2.5-flash:{'streamGenerateContent' if mode == 'stream' else 'generateContent'}"
    }
    assert trace.steps[0].payload["model"] == "gemini-2.5-flash"


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


@pytest.mark.parametrize("mode", ["stream", "manual"])
def test_google_genai_on_vertex_with_a_project_and_oauth_records_and_replays(mode: str, tmp_path: Path, confdir: Path) -> None:
    """``genai.Client()`` on Vertex with a project and location, authenticated by an OAuth credentials file.

    The recording refreshes the token for real (google-auth posts the refresh token
    to oauth2.googleapis.com, answered by a fake through the proxy); the token
    exchange is never kept, and no token, project or location is in the cassette.
    The replay has no credentials file: gcloud's token variable gets the replay's
    placeholder, and nothing is contacted.
    """
    from fake_gemini import FakeGemini

    credentials = tmp_path / "adc.json"
    credentials.write_text(json.dumps({"type": "authorized_user", "client_id": "764086051850-fake.apps.googleusercontent.com",
                                       "client_secret": CLIENT_SECRET, "refresh_token": REFRESH_TOKEN}))  # fmt: skip
    agent = [sys.executable, str(EXAMPLES / "gemini_weather_agent.py"), "--mode", mode]
    cassette = tmp_path / "run.json"
    with FakeGemini() as fake, FakeTokenEndpoint() as tokens:
        rec = blackbox("record", "-o", str(cassette), "--confdir", str(confdir),
                       "--map-remote", rf"|https://us-central1-aiplatform\.googleapis\.com|{fake.url}",
                       "--map-remote", rf"|https://oauth2\.googleapis\.com|{tokens.url}",
                       "--", *agent, QUESTION, env={**GOOGLE_PROJECT, "GOOGLE_APPLICATION_CREDENTIALS": str(credentials)})  # fmt: skip
        assert rec.returncode == 0, rec.stderr
        paths = {r["path"] for r in fake.requests}
        bearers = {r["headers"].get("authorization") for r in fake.requests}
    assert rec.stdout.strip() == (ANSWER if mode == "manual" else f"You said: {QUESTION}")
    assert [g["grant_type"] for g in tokens.grants] == [["refresh_token"]]  # the OAuth refresh went through the proxy
    assert bearers == {f"Bearer {OAUTH_TOKEN}"}
    op = "streamGenerateContent" if mode == "stream" else "generateContent"
    assert paths == {f"/v1beta1/projects/acme-prod-417203/locations/us-central1/publishers/google/models/gemini-2.5-flash:{op}"}
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    assert trace.steps[0].payload["model"] == "gemini-2.5-flash"
    raw = cassette.read_bytes()
    for word in (OAUTH_TOKEN, "ya29.", REFRESH_TOKEN, CLIENT_SECRET, "oauth2", "/token", "acme-prod", "417203", "us-central1",
                 "projects/", "aiplatform", "googleapis"):  # fmt: skip
        assert word.encode() not in raw, word

    for _ in range(3):  # no credentials file, the fakes gone: the placeholder token, nothing contacted
        rep = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *agent, QUESTION, env=GOOGLE_PROJECT)
        assert rep.returncode == 0, rep.stderr
        assert rep.stdout == rec.stdout
        assert "no divergence" in rep.stderr
    bad = blackbox("replay", str(cassette), "--confdir", str(confdir), "--", *agent, CHANGED, env=GOOGLE_PROJECT)
    assert bad.returncode != 0
    assert "differs" in bad.stderr
