"""A small real agent: a chat-completions tool loop over the official `openai` SDK with a local get_weather tool.

    python examples/openai_weather_agent.py "What's the weather in Paris and Lyon?" [--stream]

It is deliberately unadapted to recording: a default ``openai.OpenAI()`` (the API
key from OPENAI_API_KEY, the real https://api.openai.com/v1), so blackbox has to
reach it through HTTPS_PROXY and its CA like any third-party agent. The final
answer is the only thing on stdout; progress goes to stderr. Exit status: 0 on a
final answer, 1 on an API error, 2 when the model never finishes.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import openai

MODEL = "gpt-4.1"
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
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }
]


class NoFinalAnswer(Exception):
    """The model kept calling tools for MAX_ROUNDS calls."""


def get_weather(city: str) -> str:
    """The tool, local and deterministic; its result goes back to the model as compact JSON text."""
    result = WEATHER.get(city.strip().lower(), {"error": f"no weather data for {city}"})
    return json.dumps({"city": city, **result}, separators=(",", ":"))


def run_tool(name: str, arguments: str) -> str:
    if name != "get_weather":
        return json.dumps({"error": f"unknown tool {name}"})
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        return json.dumps({"error": "arguments are not JSON"})
    return get_weather(str(args.get("city", "")))


def ask(client: openai.OpenAI, messages: list[Any], *, stream: bool) -> Any:
    """One model call; returns the assistant message (streamed deltas are accumulated by the SDK helper)."""
    if not stream:
        return client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS).choices[0].message
    with client.chat.completions.stream(model=MODEL, messages=messages, tools=TOOLS) as events:
        for event in events:
            if event.type == "content.delta":
                print(event.delta, end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        return events.get_final_completion().choices[0].message


def run(question: str, *, stream: bool = False, cloud: str = "openai") -> str:
    # Azure: AZURE_OPENAI_ENDPOINT, AZURE_OPENAI_API_KEY and OPENAI_API_VERSION, as AzureOpenAI reads them; the model is the deployment.
    client = openai.AzureOpenAI() if cloud == "azure" else openai.OpenAI()
    messages: list[Any] = [
        {"role": "system", "content": "You are a weather assistant. Use get_weather for every city you are asked about."},
        {"role": "user", "content": question},
    ]
    for _ in range(MAX_ROUNDS):
        message = ask(client, messages, stream=stream)
        if not message.tool_calls:
            return message.content if message.content is not None else (message.refusal or "")
        calls = [
            {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in message.tool_calls
        ]
        messages.append({"role": "assistant", "content": message.content, "tool_calls": calls})
        for call in calls:
            result = run_tool(call["function"]["name"], call["function"]["arguments"])
            print(f"tool {call['function']['name']}({call['function']['arguments']}) -> {result}", file=sys.stderr)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    raise NoFinalAnswer(f"no final answer after {MAX_ROUNDS} model calls")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--stream", action="store_true", help="stream each model call")
    parser.add_argument("--cloud", choices=("openai", "azure"), default="openai", help="OpenAI's API or Azure OpenAI")
    args = parser.parse_args(argv)
    try:
        answer = run(args.question, stream=args.stream, cloud=args.cloud)
    except openai.OpenAIError as exc:
        print(f"openai_weather_agent: API error: {exc}", file=sys.stderr)
        return 1
    except NoFinalAnswer as exc:
        print(f"openai_weather_agent: {exc}", file=sys.stderr)
        return 2
    print(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
