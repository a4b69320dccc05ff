"""examples/gemini_weather_agent.py run once per mode in one process (one SDK import): each answer after a ``== MODE`` line.

python tests/e2e/agents/gemini_modes.py QUESTION MODE...   (MODE: generate, stream, manual, auto)

Exits with the first non-zero status the agent returns (and runs no later mode).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
from gemini_weather_agent import main

if __name__ == "__main__":
    question, *modes = sys.argv[1:]
    for mode in modes:
        print("==", mode, flush=True)
        status = main([question, "--mode", mode])
        sys.stdout.flush()
        if status:
            sys.exit(status)
