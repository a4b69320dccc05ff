"""A small real agent on Amazon Bedrock's Converse API: boto3's bedrock-runtime client with a local get_weather tool.

    python examples/converse_weather_agent.py "What's the weather in Paris and Lyon?" [--stream] [--model M]

Unadapted to recording: a default ``boto3.client("bedrock-runtime")`` (region and
credentials as boto3 reads them: ``AWS_REGION``, ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` or ``AWS_BEARER_TOKEN_BEDROCK``; the CA from
``AWS_CA_BUNDLE``). Only the final answer goes to stdout. Exit 0 on an answer,
1 on an API error, 2 when the model never finishes.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import boto3
import botocore.exceptions

MODEL = "us.anthropic.claude-sonnet-4-6-v1:0"
WEATHER = {"paris": {"forecast": "cloudy", "celsius": 18}, "lyon": {"forecast": "rain", "celsius": 15}}
TOOLS = {
    "tools": [
        {
            "toolSpec": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
            }
        }
    ]
}


def ask(client: Any, model: str, messages: list[Any], *, stream: bool) -> tuple[list[Any], str]:
    """One model call: (the assistant's content blocks, its stopReason); a stream is put together here."""
    args = {"modelId": model, "messages": messages, "system": [{"text": "Use get_weather for every city."}], "toolConfig": TOOLS}
    if not stream:
        out = client.converse(**args, inferenceConfig={"maxTokens": 512})
        return out["output"]["message"]["content"], out["stopReason"]
    blocks: dict[int, Any] = {}
    stop = ""
    for event in client.converse_stream(**args, inferenceConfig={"maxTokens": 512})["stream"]:
        if "contentBlockStart" in event:
            use = event["contentBlockStart"]["start"]["toolUse"]
            blocks[event["contentBlockStart"]["contentBlockIndex"]] = {"toolUse": {**use, "input": ""}}
        elif "contentBlockDelta" in event:
            i, delta = event["contentBlockDelta"]["contentBlockIndex"], event["contentBlockDelta"]["delta"]
            if "text" in delta:
                blocks.setdefault(i, {"text": ""})["text"] += delta["text"]
            elif "toolUse" in delta:
                blocks[i]["toolUse"]["input"] += delta["toolUse"]["input"]
        elif "messageStop" in event:
            stop = event["messageStop"]["stopReason"]
    content = [
        b if "text" in b else {"toolUse": {**b["toolUse"], "input": json.loads(b["toolUse"]["input"] or "{}")}}
        for _, b in sorted(blocks.items())
    ]
    return content, stop


def run(question: str, *, stream: bool, model: str) -> str:
    client = boto3.client("bedrock-runtime")
    messages: list[Any] = [{"role": "user", "content": [{"text": question}]}]
    for _ in range(6):
        content, stop = ask(client, model, messages, stream=stream)
        uses = [b["toolUse"] for b in content if "toolUse" in b]
        if stop != "tool_use" or not uses:
            return "".join(b.get("text", "") for b in content)
        messages.append({"role": "assistant", "content": content})
        results = []
        for use in uses:
            city = str(use["input"].get("city", ""))
            data = {"city": city, **WEATHER.get(city.lower(), {"error": "unknown city"})}
            print(f"tool {use['name']}({json.dumps(use['input'])})", file=sys.stderr)
            results.append({"toolResult": {"toolUseId": use["toolUseId"], "content": [{"json": data}]}})
        messages.append({"role": "user", "content": results})
    raise RuntimeError("the model never finished")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--stream", action="store_true", help="converse_stream instead of converse")
    parser.add_argument("--model", default=MODEL)
    args = parser.parse_args(argv)
    try:
        print(run(args.question, stream=args.stream, model=args.model))
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
        print(f"converse_weather_agent: API error: {exc}", file=sys.stderr)
        return 1
    except RuntimeError as exc:
        print(f"converse_weather_agent: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
