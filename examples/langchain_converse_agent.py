"""A small real agent on LangChain's ChatBedrockConverse (langchain-aws) with a local get_weather tool.

    python examples/langchain_converse_agent.py "What's the weather in Paris and Lyon?" [--stream] [--model M]

Unadapted to recording: ``ChatBedrockConverse`` makes its own boto3
``bedrock-runtime`` client (region and credentials as boto3 reads them:
``AWS_REGION``, ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` or
``AWS_BEARER_TOKEN_BEDROCK``; the CA from ``AWS_CA_BUNDLE``) and speaks Converse
(``--stream``: ConverseStream, the chunks added up as LangChain does). Only the
final answer goes to stdout. Exit 0 on an answer, 1 on an API error, 2 when the
model never finishes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import botocore.exceptions
from langchain_aws import ChatBedrockConverse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

MODEL = "us.anthropic.claude-sonnet-4-6-v1:0"
WEATHER = {"paris": {"forecast": "cloudy", "celsius": 18}, "lyon": {"forecast": "rain", "celsius": 15}}


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return json.dumps({"city": city, **WEATHER.get(city.lower(), {"error": "unknown city"})})


def ask(model: Any, messages: list[BaseMessage], *, stream: bool) -> AIMessage:
    """One model call; a stream's chunks are added up into one message."""
    if not stream:
        answer = model.invoke(messages)
        assert isinstance(answer, AIMessage)
        return answer
    total: Any = None
    for chunk in model.stream(messages):
        total = chunk if total is None else total + chunk
    return AIMessage(content=total.content, tool_calls=total.tool_calls)


def _text(message: AIMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(b.get("text", "") for b in message.content if isinstance(b, dict) and b.get("type") == "text")


def run(question: str, *, stream: bool, model_id: str) -> str:
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    model = ChatBedrockConverse(model=model_id, region_name=region, max_tokens=512, temperature=0).bind_tools([get_weather])
    messages: list[BaseMessage] = [SystemMessage("Use get_weather for every city."), HumanMessage(question)]
    for _ in range(6):
        answer = ask(model, messages, stream=stream)
        if not answer.tool_calls:
            return _text(answer)
        messages.append(answer)
        for call in answer.tool_calls:
            print(f"tool {call['name']}({json.dumps(call['args'])})", file=sys.stderr)
            messages.append(ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"]))
    raise RuntimeError("the model never finished")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--stream", action="store_true", help="ConverseStream instead of Converse")
    parser.add_argument("--model", default=MODEL)
    args = parser.parse_args(argv)
    try:
        print(run(args.question, stream=args.stream, model_id=args.model))
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
        print(f"langchain_converse_agent: API error: {exc}", file=sys.stderr)
        return 1
    except RuntimeError as exc:
        print(f"langchain_converse_agent: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
