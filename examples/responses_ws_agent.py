"""A small real agent over the Responses API's WebSocket mode, with a local get_weather tool.

    python examples/responses_ws_agent.py "What's the weather in Paris?" [--no-warm-up]

It speaks the socket as Codex CLI does: ``wss://api.openai.com/v1/responses``
(the key from OPENAI_API_KEY; HTTPS_PROXY and SSL_CERT_FILE as any client), a
``generate: false`` warm-up, then ``response.create`` turns that send only the
new items plus ``previous_response_id``, with ``store: false`` (so the
responses exist only on this socket). The final answer is the only thing on
stdout; progress goes to stderr. Exit status: 0 on a final answer, 1 on an
error frame or a closed socket, 2 when the model never finishes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect
from websockets.sync.connection import Connection

MODEL = "gpt-4.1"
URL = "wss://api.openai.com/v1/responses"
MAX_ROUNDS = 6
WEATHER = {"paris": "cloudy, 18°C", "lyon": "rain, 15°C", "tokyo": "clear, 26°C"}
TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False},
    }
]


def get_weather(arguments: str) -> str:
    city = str(json.loads(arguments or "{}").get("city", ""))
    return WEATHER.get(city.lower(), "unknown city")


def turn(ws: Connection, body: dict[str, Any]) -> dict[str, Any]:
    """Send one response.create; return the completed response (raises on an error frame)."""
    ws.send(json.dumps({"type": "response.create", "model": MODEL, "store": False, **body}))
    while True:
        event = json.loads(ws.recv(timeout=60))
        if event.get("type") == "error":
            raise RuntimeError(f"error frame: {json.dumps(event)}")
        if event.get("type") in ("response.completed", "response.incomplete", "response.failed"):
            return dict(event["response"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("question")
    parser.add_argument("--no-warm-up", action="store_true", help="start with the question (no generate: false warm-up)")
    args = parser.parse_args()
    headers = {"Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}", "OpenAI-Beta": "responses_websockets=2026-02-06"}
    try:
        with connect(URL, additional_headers=headers, max_size=None, open_timeout=30) as ws:
            previous = None
            if not args.no_warm_up:
                previous = turn(ws, {"input": [], "generate": False, "tools": TOOLS})["id"]
            items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": args.question}]}]
            for _ in range(MAX_ROUNDS):
                response = turn(ws, {"input": items, "tools": TOOLS, **({"previous_response_id": previous} if previous else {})})
                calls = [o for o in response["output"] if o.get("type") == "function_call"]
                if not calls:
                    text = "".join(c.get("text", "") for o in response["output"] if o.get("type") == "message" for c in o["content"])
                    print(text)
                    return 0
                previous = response["id"]
                items = []
                for call in calls:
                    print(f"tool: get_weather({call['arguments']})", file=sys.stderr)
                    items.append({"type": "function_call_output", "call_id": call["call_id"], "output": get_weather(call["arguments"])})
    except (RuntimeError, ConnectionClosed, OSError) as exc:
        print(f"responses_ws_agent: {exc}", file=sys.stderr)
        return 1
    print("responses_ws_agent: the model never finished", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
