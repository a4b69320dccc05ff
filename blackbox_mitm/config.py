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
    redact = ["REGEX", {name = "email", pattern = "REGEX"}]   # redaction at record (and replay)
    hosts = ["llm.internal.example"]                          # more provider hosts to intercept
    match = "strict"                                          # or "sequence"
    pace = "recorded"                                         # or a factor such as 0.1; absent: as fast as possible
    mcp_dirs = ["nightly/runs"]                               # more folders `blackbox mcp` reads (relative to this file)
    order_gap = 25                                            # ms between overlapping answers' ends, or "off"
    exchanges = "all"                                         # other HTTP exchanges kept: "all", "model-hosts", "none"
    exchange_max_bytes = 16777216                             # the cap on one kept response body
    exchanges_max_bytes = 67108864                            # the cap on all kept bodies of a run
    env_substitution = true                                   # the run's cwd, HOME, date… as placeholders (session.environment)

Flags add to the lists (``--mask``, ``--redact``, ``--host``) and replace the
single values (``--match``, ``--pace``, ``--order-gap``, ``--no-default-masks``,
``--no-env-substitution``).
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

from blackbox_mitm.errors import ConfigError
from blackbox_mitm.matcher.masks import CompareRules, Mask, MaskError
from blackbox_mitm.session.redact import Redaction, Redactor, rule_name

__all__ = [
    "CONFIG_ENV",
    "KEYS",
    "ConfigError",
    "Effective",
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
KEYS = (
    "mask",
    "default_masks",
    "redact",
    "hosts",
    "match",
    "pace",
    "mcp_dirs",
    "order_gap",
    "exchanges",
    "exchange_max_bytes",
    "exchanges_max_bytes",
    "env_substitution",
)
EXCHANGE_POLICIES = ("all", "model-hosts", "none")
_EXCHANGE_DEFAULTS: dict[str, Any] = {"exchanges": "all", "exchange_max_bytes": 16 * 1024 * 1024, "exchanges_max_bytes": 64 * 1024 * 1024}
MATCH_MODES = ("strict", "sequence")


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


def _read_toml(path: Path) -> dict[str, Any]:
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
    _check(config)
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


# -- checking ------------------------------------------------------------------------------


def _check(config: ProjectConfig) -> None:
    values = config.values
    unknown = sorted(set(values) - set(KEYS))
    if unknown:
        raise ConfigError(f"{config.where}: unknown key {unknown[0]!r}; the keys are {', '.join(KEYS)}")
    for key in ("mask", "redact"):
        if key in values:
            _rules(values[key], key, config.where)
    if "hosts" in values:
        hosts = values["hosts"]
        if not isinstance(hosts, list) or not all(isinstance(h, str) and h.strip() for h in hosts):
            raise ConfigError(f'{config.where}: hosts must be a list of host names, e.g. hosts = ["llm.internal.example"]')
    if "mcp_dirs" in values:
        dirs = values["mcp_dirs"]
        if not isinstance(dirs, list) or not all(isinstance(d, str) and d.strip() for d in dirs):
            raise ConfigError(f'{config.where}: mcp_dirs must be a list of folders, e.g. mcp_dirs = ["nightly/runs"]')
    if "match" in values and values["match"] not in MATCH_MODES:
        raise ConfigError(f'{config.where}: match must be "strict" or "sequence", not {values["match"]!r}')
    for flag in ("default_masks", "env_substitution"):
        if flag in values and not isinstance(values[flag], bool):
            raise ConfigError(f"{config.where}: {flag} must be true or false, not {values[flag]!r}")
    for key, parse in (("pace", parse_pace), ("order_gap", parse_order_gap)):
        if key in values:
            try:
                parse(values[key])
            except ConfigError as exc:
                raise ConfigError(f"{config.where}: {exc}") from exc
    if "exchanges" in values and values["exchanges"] not in EXCHANGE_POLICIES:
        raise ConfigError(f'{config.where}: exchanges must be "all", "model-hosts" or "none", not {values["exchanges"]!r}')
    for key in ("exchange_max_bytes", "exchanges_max_bytes"):
        if key in values and (isinstance(values[key], bool) or not isinstance(values[key], int) or values[key] < 0):
            raise ConfigError(f"{config.where}: {key} must be a number of bytes (0 or more), not {values[key]!r}")


def _rules(value: Any, key: str, where: str) -> list[tuple[str | None, str]]:
    """A mask/redact list as (name or None, pattern) pairs; ConfigError when it is not one."""
    example = f'{key} = ["REGEX", {{name = "NAME", pattern = "REGEX"}}]'
    if not isinstance(value, list):
        raise ConfigError(f"{where}: {key} must be a list of regular expressions, e.g. {example}")
    out: list[tuple[str | None, str]] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            out.append((None, item))
        elif isinstance(item, dict) and set(item) <= {"name", "pattern"} and isinstance(item.get("pattern"), str):
            name = item.get("name")
            if name is not None and not isinstance(name, str):
                raise ConfigError(f"{where}: {key}[{i}].name must be a string")
            out.append((name, item["pattern"]))
        else:
            raise ConfigError(f"{where}: {key}[{i}] must be a regular expression or a table {{name, pattern}}, e.g. {example}")
    return out


def parse_pace(value: Any) -> float | None:
    """``"recorded"`` -> 1.0, a positive number (or its text) -> that factor, ``"fast"``/None -> None (as fast as possible)."""
    if value is None or value == "fast":
        return None
    if value == "recorded":
        return 1.0
    if isinstance(value, bool):
        raise ConfigError(f'pace must be "recorded", "fast" or a positive factor such as 0.1, not {value!r}')
    try:
        factor = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f'pace must be "recorded", "fast" or a positive factor such as 0.1, not {value!r}') from None
    if not factor > 0 or factor != factor or factor == float("inf"):
        raise ConfigError(f"pace must be a positive factor (1 = as recorded, 0.1 = ten times faster), not {value!r}")
    return factor


