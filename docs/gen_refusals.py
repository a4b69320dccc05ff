"""Print the refusal table of docs/providers.md from the data the codecs use.

    .venv/bin/python docs/gen_refusals.py

Every row comes from ``blackbox_mitm.codecs.refusals.REFUSALS``, the table the
codecs raise from and the tests read, so the page cannot drift from the code:
rerun this and paste its output when a row changes.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from blackbox_mitm.codecs.refusals import REFUSALS

PROVIDERS = {"openai": "OpenAI", "anthropic": "Anthropic", "both": "Both"}
SIDES = {"request": "request", "response": "response", "path": "endpoint"}


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table() -> str:
    lines = [
        "| Provider | Where | Refused | Why | Row id |",
        "|---|---|---|---|---|",
    ]
    for r in REFUSALS:
        lines.append(f"| {PROVIDERS[r.provider]} | {SIDES[r.side]} | {cell(r.what)} | {cell(r.reason)} | `{r.id}` |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
