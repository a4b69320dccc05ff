"""An openai-agents (``agents``) weather agent with its defaults: the default model over the Responses API.

    python openai_agents_weather.py run|streamed "What's the weather in Paris and Lyon?" [MODE QUESTION ...]

``run`` is ``Runner.run``; ``streamed`` is ``Runner.run_streamed`` with its events
read as they come. Several MODE QUESTION pairs are run one after the other in the
one process (one import of the SDK for several runs), each final output on its line. Nothing is configured for recording: the SDK's default client
(OPENAI_API_KEY, https://api.openai.com/v1), its default model and its tracing.
The final output goes to stdout; the tool calls to stderr.
"""

from __future__ import annotations

import asyncio
import sys

from agents import Agent, Runner, function_tool

WEATHER = {"paris": "cloudy, 18°C", "lyon": "rain, 15°C", "tokyo": "clear, 26°C"}


@function_tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    print(f"tool get_weather({city})", file=sys.stderr)
    return WEATHER.get(city.strip().lower(), "unknown")


async def one(mode: str, question: str) -> None:
    agent = Agent(name="Weather", instructions="You answer weather questions with the get_weather tool.", tools=[get_weather])
    if mode == "run":
        result = await Runner.run(agent, question)
        print(result.final_output)
        return
    streamed = Runner.run_streamed(agent, question)
    kinds: set[str] = set()
    async for event in streamed.stream_events():
        kinds.add(event.type)
    assert "raw_response_event" in kinds, kinds
    print(streamed.final_output)


async def main(pairs: list[str]) -> int:
    for mode, question in zip(pairs[::2], pairs[1::2], strict=True):
        await one(mode, question)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
