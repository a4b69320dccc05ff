"""Lists an agent writes in no fixed order (``masks.Unordered``): Gemini CLI's skills, compared sorted.

Gemini CLI finds its skills with an asynchronous glob, so two runs of the same
session may list them in two orders: in ``<available_skills>`` in its system
prompt, in ``activate_skill``'s description and in that tool's ``enum``. Under
its profile the same skills in another order match; another skill still differs.
"""

from __future__ import annotations

from typing import Any

from blackbox_mitm.matcher.digests import PieceDigester
from blackbox_mitm.matcher.masks import CompareRules
from blackbox_mitm.matcher.normalize import request_digest
from blackbox_mitm.matcher.profiles import profile_for, with_profile

GEMINI = profile_for({"user-agent": "GeminiCLI/0.32.0/gemini-2.5-pro (linux; x64)"})
RULES = with_profile(CompareRules.build(), GEMINI)


def _skill(name: str) -> str:
    return f"  <skill>\n    <name>{name}</name>\n    <description>{name} things</description>\n  </skill>"


def _request(*skills: str) -> dict[str, Any]:
    names = ", ".join(f"'{s}'" for s in skills)
    system = "You are Gemini CLI.\n<available_skills>\n" + "\n".join(_skill(s) for s in skills) + "\n</available_skills>\nBe brief."
    tool = {
        "name": "activate_skill",
        "description": f"Activates a specialized agent skill by name (Available: {names}). Returns the skill's instructions.",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string", "enum": list(skills)}}},
    }
    return {"model": "gemini-2.5-pro", "systemPrompt": system, "messages": [{"role": "user", "content": "hi"}], "tools": [tool]}


def test_gemini_clis_profile_compares_its_skills_in_any_order() -> None:
    assert GEMINI is not None and GEMINI.name == "gemini-cli"
    recorded, replayed = _request("skill-creator", "docs-writer", "pr-review"), _request("pr-review", "skill-creator", "docs-writer")
    assert request_digest(recorded, RULES) == request_digest(replayed, RULES)
    assert PieceDigester(RULES).digest(recorded) == PieceDigester(RULES).digest(replayed)  # the memoized path too


def test_without_the_profile_the_order_is_compared() -> None:
    rules = CompareRules.build()
    assert request_digest(_request("a-skill", "b-skill"), rules) != request_digest(_request("b-skill", "a-skill"), rules)


def test_another_skill_or_one_missing_still_differs() -> None:
    recorded = request_digest(_request("skill-creator", "docs-writer"), RULES)
    assert request_digest(_request("skill-creator", "pr-review"), RULES) != recorded
    assert request_digest(_request("skill-creator"), RULES) != recorded
    assert request_digest(_request("skill-creator", "docs-writer", "pr-review"), RULES) != recorded


def test_only_the_lists_are_sorted_and_what_is_served_is_untouched() -> None:
    replayed = _request("b-skill", "a-skill")
    text = RULES.mask_text(replayed["systemPrompt"])
    assert text.index("<name>a-skill</name>") < text.index("<name>b-skill</name>")
    assert text.startswith("You are Gemini CLI.\n<available_skills>\n  <skill>") and text.endswith("</available_skills>\nBe brief.")
    assert replayed["systemPrompt"].index("b-skill") < replayed["systemPrompt"].index("a-skill")  # the input is not modified
    tool = RULES._tool(replayed["tools"][0])
    assert tool["inputSchema"]["properties"]["name"]["enum"] == ["a-skill", "b-skill"]
    assert "(Available: 'a-skill', 'b-skill')" in tool["description"]
    assert replayed["tools"][0]["inputSchema"]["properties"]["name"]["enum"] == ["b-skill", "a-skill"]


def test_another_tools_enum_keeps_its_order() -> None:
    tool = {"name": "pick", "inputSchema": {"type": "object", "properties": {"x": {"enum": ["b", "a"]}}}}
    assert RULES._tool(tool)["inputSchema"]["properties"]["x"]["enum"] == ["b", "a"]