def parse_order_gap(value: Any) -> float | None:
    """``"off"`` -> None (answers released as they are ready), a number of ms >= 0 (or its text) -> that separation."""
    from blackbox_mitm.session.release import DEFAULT_GAP_MS

    if value is None or value == "default":
        return DEFAULT_GAP_MS
    if value == "off":
        return None
    message = f'order_gap must be "off" or a number of milliseconds such as 25, not {value!r}'
    if isinstance(value, bool):
        raise ConfigError(message)
    try:
        gap = float(value)
    except (TypeError, ValueError):
        raise ConfigError(message) from None
    if not gap >= 0 or gap == float("inf"):
        raise ConfigError(message)
    return gap


# -- putting config and flags together ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Setting:
    """One effective value and where it came from (a file and table, a flag, or ``default``)."""

    value: Any
    source: str


@dataclass(frozen=True, slots=True)
class Effective:
    """The settings a command runs with: config file and flags together, each with its source."""

    config: ProjectConfig
    masks: tuple[Mask, ...]
    default_masks: Setting
    redactions: tuple[Redaction, ...]
    hosts: tuple[Setting, ...]
    match: Setting
    pace: Setting  # value: None (as fast as possible) or a factor
    order_gap: Setting = Setting(None, "default")  # value: ms between overlapping answers' ends, None: off
    exchanges: Setting = Setting(_EXCHANGE_DEFAULTS["exchanges"], "default")  # which other HTTP exchanges a recording keeps
    exchange_max_bytes: Setting = Setting(_EXCHANGE_DEFAULTS["exchange_max_bytes"], "default")
    exchanges_max_bytes: Setting = Setting(_EXCHANGE_DEFAULTS["exchanges_max_bytes"], "default")
    env_substitution: Setting = Setting(True, "default")  # the run's environment as placeholders

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
        return CompareRules.build(self.masks, defaults=bool(self.default_masks.value), redactions=[r.name for r in self.redactions])

    @property
    def redactor(self) -> Redactor:
        return Redactor(self.redactions)

    @property
    def host_names(self) -> tuple[str, ...]:
        return tuple(str(h.value) for h in self.hosts)

    def to_json(self) -> dict[str, Any]:
        from blackbox_mitm.matcher.masks import BUILT_IN_MASKS

        built_in = [m.to_json() for m in BUILT_IN_MASKS] if self.default_masks.value else []
        return {
            "config": None if self.config.path is None else str(self.config.path),
            "table": self.config.table or None,
            "mask": built_in + [m.to_json() for m in self.masks],
            "default_masks": {"value": self.default_masks.value, "source": self.default_masks.source},
            "redact": [r.to_json() for r in self.redactions],
            "hosts": [{"value": h.value, "source": h.source} for h in self.hosts],
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
        mask_list = [_mask(name, pattern, where, i) for i, (name, pattern) in enumerate(_rules(values.get("mask", []), "mask", where))]
        mask_list += [Mask(f"mask-{len(mask_list) + i + 1}", p, source="--mask") for i, p in enumerate(masks)]
        rules = _rules(values.get("redact", []), "redact", where)
        red_list = [Redaction(name or rule_name(pattern), pattern, source=where) for name, pattern in rules]
        red_list += [Redaction(rule_name(p), p, source="--redact") for p in redact]
        CompareRules.build(mask_list, defaults=False)  # duplicate names
        red_list = list(Redactor.build(red_list).rules)  # the same rule twice is one; one name for two patterns is an error
    except MaskError as exc:
        raise ConfigError(str(exc)) from exc
    if no_default_masks:
        defaults = Setting(False, "--no-default-masks")
    elif "default_masks" in values:
        defaults = Setting(bool(values["default_masks"]), where)
    else:
        defaults = Setting(True, "default")
    host_settings = [Setting(h.strip().lower(), where) for h in values.get("hosts", [])]
    host_settings += [Setting(h.strip().lower(), "--host") for h in hosts if h.strip()]
    match_setting = (
        Setting(match, "--match")
        if match is not None
        else Setting(values.get("match", "strict"), where if "match" in values else "default")
    )
    if pace is not None:
        pace_setting = Setting(parse_pace(pace), "--pace")
    elif "pace" in values:
        pace_setting = Setting(parse_pace(values["pace"]), where)
    else:
        pace_setting = Setting(None, "default")
    if no_env_substitution:
        env_setting = Setting(False, "--no-env-substitution")
    elif "env_substitution" in values:
        env_setting = Setting(bool(values["env_substitution"]), where)
    else:
        env_setting = Setting(True, "default")
    if order_gap is not None:
        gap_setting = Setting(parse_order_gap(order_gap), "--order-gap")
    else:
        gap_setting = Setting(parse_order_gap(values.get("order_gap")), where if "order_gap" in values else "default")
    flags = {"exchanges": exchanges, "exchange_max_bytes": exchange_max_bytes, "exchanges_max_bytes": exchanges_max_bytes}
    found = {k: _setting(k, flag, values, where) for k, flag in flags.items()}
    return Effective(
        config,
        tuple(mask_list),
        defaults,
        tuple(red_list),
        tuple(host_settings),
        match_setting,
        pace_setting,
        gap_setting,
        env_substitution=env_setting,
        **found,
    )


def _setting(key: str, flag: Any, values: Mapping[str, Any], where: str) -> Setting:
    """A single value: the flag, else the config file, else the default."""
    if flag is not None:
        return Setting(flag, "--" + key.replace("_", "-"))
    if key in values:
        return Setting(values[key], where)
    return Setting(_EXCHANGE_DEFAULTS[key], "default")


def _mask(name: str | None, pattern: str, where: str, index: int) -> Mask:
    return Mask(name or f"mask-{index + 1}", pattern, source=where)
