"""A pydantic-ai weather agent on its default ``openai:`` model class (the Responses API).

    python pydantic_ai_weather.py run|stream "What's the weather in Paris and Lyon?" [MODE QUESTION ...]

``run`` is ``Agent.run_sync``; ``stream`` is ``Agent.run_stream`` with its text read
as it comes. Several MODE QUESTION pairs are run one after the other in the one
process (one import of pydantic-ai for several runs), each output on its line. Nothing is configured for recording: pydantic-ai's default OpenAI
provider (OPENAI_API_KEY, https://api.openai.com/v1). The output goes to stdout.
"""

from __future__ import annotations

import asyncio
import sys

from pydantic_ai import Agent

WEATHER = {"paris": "cloudy, 18°C", "lyon": "rain, 15°C", "tokyo": "clear, 26°C"}

agent = Agent("openai:gpt-4.1", instructions="You answer weather questions with the get_weather tool.")


@agent.tool_plain
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return WEATHER.get(city.strip().lower(), "unknown")


async def streamed(question: str) -> str:
    async with agent.run_stream(question) as run:
        pieces = [piece async for piece in run.stream_output(debounce_by=None)]
        assert pieces, "no streamed output"
        return await run.get_output()


if __name__ == "__main__":
    for mode, question in zip(sys.argv[1::2], sys.argv[2::2], strict=True):
        print(agent.run_sync(question).output if mode == "run" else asyncio.run(streamed(question)))
