"""A weather agent with knobs, to make it leave its recorded path on purpose (divergence tests).

    python knobs_agent.py "question" [--temperature T] [--describe TEXT] [--drop-system]
                                     [--stop-after N] [--extra-call] [--twins] [--forget-results]

--stop-after N   stop after N model calls (an agent that stops early)
--extra-call     ask one more question after the answer (an agent that overruns)
--twins          send two identical requests at once from two threads, print both answers
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from typing import Any

import openai
from openai.types.chat import ChatCompletionFunctionToolParam

SYSTEM = "You are a weather assistant. Use get_weather for every city you are asked about."
WEATHER = {"paris": {"forecast": "cloudy", "celsius": 18}, "lyon": {"forecast": "rain", "celsius": 15}}


def tools(description: str) -> list[ChatCompletionFunctionToolParam]:
    schema: dict[str, object] = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    return [{"type": "function", "function": {"name": "get_weather", "description": description, "parameters": schema}}]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("question")
    p.add_argument("--temperature", type=float, default=None)
    p.add_argument("--describe", default="Current weather for a city.")
    p.add_argument("--drop-system", action="store_true")
    p.add_argument("--stop-after", type=int, default=None)
    p.add_argument("--extra-call", action="store_true")
    p.add_argument("--twins", action="store_true")
    p.add_argument("--forget-results", action="store_true", help="leave the tool results out of the next request")
    a = p.parse_args()
    client = openai.OpenAI(max_retries=0)
    extra: dict[str, Any] = {} if a.temperature is None else {"temperature": a.temperature}
    messages: list[Any] = [] if a.drop_system else [{"role": "system", "content": SYSTEM}]
    messages.append({"role": "user", "content": a.question})

    def ask(msgs: list[Any]) -> Any:
        return client.chat.completions.create(model="gpt-4.1", messages=msgs, tools=tools(a.describe), **extra).choices[0].message

    try:
        if a.twins:
            answers: list[str] = []
            threads = [threading.Thread(target=lambda: answers.append(ask(messages).content or "")) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            print("\n".join(sorted(answers)))
            return 0 if len(answers) == 2 else 1
        calls = 0
        while True:
            if a.stop_after is not None and calls >= a.stop_after:
                print("stopped early")
                return 0
            message = ask(messages)
            calls += 1
            if not message.tool_calls:
                print(message.content)
                break
            messages.append({"role": "assistant", "content": message.content, "tool_calls": [c.model_dump() for c in message.tool_calls]})
            if a.forget_results:
                continue
            for c in message.tool_calls:
                city = json.loads(c.function.arguments).get("city", "").lower()
                messages.append({"role": "tool", "tool_call_id": c.id, "content": json.dumps(WEATHER.get(city, {}))})
        if a.extra_call:
            messages.append({"role": "assistant", "content": message.content})
            messages.append({"role": "user", "content": "And tomorrow?"})
            print(ask(messages).content)
    except openai.APIStatusError as exc:
        print(f"knobs_agent: {exc.status_code}: {exc.message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
