"""A small real agent: a messages-API tool loop over the official `anthropic` SDK with a local get_weather tool.

    python examples/anthropic_weather_agent.py "What's the weather in Paris and Lyon?" [--stream] [--cloud bedrock|vertex] [--model M]

Unadapted to recording: a default ``anthropic.Anthropic()`` (the key from
ANTHROPIC_API_KEY, the real https://api.anthropic.com), so blackbox reaches it
through HTTPS_PROXY and its CA. Only the final answer goes to stdout; progress
goes to stderr. Exit status: 0 on a final answer, 1 on an API error, 2 when the
model never finishes.

``--cloud bedrock`` uses ``anthropic.AnthropicBedrock()`` (region and credentials
from the AWS variables, as boto3 reads them: ``AWS_REGION``, ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` or ``AWS_BEARER_TOKEN_BEDROCK``); ``--cloud vertex`` uses
``anthropic.AnthropicVertex()`` (``CLOUD_ML_REGION``, ``ANTHROPIC_VERTEX_PROJECT_ID``,
and an OAuth token from gcloud's ``CLOUDSDK_AUTH_ACCESS_TOKEN``, standing in for
application default credentials). Everything else is the same agent.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import anthropic

MODEL = "claude-sonnet-4-6"
MAX_TOKENS = 1024
MAX_ROUNDS = 8
WEATHER: dict[str, dict[str, Any]] = {
    "paris": {"forecast": "cloudy", "celsius": 18},
    "lyon": {"forecast": "rain", "celsius": 15},
    "london": {"forecast": "fog", "celsius": 12},
    "tokyo": {"forecast": "clear", "celsius": 26},
    "berlin": {"forecast": "windy", "celsius": 14},
}
TOOLS: list[Any] = [
    {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]
SYSTEM = "You are a weather assistant. Use get_weather for every city you are asked about."


class NoFinalAnswer(Exception):
    """The model kept calling tools for MAX_ROUNDS calls."""


def get_weather(city: str) -> str:
    """The tool, local and deterministic; its result goes back to the model as compact JSON text."""
    result = WEATHER.get(city.strip().lower(), {"error": f"no weather data for {city}"})
    return json.dumps({"city": city, **result}, separators=(",", ":"))


def run_tool(name: str, tool_input: Any) -> str:
    if name != "get_weather":
        return json.dumps({"error": f"unknown tool {name}"})
    return get_weather(str((tool_input or {}).get("city", "")))


def make_client(cloud: str) -> Any:
    """The client for ``cloud``: Anthropic's API, Amazon Bedrock or Google Vertex AI (the same Messages calls)."""
    if cloud == "bedrock":
        return anthropic.AnthropicBedrock()
    if cloud == "vertex":
        return anthropic.AnthropicVertex(access_token=os.environ.get("CLOUDSDK_AUTH_ACCESS_TOKEN"))
    return anthropic.Anthropic()


def ask(client: Any, messages: list[Any], *, stream: bool, model: str = MODEL) -> Any:
    """One model call; returns the complete assistant message (a stream is accumulated by the SDK helper)."""
    if not stream:
        return client.messages.create(model=model, max_tokens=MAX_TOKENS, system=SYSTEM, messages=messages, tools=TOOLS)
    with client.messages.stream(model=model, max_tokens=MAX_TOKENS, system=SYSTEM, messages=messages, tools=TOOLS) as events:
        for text in events.text_stream:
            print(text, end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        return events.get_final_message()


def run(question: str, *, stream: bool = False, cloud: str = "anthropic", model: str = MODEL) -> str:
    client = make_client(cloud)
    messages: list[Any] = [{"role": "user", "content": question}]
    for _ in range(MAX_ROUNDS):
        message = ask(client, messages, stream=stream, model=model)
        uses = [b for b in message.content if b.type == "tool_use"]
        if message.stop_reason != "tool_use" or not uses:
            return "".join(b.text for b in message.content if b.type == "text")
        echoed: list[Any] = []
        for block in message.content:
            if block.type == "text":
                echoed.append({"type": "text", "text": block.text})
            elif block.type == "tool_use":
                echoed.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.input})
        messages.append({"role": "assistant", "content": echoed})
        results = []
        for use in uses:
            result = run_tool(use.name, use.input)
            print(f"tool {use.name}({json.dumps(use.input)}) -> {result}", file=sys.stderr)
            results.append({"type": "tool_result", "tool_use_id": use.id, "content": result})
        messages.append({"role": "user", "content": results})
    raise NoFinalAnswer(f"no final answer after {MAX_ROUNDS} model calls")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--stream", action="store_true", help="stream each model call")
    parser.add_argument("--cloud", choices=("anthropic", "bedrock", "vertex"), default="anthropic", help="whose API carries the calls")
    parser.add_argument("--model", default=MODEL, help=f"the model (default {MODEL})")
    args = parser.parse_args(argv)
    try:
        answer = run(args.question, stream=args.stream, cloud=args.cloud, model=args.model)
    except anthropic.AnthropicError as exc:
        print(f"anthropic_weather_agent: API error: {exc}", file=sys.stderr)
        return 1
    except NoFinalAnswer as exc:
        print(f"anthropic_weather_agent: {exc}", file=sys.stderr)
        return 2
    print(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
