"""The project configuration: ``[tool.blackbox]`` in ``pyproject.toml``, or a ``blackbox.toml``.

Found the way ruff and pytest find theirs: starting in the working directory
and walking up to the file system's root, the first directory holding a
``blackbox.toml`` (its top level is the table) or a ``pyproject.toml`` with a
``[tool.blackbox]`` table is the project's; in one directory ``blackbox.toml``
wins. A ``pyproject.toml`` without the table does not stop the walk.
``BLACKBOX_CONFIG=FILE`` names the file instead (``BLACKBOX_CONFIG=`` with no
value: no project configuration).

Keys (every one optional)::

    mask = ["REGEX", {name = "session", pattern = "REGEX"}]   # masks for strict replay
    default_masks = true                                      # the built-in masks (blackbox masks)
    no_mask = ["gemini-cli.pgid"]                             # built-in (or profile, or own) rules left out, by name
    redact = ["REGEX", {name = "email", pattern = "REGEX"}]   # redaction at record (and replay)
    hosts = ["llm.internal.example"]                          # more provider hosts to intercept (codec by path)
    hosts = {"llm.corp.example" = "openai"}                   # or each with the codec it speaks ([tool.blackbox.hosts])
    match = "strict"                                          # or "sequence"
    pace = "recorded"                                         # or a factor such as 0.1; absent: as fast as possible
    mcp_dirs = ["nightly/runs"]                               # more folders `blackbox mcp` reads (relative to this file)
    order_gap = 25                                            # ms between overlapping answers' ends, or "off"
    exchanges = "all"                                         # other HTTP exchanges kept: "all", "model-hosts", "none"
    exchange_max_bytes = 16777216                             # the cap on one kept response body
    exchanges_max_bytes = 67108864                            # the cap on all kept bodies of a run
    env_substitution = true                                   # the run's cwd, HOME, date… as placeholders (session.environment)

Flags add to the lists (``--mask``, ``--no-mask``, ``--redact``, ``--host HOST[=CODEC]``; a flag's
codec wins over the file's for the same host) and replace the single values
(``--match``, ``--pace``, ``--order-gap``, ``--no-default-masks``,
``--no-env-substitution``, ``--exchanges``…): each of those is read one way
(``config_keys.SINGLE``: its flag, its parser, its default).
``effective_settings`` puts both together and says where each value came from;
``blackbox config`` prints it. A file that cannot be read, is not TOML, or
holds an unknown key or a value of the wrong type raises ``ConfigError``
naming the file, the key and what is expected.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blackbox_mitm.cassette.records import JSONObject
from blackbox_mitm.codecs import host_spec
from blackbox_mitm.config_keys import (
    KEYS,
    HostSetting,
    Setting,
    check_values,
    host_values,
    mask_names,
    parse_order_gap,
    parse_pace,
    rules,
    single,
)
from blackbox_mitm.errors import ConfigError
from blackbox_mitm.matcher.masks import CompareRules, Mask, MaskError
from blackbox_mitm.session.redact import Redaction, Redactor, rule_name

__all__ = [
    "CONFIG_ENV",
    "KEYS",
    "ConfigError",
    "Effective",
    "HostSetting",
    "ProjectConfig",
    "Setting",
    "effective_settings",
    "find_config",
    "load_config",
    "parse_order_gap",
    "parse_pace",
    "project_config",
]

CONFIG_ENV = "BLACKBOX_CONFIG"


@dataclass(frozen=True, slots=True)
class ProjectConfig:
    """What one configuration file says (``path`` None: there is none). ``where`` names it in messages."""

    path: Path | None = None
    table: str = ""
    values: Mapping[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        if self.path is None:
            return "no project config"
        return f"{self.path} [{self.table}]" if self.table else str(self.path)


def find_config(start: str | os.PathLike[str] | None = None) -> tuple[Path, str] | None:
    """The project's configuration file and its table name ("" for blackbox.toml), walking up from ``start``."""
    here = Path(start if start is not None else Path.cwd()).resolve()
    for directory in (here, *here.parents):
        own = directory / "blackbox.toml"
        if own.is_file():
            return own, ""
        if own.exists() or own.is_symlink():  # a folder (or a dangling link, a FIFO) by that name: say so, never skip it
            raise ConfigError(
                f"{own}: is not a file ({_kind(own)}), so it cannot be the project config; remove or rename it, "
                f"or set {CONFIG_ENV}= to ignore project configs"
            )
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file() and _has_table(pyproject):
            return pyproject, "tool.blackbox"
    return None


def _kind(path: Path) -> str:
    if path.is_dir():
        return "a directory"
    if path.is_symlink() and not path.exists():
        return "a link to nothing"
    return "not a regular file"


