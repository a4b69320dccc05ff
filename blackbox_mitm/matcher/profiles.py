"""Agent profiles: built-in mask sets for one agent program, chosen by the request's ``User-Agent``.

Environment substitution (``session.environment``) makes a run's directories,
home, user, host and dates the same at record and at replay. What still varies
between two machines is the agent's own: the OS and kernel version Claude Code
puts in its environment block, the version line of a build. Those are masked
by the agent's profile, which a replay turns on when the agent's first model
call names it in its ``User-Agent`` (``claude-cli/2.1.3 (external, cli)``,
``codex_exec/0.1``, ``GeminiCLI/0.9.0``, ``opencode/1.0``). The built-in masks
(``matcher.masks``) stay on for every agent, as before; a profile adds its own
to them. ``blackbox masks`` lists both.

Every profile mask is written for RE2 too (no lookarounds, no backreferences):
it masks its label with its value, which is the same text on both sides.

A profile also names the labels its agent writes a provider's own id after, in
its system prompt (``Profile.labelled_ids``: Claude Code's billing line quotes
``cc_prev_req=req_011…;`` and ``cc_prev_msg=msg_01…;``). ``LABELLED`` matches
those labels' values in every profile; ``session.echoed_ids`` replaces each by
``<provider-id>`` at record and at replay alike, so the ids never enter a cassette.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from blackbox_mitm.matcher.masks import BUILT_IN_MASKS, CompareRules, Mask
from blackbox_mitm.matcher.unordered import Unordered

__all__ = [
    "LABELLED",
    "LABELS",
    "PROFILES",
    "PROVIDER_ID",
    "Profile",
    "background_profile",
    "profile_for",
    "rule_names",
    "with_profile",
]

PROVIDER_ID = "<provider-id>"  # what a labelled provider id is written as


@dataclass(frozen=True, slots=True)
class Profile:
    """One agent program: the ``User-Agent`` prefixes it sends and the masks its replays add."""

    name: str
    user_agents: tuple[str, ...]  # lower-case prefixes of the header's value
    masks: tuple[Mask, ...]
    about: str
    # Requests the agent makes on its own timer, which a run may or may not get to before it exits
    # ("METHOD https://host/path-prefix"): at replay one the recording lacks is refused, and is not a divergence.
    background: tuple[str, ...] = ()
    # Labels the agent writes a provider's own id right after, in its system prompt ("cc_prev_req="):
    # the id is written PROVIDER_ID at record and at replay (``LABELLED``, session/echoed_ids.py).
    labelled_ids: tuple[str, ...] = ()
    # Lists the agent writes in no fixed order from one run to the next: compared sorted (``masks.Unordered``).
    unordered: tuple[Unordered, ...] = ()

    def matches(self, user_agent: str) -> bool:
        return user_agent.strip().lower().startswith(self.user_agents)

    def makes_in_background(self, method: str, url: str) -> bool:
        asked = f"{method.upper()} {url}"
        return any(asked.startswith(prefix) for prefix in self.background)


def _mask(name: str, pattern: str, needs: str, about: str) -> Mask:
    return Mask(name, pattern, source="built-in profile", about=about, needs=(needs,))


PROFILES: tuple[Profile, ...] = (
    Profile(
        "claude-code",
        ("claude-cli/", "claude-code/"),
        (
            _mask(
                "claude-code.os-version",
                r"OS Version: [^\n]{1,200}",
                "OS Version: ",
                "the OS and kernel version in Claude Code's environment block (OS Version: Linux 6.1.0-…): another machine",
            ),
            _mask(
                "claude-code.cc-version",
                r"cc_version=[0-9A-Za-z._-]{1,40}",
                "cc_version=",
                "the version in Claude Code's billing line, with its suffix (cc_version=2.1.332.95a): the suffix is not the same everywhere",
            ),
        ),
        "Claude Code (User-Agent claude-cli/…)",
        labelled_ids=("cc_prev_req=", "cc_prev_msg="),  # its billing line: the previous answer's request and message ids
    ),
    Profile(
        "codex",
        ("codex_", "codex/"),
        (),
        "Codex CLI (User-Agent codex_exec/…, codex_cli_rs/…): nothing beyond env substitution and codex.wall-time varied",
        # Seen in recordings: its plugin catalogue and repository, fetched beside the first turn, and its metrics.
        # A short `codex exec` often exits before they are sent, so a replay may make one its recording lacks.
        background=(
            "GET https://chatgpt.com/backend-api/plugins/",
            "GET https://api.github.com/repos/openai/plugins",
            "POST https://ab.chatgpt.com/otlp/",
        ),
    ),
    Profile(
        "gemini-cli",
        ("geminicli/", "geminicli-"),  # GeminiCLI-<client>/… when it names its client: GeminiCLI-tui/0.61.0/… from the terminal
        (),
        "Gemini CLI (User-Agent GeminiCLI/… or GeminiCLI-tui/…): its skills list, in the order its file search found them",
        # It finds its skills (SKILL.md files) with an asynchronous glob: the order of <available_skills> in its
        # system prompt, of the names in activate_skill's description and of that tool's enum changes between runs.
        unordered=(
            Unordered(
                "gemini-cli.skills",
                r"<available_skills>\n(?P<mask>(?s:.*?))\n</available_skills>",
                r"(?s)<skill>.*?</skill>",
                needs=("<available_skills>",),
                about="the <skill> entries of Gemini CLI's <available_skills>, in no fixed order",
            ),
            Unordered(
                "gemini-cli.skill-names",
                r"\(Available: (?P<mask>'[^']*'(?:, '[^']*')*)\)",
                r"'[^']*'",
                needs=("(Available: ",),
                tools=("activate_skill",),
                about="the skill names in Gemini CLI's activate_skill tool (its description and its enum), in no fixed order",
            ),
        ),
    ),
    Profile(
        "opencode",
        ("opencode/",),
        (),
        "opencode (User-Agent opencode/…): nothing beyond env substitution varied",
    ),
)

# Every profile's labels, and the pattern of a label followed by a provider id (8 or more token characters)
# not yet replaced; group 1 is the label.
LABELS: tuple[str, ...] = tuple(label for p in PROFILES for label in p.labelled_ids)
LABELLED = re.compile(
    r"(?<![A-Za-z0-9_])(" + "|".join(re.escape(label) for label in LABELS) + ")(?!" + re.escape(PROVIDER_ID) + r")[A-Za-z0-9_-]{8,}"
)


def profile_for(headers: Mapping[str, str]) -> Profile | None:
    """The profile of the agent that sent a request with these (lower-case) headers, if any."""
    user_agent = headers.get("user-agent", "")
    return next((p for p in PROFILES if p.matches(user_agent)), None) if user_agent else None


def background_profile(method: str, url: str) -> Profile | None:
    """The profile whose agent makes this request on its own timer (``Profile.background``), if any."""
    return next((p for p in PROFILES if p.makes_in_background(method, url)), None)


def rule_names() -> tuple[str, ...]:
    """The names of every built-in rule: the built-in masks, then each profile's masks and unordered lists (``--no-mask``)."""
    own = [m.name for p in PROFILES for m in p.masks] + [u.name for p in PROFILES for u in p.unordered]
    return (*(m.name for m in BUILT_IN_MASKS), *own)


def with_profile(rules: CompareRules, profile: Profile | None) -> CompareRules:
    """``rules`` plus ``profile``'s masks and unordered lists but those turned off (``rules.off``), when the built-in masks
    are on (``--no-default-masks`` turns profiles off too)."""
    if profile is None or not (profile.masks or profile.unordered) or not rules.profiles:
        return rules
    have = {m.name for m in rules.masks}
    extra = tuple(m for m in profile.masks if m.name not in have and m.name not in rules.off)
    unordered = tuple(u for u in profile.unordered if u not in rules.unordered and u.name not in rules.off)
    if not extra and not unordered:
        return rules
    return replace(rules, masks=rules.masks + extra, unordered=rules.unordered + unordered)
