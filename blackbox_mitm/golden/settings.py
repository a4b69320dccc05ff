"""A golden's own replay settings: the masks and pace given to ``golden add``, kept beside it.

``blackbox golden add RUN.json --mask REGEX --pace recorded`` copies the
cassette in as ``<name>.json`` and writes ``<name>.blackbox.toml`` beside it
(keys of the project config: ``mask``, ``no_mask``, ``default_masks``, ``pace``).
``blackbox test`` replays that golden with those settings added to its own
flags (``replay_flags``), so a golden that needs a mask passes wherever it is
tested. Redaction rules are not kept here: they belong to the project (its
config, or ``blackbox test --redact``), as they did when the run was recorded.
The file is plain TOML, read with ``tomllib``; the cassette is never changed.
``SuiteSettings`` adds ``blackbox test``'s own flags, for a golden replayed by its
own ``blackbox replay`` (``replay_args``) or by the suite's shared proxy
(``session_options``). The suite's ``--no-mask NAME`` leaves NAME out of each golden
that has such a mask; a name that no golden, config or built-in rule has is refused
(``unknown_no_mask``).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blackbox_mitm.config import ConfigError, ProjectConfig, effective_settings

__all__ = ["SUFFIX", "SuiteSettings", "read_settings", "replay_flags", "settings_path", "write_settings"]

SUFFIX = ".blackbox.toml"


def settings_path(golden: Path) -> Path:
    """``<folder>/<name>.blackbox.toml`` for ``<folder>/<name>.json``."""
    return golden.with_name(golden.name.removesuffix(".json") + SUFFIX)


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a TOML basic string (same escapes)


def write_settings(
    golden: Path, *, masks: Sequence[str] = (), pace: str | None = None, default_masks: bool = True, no_mask: Sequence[str] = ()
) -> Path | None:
    """Write the golden's settings (checked first: a bad pattern raises ``ConfigError``); None and no file when there are none."""
    values: dict[str, Any] = {}
    if masks:
        values["mask"] = list(masks)
    if no_mask:
        values["no_mask"] = list(dict.fromkeys(no_mask))
    if pace is not None:
        values["pace"] = pace
    if not default_masks:
        values["default_masks"] = False
    path = settings_path(golden)
    effective_settings(ProjectConfig(path, "", values))  # raises ConfigError naming the bad value
    if not values:
        path.unlink(missing_ok=True)
        return None
    lines = ["# replay settings of this golden, written by `blackbox golden add` (blackbox test uses them)"]
    if "mask" in values:
        lines.append("mask = [" + ", ".join(_toml_string(p) for p in values["mask"]) + "]")
    if "no_mask" in values:
        lines.append("no_mask = [" + ", ".join(_toml_string(n) for n in values["no_mask"]) + "]")
    if "pace" in values:
        lines.append(f"pace = {_toml_string(str(values['pace']))}")
    if "default_masks" in values:
        lines.append("default_masks = false")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read_settings(golden: Path) -> dict[str, Any]:
    """The settings kept beside a golden ({} when there are none); ``ConfigError`` when the file is not usable."""
    path = settings_path(golden)
    if not path.is_file():
        return {}
    try:
        values = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: the golden's settings cannot be read ({exc}); fix or delete the file") from exc
    unknown = sorted(set(values) - {"mask", "no_mask", "pace", "default_masks"})
    if unknown:
        raise ConfigError(f"{path}: unknown key {unknown[0]!r}; a golden's settings are mask, no_mask, default_masks and pace")
    effective_settings(ProjectConfig(path, "", values))
    return values


def replay_flags(golden: Path) -> list[str]:
    """The ``blackbox replay`` flags that apply a golden's settings."""
    return _flags(read_settings(golden))


def _flags(values: dict[str, Any]) -> list[str]:
    flags: list[str] = []
    for pattern in values.get("mask", []):
        flags += ["--mask", pattern if isinstance(pattern, str) else str(pattern.get("pattern"))]
    for name in values.get("no_mask", []):
        flags += ["--no-mask", name]
    if "pace" in values:
        flags += ["--pace", str(values["pace"])]
    if values.get("default_masks") is False:
        flags.append("--no-default-masks")
    return flags


@dataclass(frozen=True, slots=True)
class SuiteSettings:
    """``blackbox test``'s own --mask / --no-mask / --no-default-masks / --redact / --pace, applied to every golden with its own settings."""

    masks: tuple[str, ...] = ()
    no_default_masks: bool = False
    redact: tuple[str, ...] = ()
    pace: str | None = None
    order_gap: str | None = None
    no_env_substitution: bool = False
    no_mask: tuple[str, ...] = ()

    def _no_mask_for(self, values: dict[str, Any]) -> list[str]:
        """The suite's --no-mask names that this golden (its settings, the config, the built-in rules) has a mask of."""
        if not self.no_mask:
            return []
        own = effective_settings(masks=[*values.get("mask", []), *self.masks], no_mask=values.get("no_mask", []))
        known = own.mask_names_known
        return [name for name in self.no_mask if name in known]

    def unknown_no_mask(self, goldens: Sequence[Path]) -> str | None:
        """The first suite --no-mask name that none of ``goldens`` has a mask of (None: every one is some golden's)."""
        known = set(self._no_mask_for({}))  # built-in rules, the config's masks and the suite's own
        left = [name for name in self.no_mask if name not in known]
        for golden in goldens:
            try:
                found = set(self._no_mask_for(read_settings(golden)))
            except ConfigError:
                continue  # that golden's settings are unusable: its own replay reports why
            left = [name for name in left if name not in found]
            if not left:
                return None
        return left[0] if left else None  # (with no goldens, only a name some rule has)

    def replay_args(self, golden: Path) -> list[str]:
        """The flags of a golden's own ``blackbox replay`` (``--proxy-per-golden``): its settings, then the suite's."""
        values = read_settings(golden)
        args = _flags(values) + [a for m in self.masks for a in ("--mask", m)] + [a for r in self.redact for a in ("--redact", r)]
        if self.pace is not None:
            args += ["--pace", self.pace]
        if self.order_gap is not None:
            args += ["--order-gap", self.order_gap]
        args += [a for n in self._no_mask_for(values) for a in ("--no-mask", n)]
        if self.no_default_masks and "--no-default-masks" not in args:
            args.append("--no-default-masks")
        if self.no_env_substitution:
            args.append("--no-env-substitution")
        return args

    def session_options(self, golden: Path) -> dict[str, Any]:
        """``replay_session`` keywords for a golden served by the suite's shared proxy (the same settings)."""
        values = read_settings(golden)
        settings = effective_settings(
            masks=[*values.get("mask", []), *self.masks],
            no_default_masks=self.no_default_masks or values.get("default_masks") is False,
            no_mask=[*values.get("no_mask", []), *self._no_mask_for(values)],
            redact=list(self.redact),
            pace=self.pace if self.pace is not None else values.get("pace"),
            order_gap=self.order_gap,
            no_env_substitution=self.no_env_substitution,
        )
        return {
            "rules": settings.rules,
            "redactor": settings.redactor,
            "pace": settings.pace.value,
            "order_gap_ms": settings.order_gap.value,
            "environment": settings.environment,
        }
