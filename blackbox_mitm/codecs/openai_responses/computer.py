"""Computer use on the Responses API: an ordinary tool round the client executes.

* The tool (``{"type": "computer_use_preview", display_width, display_height,
  environment}`` or ``{"type": "computer"}``) is a provider-defined tool definition,
  named by its type, its options kept (``builtin``).
* A ``computer_call`` output item is a neutral tool call named ``TOOL_NAME``
  (``"computer"``) whose ``toolInput`` is the item without its ids and status: the
  ``action`` (or ``actions``) and the ``pending_safety_checks`` with their ids
  dropped (an id the provider made; a replay gives each check one of our own,
  ``cu_sc_bb<N>_<k>``). Its ``call_id`` maps to ``call-N`` like a function call's;
  a replay serves a ``computer_call`` (id ``cu_bb<N>``) when the request declared a
  computer tool.
* The client's ``computer_call_output`` item is a ``tool_result`` whose ``result`` is
  the screenshot as a media part (by digest; a ``file_id`` or URL as the reference).
  Its ``acknowledged_safety_checks`` (ids dropped, like the pending ones) are kept
  on the part as ``safetyChecks``: compared, since the model sees them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from blackbox_mitm.codecs.openai_responses import REFUSALS

__all__ = ["CALL", "OUTPUT", "TOOLS", "TOOL_NAME", "call_input", "call_item", "declared", "result_part"]

TOOLS = frozenset({"computer", "computer_use", "computer_use_preview"})
CALL: Final = "computer_call"
OUTPUT: Final = "computer_call_output"
TOOL_NAME: Final = "computer"
_NOT_INPUT = ("id", "type", "call_id", "status")


def _checks(raw: Any, where: str) -> list[dict[str, Any]]:
    """Safety checks without their provider-made ids."""
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(c, dict) for c in raw):
        REFUSALS.malformed(where, "safety checks are not a list of objects")
    return [{k: v for k, v in check.items() if k != "id" and v is not None} for check in raw]


def call_input(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A computer_call's neutral toolInput: its action(s) and pending safety checks (ids dropped)."""
    if not isinstance(item.get("action"), dict) and not isinstance(item.get("actions"), list):
        REFUSALS.malformed(f"{where}.action", "a computer_call without an action")
    out = {k: v for k, v in item.items() if k not in _NOT_INPUT and v is not None}
    out["pending_safety_checks"] = _checks(item.get("pending_safety_checks"), f"{where}.pending_safety_checks")
    return out


def call_item(served_call_id: str, tool_input: Mapping[str, Any]) -> dict[str, Any]:
    """The computer_call a replay serves: our ids, the recorded action, checks with ids of our own."""
    suffix = served_call_id.removeprefix("call_bb")
    checks = tool_input.get("pending_safety_checks")
    given = checks if isinstance(checks, list) else []
    rest = {k: v for k, v in tool_input.items() if k != "pending_safety_checks"}
    item: dict[str, Any] = {"id": f"cu_bb{suffix}", "type": CALL, "status": "completed", "call_id": served_call_id, **rest}
    item["pending_safety_checks"] = [{"id": f"cu_sc_bb{suffix}_{k}", **dict(c)} for k, c in enumerate(given) if isinstance(c, dict)]
    return item


def result_part(item: Mapping[str, Any], where: str, media_of: Callable[[dict[str, Any], str], Any]) -> tuple[Any, list[dict[str, Any]]]:
    """(the screenshot as neutral content, the acknowledged checks without ids) of a computer_call_output."""
    output = item.get("output")
    if not isinstance(output, dict) or output.get("type") not in ("computer_screenshot", "input_image"):
        REFUSALS.malformed(f"{where}.output", "a computer_call_output's output is not a computer_screenshot")
    image = {"type": "input_image", **{k: v for k, v in output.items() if k in ("image_url", "file_id", "detail")}}
    checks = _checks(item.get("acknowledged_safety_checks"), f"{where}.acknowledged_safety_checks")
    return [media_of(image, f"{where}.output")], checks


def declared(tools: Any) -> bool:
    """Whether the request's neutral tools hold a computer tool."""
    return any(isinstance(t, dict) and t.get("name") in TOOLS and "builtin" in t for t in tools or [])