def _has_table(pyproject: Path) -> bool:
    data = _read_toml(pyproject)
    tool = data.get("tool")
    return isinstance(tool, dict) and "blackbox" in tool


def _read_toml(path: Path) -> JSONObject:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the project config ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        bom = " (it begins with a UTF-16 byte order mark: save it as UTF-8)" if exc.object[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {exc.start}){bom}; a TOML file is UTF-8 — re-save it so, or set {CONFIG_ENV}= to ignore it"
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix the file or set {CONFIG_ENV}= to ignore it") from exc


def load_config(path: str | os.PathLike[str], table: str | None = None) -> ProjectConfig:
    """Read and check one configuration file (``table`` "tool.blackbox" for a pyproject.toml; guessed from the name)."""
    p = Path(path)
    if table is None:
        table = "tool.blackbox" if p.name == "pyproject.toml" else ""
    data = _read_toml(p)
    values: Any = data
    if table:
        tool = data.get("tool")
        values = tool.get("blackbox") if isinstance(tool, dict) else None
        if values is None:
            raise ConfigError(f"{p}: there is no [{table}] table")
    config = ProjectConfig(p, table, values if isinstance(values, dict) else {})
    if not isinstance(values, dict):
        raise ConfigError(f"{config.where}: must be a table of settings")
    check_values(config.values, config.where, config.table)
    return config


def project_config(start: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None) -> ProjectConfig:
    """The configuration in force for a command run in ``start`` (default: the working directory)."""
    env = os.environ if environ is None else environ
    if CONFIG_ENV in env:
        named = env[CONFIG_ENV].strip()
        if not named:
            return ProjectConfig()
        if Path(named).is_dir():
            raise ConfigError(f"{CONFIG_ENV}={named}: is a directory, not a file; name a blackbox.toml or pyproject.toml, or unset it")
        if not Path(named).is_file():
            raise ConfigError(f"{CONFIG_ENV}={named}: no such file; name a blackbox.toml or pyproject.toml, or unset it")
        return load_config(named)
    found = find_config(start)
    return ProjectConfig() if found is None else load_config(*found)


# -- putting config and flags together ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Effective:
    """The settings a command runs with: config file and flags together, each with its source."""

    config: ProjectConfig
    masks: tuple[Mask, ...]
    default_masks: Setting
    no_mask: tuple[Setting, ...]  # rules left out by name (value: the name), each with where it was named
    redactions: tuple[Redaction, ...]
    hosts: tuple[HostSetting, ...]
    match: Setting
    pace: Setting  # value: None (as fast as possible) or a factor
    order_gap: Setting  # value: ms between overlapping answers' ends, None: off
    exchanges: Setting  # which other HTTP exchanges a recording keeps
    exchange_max_bytes: Setting
    exchanges_max_bytes: Setting
    env_substitution: Setting  # the run's environment as placeholders

    @property
    def environment(self) -> Any:
        """This process's ``session.environment.RunEnvironment`` (what a wrapped command inherits), or None when off."""
        if not self.env_substitution.value:
            return None
        from blackbox_mitm.session.environment import RunEnvironment

        return RunEnvironment.capture()

    @property
    def rules(self) -> CompareRules:
        """The compare rules: the masks (built-in ones first, when on) and the redaction rules' names."""
        off = [s.value for s in self.no_mask]
        return CompareRules.build(
            self.masks, defaults=bool(self.default_masks.value), off=off, redactions=[r.name for r in self.redactions]
        )

    @property
    def redactor(self) -> Redactor:
        return Redactor(self.redactions)

    @property
    def host_names(self) -> tuple[str, ...]:
        return tuple(h.value for h in self.hosts)

    @property
    def host_specs(self) -> tuple[str, ...]:
        """The hosts as ``HOST`` / ``HOST=CODEC`` (what ``ProxySettings.hosts`` carries to the addon)."""
        return tuple(h.spec for h in self.hosts)

    @property
    def host_codecs(self) -> dict[str, str]:
        """Each host named with a codec: the codec's name (``codecs.codec_for``'s ``named``)."""
        return {h.value: h.codec for h in self.hosts if h.codec is not None}

    @property
    def mask_names_known(self) -> frozenset[str]:
        """The names ``--no-mask`` takes here: every built-in rule's (``matcher.profiles.rule_names``) and these masks'."""
        return _known_mask_names(self.masks)

    def to_json(self) -> dict[str, Any]:
        return {
            "config": None if self.config.path is None else str(self.config.path),
            "table": self.config.table or None,
            "mask": [m.to_json() for m in self.rules.masks],  # built-in ones first, when on; those off left out
            "default_masks": {"value": self.default_masks.value, "source": self.default_masks.source},
            "no_mask": [{"name": s.value, "source": s.source} for s in self.no_mask],
            "redact": [r.to_json() for r in self.redactions],
            "hosts": [{"value": h.value, "codec": h.codec, "source": h.source} for h in self.hosts],
            "match": {"value": self.match.value, "source": self.match.source},
            "pace": {"value": _pace_text(self.pace.value), "source": self.pace.source},
            "order_gap": {"value": "off" if self.order_gap.value is None else f"{self.order_gap.value:g}", "source": self.order_gap.source},
            **{k: {"value": v.value, "source": v.source} for k, v in self.exchange_settings().items()},
            "env_substitution": {"value": self.env_substitution.value, "source": self.env_substitution.source},
        }

    def exchange_settings(self) -> dict[str, Setting]:
        return {"exchanges": self.exchanges, "exchange_max_bytes": self.exchange_max_bytes, "exchanges_max_bytes": self.exchanges_max_bytes}


