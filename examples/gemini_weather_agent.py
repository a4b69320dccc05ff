"""A small real agent over the official ``google-genai`` SDK with a local get_weather tool.

    python examples/gemini_weather_agent.py [--mode generate|stream|manual|auto] "What's the weather in Paris and Lyon?"

* ``generate`` — one ``generate_content`` call, no tools;
* ``stream``   — one ``generate_content_stream`` call, no tools;
* ``manual``   — a function-calling loop written out: the agent runs get_weather
  for each function call and sends the results back, until a text answer;
* ``auto``     — the SDK's automatic function calling with a Python function.

Unadapted to recording: a default ``genai.Client()`` (the key from
GEMINI_API_KEY / GOOGLE_API_KEY, the real https://generativelanguage.googleapis.com),
so blackbox reaches it through HTTPS_PROXY and its CA like any third-party agent.
On Vertex AI (``GOOGLE_GENAI_USE_VERTEXAI=true`` with ``GOOGLE_CLOUD_PROJECT`` and
``GOOGLE_CLOUD_LOCATION``) it authenticates as google-auth finds it (e.g. the
OAuth credentials file in ``GOOGLE_APPLICATION_CREDENTIALS``), or with gcloud's
access token when ``CLOUDSDK_AUTH_ACCESS_TOKEN`` is set.
The answer is the only thing on stdout; exit 1 on an API error, 2 when the model
never finishes.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from google import genai
from google.genai import errors, types

MODEL = "gemini-2.5-flash"
MAX_ROUNDS = 8
WEATHER: dict[str, dict[str, Any]] = {
    "paris": {"forecast": "cloudy", "celsius": 18},
    "lyon": {"forecast": "rain", "celsius": 15},
    "oslo": {"forecast": "snow", "celsius": -3},
}
DECLARATION = types.FunctionDeclaration(
    name="get_weather",
    description="Current weather for a city.",
    parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def get_weather(city: str) -> dict[str, Any]:
    """Current weather for a city.

    Args:
        city: the city's name
    """
    return {"city": city, **WEATHER.get(city.lower(), {"forecast": "unknown", "celsius": None})}


def manual_loop(client: genai.Client, question: str) -> str:
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[DECLARATION])], system_instruction="Answer briefly.")
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text=question)])]
    for _ in range(MAX_ROUNDS):
        response = client.models.generate_content(model=MODEL, contents=contents, config=config)
        calls = response.function_calls or []
        if not calls:
            return response.text or ""
        assert response.candidates and response.candidates[0].content
        contents.append(response.candidates[0].content)
        results = []
        for call in calls:
            print(f"tool: get_weather({call.args})", file=sys.stderr)
            result = get_weather(**(call.args or {}))
            results.append(types.Part.from_function_response(name=call.name or "", response=result))
        contents.append(types.Content(role="user", parts=results))
    raise SystemExit(2)


def make_client() -> genai.Client:
    """A default client; on Vertex with a project and ``CLOUDSDK_AUTH_ACCESS_TOKEN`` set, that token as its credentials."""
    token = os.environ.get("CLOUDSDK_AUTH_ACCESS_TOKEN")
    on_vertex = os.environ.get("GOOGLE_GENAI_USE_VERTEXAI", "").lower() in ("true", "1") and os.environ.get("GOOGLE_CLOUD_PROJECT")
    if token and on_vertex:
        from google.oauth2.credentials import Credentials

        return genai.Client(credentials=Credentials(token))
    return genai.Client()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--mode", choices=["generate", "stream", "manual", "auto"], default="manual")
    args = parser.parse_args(argv)
    client = make_client()
    try:
        if args.mode == "generate":
            answer = client.models.generate_content(model=MODEL, contents=args.question).text or ""
        elif args.mode == "stream":
            answer = "".join(chunk.text or "" for chunk in client.models.generate_content_stream(model=MODEL, contents=args.question))
        elif args.mode == "auto":
            config = types.GenerateContentConfig(tools=[get_weather])
            answer = client.models.generate_content(model=MODEL, contents=args.question, config=config).text or ""
        else:
            answer = manual_loop(client, args.question)
    except errors.APIError as exc:
        print(f"API error {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    print(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
