"""The keys of the project configuration: what each accepts, and the one way a single-valued key is read.

``config`` finds and loads the file and puts it together with the flags; this
module says what a value may be. ``check_values`` checks a whole table (a
``ConfigError`` naming the file, the key and what is expected); ``single`` reads
one single-valued key (``SINGLE``: its flag, its parser, its default) from a flag,
else the file, else the default; ``host_values`` reads ``hosts``, a list of
``HOST`` (or ``HOST=CODEC``) or a table ``HOST = CODEC`` naming the codec each
host speaks (``codecs.host_spec`` knows the codecs' names).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from blackbox_mitm.codecs import host_spec
from blackbox_mitm.errors import ConfigError

__all__ = [
    "EXCHANGE_POLICIES",
    "KEYS",
    "MATCH_MODES",
    "SINGLE",
    "HostSetting",
    "Setting",
    "check_values",
    "host_values",
    "mask_names",
    "parse_order_gap",
    "parse_pace",
    "rules",
    "single",
]

KEYS = (
    "mask",
    "default_masks",
    "no_mask",
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
MATCH_MODES = ("strict", "sequence")


@dataclass(frozen=True, slots=True)
class Setting:
    """One effective value and where it came from (a file and table, a flag, or ``default``)."""

    value: Any
    source: str


@dataclass(frozen=True, slots=True)
class HostSetting:
    """A host (or pattern) to intercept, the codec it speaks (None: chosen by the path), and where it was named."""

    value: str
    source: str
    codec: str | None = None

    @property
    def spec(self) -> str:
        """``HOST`` or ``HOST=CODEC``, as ``--host`` and the ``blackbox_hosts`` option take it."""
        return self.value if self.codec is None else f"{self.value}={self.codec}"


def check_values(values: Mapping[str, Any], where: str, table: str = "") -> None:
    """Check a configuration table (``where`` names it in messages; ``table`` is its own name, "" at the top)."""
    unknown = sorted(set(values) - set(KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; the keys are {', '.join(KEYS)}")
    for key in ("mask", "redact"):
        if key in values:
            rules(values[key], key, where)
    if "no_mask" in values:
        mask_names(values["no_mask"], where)
    if "hosts" in values:
        host_values(values["hosts"], where, table)
    if "mcp_dirs" in values:
        dirs = values["mcp_dirs"]
        if not isinstance(dirs, list) or not all(isinstance(d, str) and d.strip() for d in dirs):
            raise ConfigError(f'{where}: mcp_dirs must be a list of folders, e.g. mcp_dirs = ["nightly/runs"]')
    for key, (_, parse, _) in SINGLE.items():
        if key in values:
            try:
                parse(values[key])
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from exc


def host_values(value: Any, where: str, table: str = "") -> list[tuple[str, str | None]]:
    """The hosts key as (host, codec or None): a list of ``HOST`` (or ``HOST=CODEC``), or a table ``HOST = CODEC``."""
    if isinstance(value, dict):
        if not all(isinstance(c, str) for c in value.values()):
            header = f"[{table}.hosts]" if table else "[hosts]"
            raise ConfigError(f'{where}: each host in {header} names the codec it speaks, e.g. "llm.corp.example" = "openai"')
        pairs = [(host, codec) for host, codec in value.items()]
    elif isinstance(value, list) and all(isinstance(h, str) and h.strip() for h in value):
        pairs = [(host, None) for host in value]
    else:
        raise ConfigError(
            f'{where}: hosts must be a list of host names, e.g. hosts = ["llm.internal.example"], '
            f'or a table of each host\'s codec, e.g. hosts = {{"llm.corp.example" = "openai"}}'
        )
    try:
        return [host_spec(host, codec) for host, codec in pairs]
    except ConfigError as exc:
        raise ConfigError(f"{where}: hosts: {exc}") from exc


def rules(value: Any, key: str, where: str) -> list[tuple[str | None, str]]:
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


def mask_names(value: Any, where: str) -> list[str]:
    """The ``no_mask`` list: names of masks; ConfigError when it is not a list of names."""
    if not isinstance(value, list) or not all(isinstance(n, str) and n for n in value):
        raise ConfigError(f'{where}: no_mask must be a list of mask names, e.g. no_mask = ["gemini-cli.pgid"] (blackbox masks lists them)')
    return value


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


def _choice(key: str, choices: tuple[str, ...]) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if value not in choices:
            named = ", ".join(f'"{c}"' for c in choices[:-1]) + f' or "{choices[-1]}"'
            raise ConfigError(f"{key} must be {named}, not {value!r}")
        return str(value)

    return parse


def _boolean(key: str) -> Callable[[Any], bool]:
    def parse(value: Any) -> bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key} must be true or false, not {value!r}")
        return value

    return parse


def _byte_count(key: str) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{key} must be a number of bytes (0 or more), not {value!r}")
        return value

    return parse


# The single-valued keys, each read one way: the flag's value, else the file's, else the default, all through its parser.
SINGLE: dict[str, tuple[str, Callable[[Any], Any], Any]] = {
    "default_masks": ("--no-default-masks", _boolean("default_masks"), True),
    "match": ("--match", _choice("match", MATCH_MODES), "strict"),
    "pace": ("--pace", parse_pace, "fast"),
    "order_gap": ("--order-gap", parse_order_gap, "default"),
    "exchanges": ("--exchanges", _choice("exchanges", EXCHANGE_POLICIES), "all"),
    "exchange_max_bytes": ("--exchange-max-bytes", _byte_count("exchange_max_bytes"), 16 * 1024 * 1024),
    "exchanges_max_bytes": ("--exchanges-max-bytes", _byte_count("exchanges_max_bytes"), 64 * 1024 * 1024),
    "env_substitution": ("--no-env-substitution", _boolean("env_substitution"), True),
}


def single(key: str, flag: Any, values: Mapping[str, Any], where: str) -> Setting:
    """A single-valued key's setting: the flag (None: not given), else the config file, else the default."""
    name, parse, default = SINGLE[key]
    if flag is not None:
        return Setting(parse(flag), name)
    if key in values:
        return Setting(parse(values[key]), where)
    return Setting(parse(default), "default")