def _pace_text(factor: float | None) -> str:
    if factor is None:
        return "fast"
    return "recorded" if factor == 1.0 else f"{factor:g}"


def effective_settings(
    config: ProjectConfig | None = None,
    *,
    masks: Sequence[str] = (),
    no_default_masks: bool = False,
    no_mask: Sequence[str] = (),
    redact: Sequence[str] = (),
    hosts: Iterable[str] = (),
    match: str | None = None,
    pace: str | None = None,
    order_gap: str | None = None,
    exchanges: str | None = None,
    exchange_max_bytes: int | None = None,
    exchanges_max_bytes: int | None = None,
    no_env_substitution: bool = False,
) -> Effective:
    """The settings for one command: ``config`` (default: the project's) plus its flags. ``ConfigError`` when unusable."""
    config = project_config() if config is None else config
    values, where = config.values, config.where
    try:
        mask_list = [_mask(name, pattern, where, i) for i, (name, pattern) in enumerate(rules(values.get("mask", []), "mask", where))]
        mask_list += [Mask(f"mask-{len(mask_list) + i + 1}", p, source="--mask") for i, p in enumerate(masks)]
        red_rules = rules(values.get("redact", []), "redact", where)
        red_list = [Redaction(name or rule_name(pattern), pattern, source=where) for name, pattern in red_rules]
        red_list += [Redaction(rule_name(p), p, source="--redact") for p in redact]
        CompareRules.build(mask_list, defaults=False)  # duplicate names
        red_list = list(Redactor.build(red_list).rules)  # the same rule twice is one; one name for two patterns is an error
    except MaskError as exc:
        raise ConfigError(str(exc)) from exc
    flags = {
        "default_masks": False if no_default_masks else None,
        "match": match,
        "pace": pace,
        "order_gap": order_gap,
        "exchanges": exchanges,
        "exchange_max_bytes": exchange_max_bytes,
        "exchanges_max_bytes": exchanges_max_bytes,
        "env_substitution": False if no_env_substitution else None,
    }
    found = {key: single(key, flag, values, where) for key, flag in flags.items()}
    off = _no_mask(mask_names(values.get("no_mask", []), where), where, no_mask, mask_list)
    return Effective(config, tuple(mask_list), no_mask=off, redactions=tuple(red_list), hosts=_host_settings(config, hosts), **found)


def _no_mask(listed: list[str], where: str, flags: Sequence[str], own: Sequence[Mask]) -> tuple[Setting, ...]:
    """The file's ``no_mask`` names, then the flags' (each once); ``ConfigError`` for a name no rule has."""
    known = _known_mask_names(own)
    named: dict[str, Setting] = {}
    for name, source in [*((n, where) for n in listed), *((n, "--no-mask") for n in flags)]:
        if name not in known:
            raise ConfigError(
                f"{source}: no mask is named {name!r}; name a built-in mask or an agent profile's rule "
                "(blackbox masks lists them) or one of your own masks' names"
            )
        named.setdefault(name, Setting(name, source))
    return tuple(named.values())


def _known_mask_names(own: Iterable[Mask]) -> frozenset[str]:
    from blackbox_mitm.matcher.profiles import rule_names

    return frozenset((*rule_names(), *(m.name for m in own)))


def _host_settings(config: ProjectConfig, flags: Iterable[str]) -> tuple[HostSetting, ...]:
    """The file's hosts, then the flags' (``HOST`` or ``HOST=CODEC``): each host once, the last codec named for it wins."""
    named = [(h, c, config.where) for h, c in host_values(config.values.get("hosts", []), config.where, config.table)]
    named += [(*host_spec(h), "--host") for h in flags if h.strip()]
    found: dict[str, HostSetting] = {}
    for host, codec, source in named:
        if host not in found or codec is not None:
            found[host] = HostSetting(host, source, codec)
    return tuple(found.values())


def _mask(name: str | None, pattern: str, where: str, index: int) -> Mask:
    return Mask(name or f"mask-{index + 1}", pattern, source=where)
