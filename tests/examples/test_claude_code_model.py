"""The scripted Claude Code model (examples/claude_code_model.py): its answers do not depend on what finished first."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))

from claude_code_model import respond  # noqa: E402


def _image_turn(results_in: list[str]) -> dict[str, Any]:
    """The second request of the BB-IMAGE session, its two Read results in the order given (ids of the calls)."""
    blocks = {
        "toolu_png": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}],
        "toolu_pdf": [{"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
                      {"type": "text", "text": "PDF file read"}],
    }  # fmt: skip
    return {
        "messages": [
            {"role": "user", "content": "BB-IMAGE: what is in img.png and doc.pdf?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "I'll look at both."},
                    {"type": "tool_use", "id": "toolu_png", "name": "Read", "input": {"file_path": "/w/img.png"}},
                    {"type": "tool_use", "id": "toolu_pdf", "name": "Read", "input": {"file_path": "/w/doc.pdf"}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": blocks[i]} for i in results_in]},
        ]
    }


def test_the_image_task_names_the_read_results_in_the_order_it_asked_for_them() -> None:
    asked_order = respond("anthropic", _image_turn(["toolu_png", "toolu_pdf"]))
    finished_order = respond("anthropic", _image_turn(["toolu_pdf", "toolu_png"]))  # the PDF's Read finished first
    assert asked_order["text"] == finished_order["text"] == "The Read results held: image, document+text."
