"""A small real agent over the official ``openai`` SDK's Responses API, with a local get_weather tool.

    python responses_agent.py MODE "What's the weather in Paris and Lyon?"

MODE says how it keeps the conversation and reads answers:

* ``create``  — ``responses.create``, the whole history sent every turn (output items echoed back);
* ``stream``  — the same through the ``responses.stream(...)`` helper, deltas printed to stderr;
* ``chain``   — ``previous_response_id``: each turn sends only its new items (tool outputs);
* ``events``  — ``responses.create(stream=True)``, adding up the raw events itself, chained.

Unadapted to recording: a default ``OpenAI()`` (OPENAI_API_KEY, https://api.openai.com/v1).
Only the final answer and the number of model calls go to stdout; progress to stderr. Exit 0 on an answer, 1 on an API error.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import openai

MODEL = "gpt-4.1"
WEATHER = {"paris": ("cloudy", 18), "lyon": ("rain", 15), "london": ("fog", 12), "tokyo": ("clear", 26)}
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False},
        "strict": True,
    }
]


def get_weather(arguments: str) -> str:
    city = json.loads(arguments or "{}").get("city", "")
    forecast, celsius = WEATHER.get(city.strip().lower(), ("unknown", 0))
    return json.dumps({"city": city, "forecast": forecast, "celsius": celsius})


def ask(client: openai.OpenAI, mode: str, items: list[Any], previous: str | None) -> Any:
    kwargs: dict[str, Any] = {"model": MODEL, "input": items, "tools": TOOLS, "instructions": "You are a weather agent."}
    if previous is not None:
        kwargs["previous_response_id"] = previous
    if mode == "stream":
        with client.responses.stream(**kwargs) as stream:
            for event in stream:
                if event.type == "response.output_text.delta":
                    print(event.delta, end="", file=sys.stderr, flush=True)
            return stream.get_final_response()
    if mode == "events":
        final = None
        arguments: dict[int, str] = {}
        for event in client.responses.create(stream=True, **kwargs):
            if event.type == "response.function_call_arguments.delta":
                arguments[event.output_index] = arguments.get(event.output_index, "") + event.delta
            elif event.type == "response.completed":
                final = event.response
        assert final is not None, "the stream ended without response.completed"
        calls = [i for i in final.output if i.type == "function_call"]
        assert [c.arguments for c in calls] == [arguments[k] for k in sorted(arguments)], "deltas add up to the arguments"
        return final
    return client.responses.create(**kwargs)


def main() -> int:
    mode, question = sys.argv[1], sys.argv[2]
    # Azure OpenAI when AZURE_OPENAI_ENDPOINT is set (AzureOpenAI reads it, AZURE_OPENAI_API_KEY and OPENAI_API_VERSION).
    client = openai.AzureOpenAI(max_retries=0) if os.environ.get("AZURE_OPENAI_ENDPOINT") else openai.OpenAI(max_retries=0)
    history: list[Any] = [{"role": "user", "content": question}]
    new: list[Any] = list(history)
    previous: str | None = None
    seen: list[str] = []
    try:
        for _ in range(6):
            chained = mode in ("chain", "events")
            response = ask(client, mode, new if chained else history, previous)
            seen.append(response.id)
            calls = [item for item in response.output if item.type == "function_call"]
            if not calls:
                print(f"answer: {response.output_text}")
                print(f"model calls: {len(seen)}")
                return 0
            outputs = []
            for call in calls:
                print(f"tool {call.name}({call.arguments})", file=sys.stderr)
                outputs.append({"type": "function_call_output", "call_id": call.call_id, "output": get_weather(call.arguments)})
            history += [item.model_dump(exclude_none=True) for item in response.output] + outputs
            new, previous = outputs, (response.id if chained else None)
    except openai.APIError as exc:
        print(f"API error: {exc}", file=sys.stderr)
        return 1
    print("the model never finished", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
