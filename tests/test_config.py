"""The project config: found walking up like ruff's, checked with named errors, merged with flags with a source per value."""

from __future__ import annotations

from pathlib import Path

import pytest

from blackbox_mitm.config import ConfigError, ProjectConfig, effective_settings, find_config, load_config, parse_pace, project_config
from blackbox_mitm.session.redact import rule_name


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_pyproject_table_is_found_from_a_subfolder(tmp_path: Path) -> None:
    pyproject = write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n\n[tool.blackbox]\nmask = ["\\\\d+"]\n')
    deep = tmp_path / "src" / "pkg"
    deep.mkdir(parents=True)
    assert find_config(deep) == (pyproject.resolve(), "tool.blackbox")
    config = project_config(deep, environ={})
    assert config.values == {"mask": ["\\d+"]} and config.where.endswith("pyproject.toml [tool.blackbox]")


def test_a_pyproject_without_the_table_does_not_stop_the_walk(tmp_path: Path) -> None:
    outer = write(tmp_path / "blackbox.toml", 'match = "sequence"\n')
    write(tmp_path / "app" / "pyproject.toml", '[project]\nname = "app"\n')
    assert find_config(tmp_path / "app") == (outer.resolve(), "")


def test_in_one_folder_blackbox_toml_wins(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.blackbox]\npace = 0.5\n")
    own = write(tmp_path / "blackbox.toml", 'pace = "recorded"\n')
    assert find_config(tmp_path) == (own.resolve(), "")


def test_no_config_anywhere(tmp_path: Path) -> None:
    assert project_config(tmp_path, environ={"BLACKBOX_CONFIG": ""}).path is None


def test_the_environment_names_the_file(tmp_path: Path) -> None:
    named = write(tmp_path / "elsewhere" / "blackbox.toml", 'match = "sequence"\n')
    config = project_config(tmp_path, environ={"BLACKBOX_CONFIG": str(named)})
    assert config.path == named and config.values["match"] == "sequence"
    with pytest.raises(ConfigError, match=r"BLACKBOX_CONFIG=.*no such file"):
        project_config(tmp_path, environ={"BLACKBOX_CONFIG": str(tmp_path / "missing.toml")})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("mask = [", "not valid TOML"),
        (
            "masks = []",
            "unknown key 'masks'; the keys are mask, default_masks, no_mask, redact, hosts, match, pace, mcp_dirs, order_gap, exchanges, exchange_max_bytes, exchanges_max_bytes",
        ),
        ('mask = "\\\\d+"', "mask must be a list of regular expressions"),
        ("mask = [3]", r"mask\[0\] must be a regular expression or a table"),
        ('mask = ["(unclosed"]', "is not a regular expression"),
        ('redact = [{name = "e", pattern = "a*"}]', "matches the empty string"),
        ('match = "fuzzy"', 'match must be "strict" or "sequence"'),
        ("pace = -1", "pace must be a positive factor"),
        ('pace = "slow"', 'pace must be "recorded", "fast" or a positive factor'),
        ("hosts = [1]", "hosts must be a list of host names"),
        ('default_masks = "no"', "default_masks must be true or false"),
        ('no_mask = "gemini-cli.pgid"', "no_mask must be a list of mask names"),
        ('no_mask = ["no-such-mask"]', "no mask is named 'no-such-mask'"),
    ],
)
def test_a_bad_config_is_a_named_error_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "blackbox.toml", text + "\n")
    with pytest.raises(ConfigError, match=message) as info:
        effective_settings(load_config(path))
    assert str(path) in str(info.value)


def test_flags_add_to_lists_and_replace_single_values(tmp_path: Path) -> None:
    path = write(
        tmp_path / "blackbox.toml",
        'mask = ["run (?P<mask>\\\\d+)", {name = "session", pattern = "sess-[0-9a-f]+"}]\n'
        'redact = [{name = "email", pattern = "[a-z]+@[a-z.]+"}]\n'
        'hosts = ["LLM.internal.example"]\nmatch = "sequence"\npace = "recorded"\n',
    )
    config = load_config(path)
    settings = effective_settings(config, masks=["tmp-\\w+"], redact=["sk-\\w+"], hosts=["other.example"], pace="0.1")
    assert [(m.name, m.source) for m in settings.masks] == [("mask-1", str(path)), ("session", str(path)), ("mask-3", "--mask")]
    assert [(r.name, r.source) for r in settings.redactions] == [("email", str(path)), (rule_name("sk-\\w+"), "--redact")]
    assert settings.host_names == ("llm.internal.example", "other.example")
    assert (settings.match.value, settings.match.source) == ("sequence", str(path))
    assert (settings.pace.value, settings.pace.source) == (0.1, "--pace")
    assert settings.default_masks.value is True and settings.default_masks.source == "default"
    rules = settings.rules
    assert [m.name for m in rules.masks][:1] == ["claude-code.billing"] and rules.redactions == ("email", rule_name("sk-\\w+"))
    assert settings.redactor.text("mail ada@x.org") == "mail <redacted:email>"


def test_no_default_masks_from_the_flag_or_the_file(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "blackbox.toml", "default_masks = false\n"))
    assert effective_settings(config).rules.masks == ()
    on = effective_settings(ProjectConfig())
    assert on.rules.masks and on.default_masks.source == "default"
    off = effective_settings(ProjectConfig(), no_default_masks=True)
    assert off.rules.masks == () and off.default_masks.source == "--no-default-masks"


def test_no_mask_leaves_out_the_masks_it_names_from_the_file_and_the_flags(tmp_path: Path) -> None:
    config = load_config(
        write(tmp_path / "blackbox.toml", 'mask = [{name = "session", pattern = "sess-[0-9]+"}]\nno_mask = ["codex.wall-time"]\n')
    )
    settings = effective_settings(config, no_mask=["gemini-cli.pgid", "session", "codex.wall-time"])
    assert [(s.value, s.source) for s in settings.no_mask] == [
        ("codex.wall-time", str(tmp_path / "blackbox.toml")),
        ("gemini-cli.pgid", "--no-mask"),
        ("session", "--no-mask"),
    ]
    names = [m.name for m in settings.rules.masks]
    assert "claude-code.billing" in names and not {"codex.wall-time", "gemini-cli.pgid", "session"} & set(names)
    assert [m["name"] for m in settings.to_json()["mask"]] == names
    assert settings.to_json()["no_mask"][1] == {"name": "gemini-cli.pgid", "source": "--no-mask"}


def test_no_mask_keeps_the_agent_profile_but_for_the_rules_it_names() -> None:
    from blackbox_mitm.matcher.profiles import PROFILES, with_profile

    gemini = next(p for p in PROFILES if p.name == "gemini-cli")
    kept = with_profile(effective_settings(ProjectConfig(), no_mask=["gemini-cli.pgid"]).rules, gemini)
    assert {u.name for u in kept.unordered} == {"gemini-cli.skills", "gemini-cli.skill-names"}
    assert "gemini-cli.pgid" not in {m.name for m in kept.masks}
    fewer = with_profile(effective_settings(ProjectConfig(), no_mask=["gemini-cli.skills"]).rules, gemini)
    assert [u.name for u in fewer.unordered] == ["gemini-cli.skill-names"]
    assert with_profile(effective_settings(ProjectConfig(), no_default_masks=True).rules, gemini).unordered == ()


def test_a_no_mask_flag_naming_no_mask_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"--no-mask: no mask is named 'pgid'; .*blackbox masks lists them"):
        effective_settings(ProjectConfig(), no_mask=["pgid"])


def test_the_json_says_where_each_value_came_from(tmp_path: Path) -> None:
    path = write(tmp_path / "pyproject.toml", '[tool.blackbox]\nmatch = "sequence"\n')
    data = effective_settings(load_config(path), match="strict").to_json()
    assert data["config"] == str(path) and data["table"] == "tool.blackbox"
    assert data["match"] == {"value": "strict", "source": "--match"}
    assert data["pace"] == {"value": "fast", "source": "default"}
    assert {m["source"] for m in data["mask"]} == {"built-in"}


@pytest.mark.parametrize(("value", "factor"), [("recorded", 1.0), ("0.1", 0.1), (2, 2.0), ("fast", None), (None, None)])
def test_pace_values(value: object, factor: float | None) -> None:
    assert parse_pace(value) == factor


@pytest.mark.parametrize("value", ["0", "-2", "nan", "inf", True, "sometimes"])
def test_bad_pace_values(value: object) -> None:
    with pytest.raises(ConfigError, match="pace must be"):
        parse_pace(value)


# -- a golden's own settings (golden add --mask) -------------------------------------------------


def test_a_goldens_settings_round_trip_as_replay_flags(tmp_path: Path) -> None:
    from blackbox_mitm.golden.settings import replay_flags, settings_path, write_settings

    golden = tmp_path / "weather.json"
    odd = 'say "hi"\\t\\\\d+ ünï'
    kept = write_settings(golden, masks=[r"Now: \S+", odd], pace="recorded", default_masks=False, no_mask=["codex.wall-time"])
    assert kept == settings_path(golden) == tmp_path / "weather.blackbox.toml"
    assert replay_flags(golden) == [
        "--mask",
        r"Now: \S+",
        "--mask",
        odd,
        "--no-mask",
        "codex.wall-time",
        "--pace",
        "recorded",
        "--no-default-masks",
    ]
    assert write_settings(golden) is None and not kept.exists()  # nothing to keep: no file
    assert replay_flags(golden) == []


def test_a_goldens_bad_settings_are_named(tmp_path: Path) -> None:
    from blackbox_mitm.golden.settings import replay_flags, write_settings

    golden = tmp_path / "weather.json"
    with pytest.raises(ConfigError, match="is not a regular expression"):
        write_settings(golden, masks=["(unclosed"])
    (tmp_path / "weather.blackbox.toml").write_text("redact = ['x']\n")
    with pytest.raises(ConfigError, match="unknown key 'redact'; a golden's settings are mask, no_mask, default_masks and pace"):
        replay_flags(golden)


def test_the_suites_flags_come_after_a_goldens_own(tmp_path: Path) -> None:
    from blackbox_mitm.golden.settings import SuiteSettings, write_settings

    golden = tmp_path / "weather.json"
    write_settings(golden, masks=[r"Now: \S+"], pace="recorded")
    suite = SuiteSettings(masks=("trace-[0-9a-f]+",), redact=("sk-[a-z]+",), no_default_masks=True)
    assert suite.replay_args(golden) == [
        "--mask",
        r"Now: \S+",
        "--pace",
        "recorded",
        "--mask",
        "trace-[0-9a-f]+",
        "--redact",
        "sk-[a-z]+",
        "--no-default-masks",
    ]
    options = suite.session_options(golden)
    assert [m.name for m in options["rules"].masks] == ["mask-1", "mask-2"]  # no built-in masks
    assert options["pace"] == 1.0 and options["redactor"].text("key sk-abc") == f"key <redacted:{rule_name('sk-[a-z]+')}>"


def test_a_goldens_no_mask_and_the_suites_both_apply(tmp_path: Path) -> None:
    from blackbox_mitm.golden.settings import SuiteSettings, write_settings

    golden = tmp_path / "weather.json"
    write_settings(golden, no_mask=["gemini-cli.pgid"])
    suite = SuiteSettings(no_mask=("codex.wall-time",))
    assert suite.replay_args(golden) == ["--no-mask", "gemini-cli.pgid", "--no-mask", "codex.wall-time"]
    names = {m.name for m in suite.session_options(golden)["rules"].masks}
    assert "claude-code.billing" in names and not {"gemini-cli.pgid", "codex.wall-time"} & names


def test_the_suites_no_mask_leaves_a_mask_out_of_the_goldens_that_have_it(tmp_path: Path) -> None:
    from blackbox_mitm.golden.settings import SuiteSettings, write_settings

    two, bare = tmp_path / "two.json", tmp_path / "bare.json"
    write_settings(two, masks=["x-[0-9]+", "y-[0-9]+"])
    suite = SuiteSettings(no_mask=("mask-2",))
    assert suite.replay_args(two) == ["--mask", "x-[0-9]+", "--mask", "y-[0-9]+", "--no-mask", "mask-2"]
    assert suite.replay_args(bare) == []  # it has no mask-2: nothing to leave out
    assert [m.name for m in suite.session_options(two)["rules"].masks if m.source != "built-in"] == ["mask-1"]
    assert suite.unknown_no_mask([bare, two]) is None
    assert SuiteSettings(no_mask=("mask-2", "mask-3")).unknown_no_mask([bare, two]) == "mask-3"
    assert SuiteSettings(no_mask=("gemini-cli.pgid",)).unknown_no_mask([]) is None  # a built-in name, with no goldens


@pytest.mark.parametrize(("value", "expected"), [(None, 25.0), ("off", None), (0, 0.0), ("40", 40.0), (12.5, 12.5)])
def test_order_gap_is_milliseconds_or_off(value: object, expected: float | None) -> None:
    from blackbox_mitm.config import parse_order_gap

    assert parse_order_gap(value) == expected


@pytest.mark.parametrize("value", [-1, "soon", True, float("inf")])
def test_a_bad_order_gap_is_refused(value: object) -> None:
    from blackbox_mitm.config import parse_order_gap

    with pytest.raises(ConfigError, match='order_gap must be "off" or a number of milliseconds'):
        parse_order_gap(value)


def test_order_gap_from_the_config_and_the_flag(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "blackbox.toml", "order_gap = 60\n"))
    assert (effective_settings(config).order_gap.value, effective_settings(config).order_gap.source) == (60.0, str(config.path))
    flagged = effective_settings(config, order_gap="off")
    assert (flagged.order_gap.value, flagged.order_gap.source) == (None, "--order-gap")
    assert flagged.to_json()["order_gap"] == {"value": "off", "source": "--order-gap"}
    assert effective_settings(ProjectConfig()).to_json()["order_gap"] == {"value": "25", "source": "default"}


# -- hosts named with the codec they speak ([tool.blackbox.hosts]) -------------------------------


def test_a_hosts_table_names_each_hosts_codec(tmp_path: Path) -> None:
    path = write(tmp_path / "blackbox.toml", '[hosts]\n"LLM.corp.example" = "openai"\n"*.gw.example" = "anthropic"\n')
    settings = effective_settings(load_config(path))
    assert settings.host_codecs == {"llm.corp.example": "openai", "*.gw.example": "anthropic"}
    assert settings.host_specs == ("llm.corp.example=openai", "*.gw.example=anthropic")
    assert settings.to_json()["hosts"][0] == {"value": "llm.corp.example", "codec": "openai", "source": str(path)}


def test_a_pyproject_hosts_table(tmp_path: Path) -> None:
    path = write(tmp_path / "pyproject.toml", '[tool.blackbox.hosts]\n"llm.corp.example" = "openai-responses"\n')
    config = project_config(tmp_path, environ={})
    assert config.path == path and effective_settings(config).host_codecs == {"llm.corp.example": "openai-responses"}


def test_the_list_form_still_works_and_may_name_codecs(tmp_path: Path) -> None:
    path = write(tmp_path / "blackbox.toml", 'hosts = ["llm.internal.example", "gw.example=gemini"]\n')
    settings = effective_settings(load_config(path))
    assert settings.host_names == ("llm.internal.example", "gw.example")
    assert settings.host_codecs == {"gw.example": "gemini"}  # the first is chosen by path, as before


def test_host_flags_add_hosts_and_their_codec_wins(tmp_path: Path) -> None:
    path = write(tmp_path / "blackbox.toml", '[hosts]\n"llm.corp.example" = "openai"\n')
    settings = effective_settings(load_config(path), hosts=["llm.corp.example=openai-responses", "localhost=openai", "llm.corp.example"])
    assert [(h.value, h.codec, h.source) for h in settings.hosts] == [
        ("llm.corp.example", "openai-responses", "--host"),  # a bare --host of a named host keeps its codec
        ("localhost", "openai", "--host"),
    ]
    plain = effective_settings(load_config(path), hosts=["llm.corp.example"])
    assert [(h.value, h.codec, h.source) for h in plain.hosts] == [("llm.corp.example", "openai", str(path))]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[hosts]\n"llm.corp.example" = "openai-chat"', r"hosts: llm.corp.example: unknown codec 'openai-chat' \(did you mean"),
        (
            '[hosts]\n"llm.corp.example" = "nope"',
            "unknown codec 'nope'; the codecs are anthropic, bedrock, bedrock-converse, gemini, openai",
        ),
        ('[hosts]\n"llm.corp.example" = 3', r'each host in \[hosts\] names the codec it speaks, e.g. "llm.corp.example" = "openai"'),
        ('hosts = ["x=madeup"]', "unknown codec 'madeup'"),
        ("hosts = 3", "hosts must be a list of host names.*or a table of each host's codec"),
    ],
)
def test_a_bad_hosts_table_is_a_named_error(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "blackbox.toml", text + "\n")
    with pytest.raises(ConfigError, match=message) as info:
        load_config(path)
    assert str(path) in str(info.value)


def test_a_bad_codec_in_a_flag_is_a_named_error() -> None:
    with pytest.raises(ConfigError, match="localhost: unknown codec 'ollama'; the codecs are"):
        effective_settings(ProjectConfig(), hosts=["localhost=ollama"])


def test_a_pyproject_hosts_table_error_names_its_header(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.blackbox.hosts]\n"gw" = true\n')
    with pytest.raises(ConfigError, match=r"\[tool\.blackbox\.hosts\] names the codec"):
        project_config(tmp_path, environ={})


# -- every single-valued key is read one way: flag, else file, else default ----------------------

SINGLE_CASES = [
    # key, flag argument and value, file text, (flag's, file's, default's) value
    ("match", {"match": "sequence"}, 'match = "sequence"', ("sequence", "sequence", "strict")),
    ("pace", {"pace": "0.5"}, 'pace = "recorded"', (0.5, 1.0, None)),
    ("order_gap", {"order_gap": "off"}, "order_gap = 60", (None, 60.0, 25.0)),
    ("exchanges", {"exchanges": "none"}, 'exchanges = "model-hosts"', ("none", "model-hosts", "all")),
    ("exchange_max_bytes", {"exchange_max_bytes": 10}, "exchange_max_bytes = 20", (10, 20, 16 * 1024 * 1024)),
    ("exchanges_max_bytes", {"exchanges_max_bytes": 0}, "exchanges_max_bytes = 30", (0, 30, 64 * 1024 * 1024)),
    ("default_masks", {"no_default_masks": True}, "default_masks = false", (False, False, True)),
    ("env_substitution", {"no_env_substitution": True}, "env_substitution = false", (False, False, True)),
]


@pytest.mark.parametrize(("key", "flag", "text", "values"), SINGLE_CASES, ids=[c[0] for c in SINGLE_CASES])
def test_each_single_value_comes_from_the_flag_else_the_file_else_the_default(
    tmp_path: Path, key: str, flag: dict[str, object], text: str, values: tuple[object, object, object]
) -> None:
    config = load_config(write(tmp_path / "blackbox.toml", text + "\n"))
    flag_name = "--" + next(iter(flag)).replace("_", "-")
    from_flag, from_file, default = (getattr(s, key) for s in (
        effective_settings(config, **flag), effective_settings(config), effective_settings(ProjectConfig())))  # type: ignore[arg-type]  # fmt: skip
    assert (from_flag.value, from_flag.source) == (values[0], flag_name)
    assert (from_file.value, from_file.source) == (values[1], str(config.path))
    assert (default.value, default.source) == (values[2], "default")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('exchanges = "some"', 'exchanges must be "all", "model-hosts" or "none", not \'some\''),
        ("exchange_max_bytes = -1", r"exchange_max_bytes must be a number of bytes \(0 or more\), not -1"),
        ("exchanges_max_bytes = true", r"exchanges_max_bytes must be a number of bytes \(0 or more\), not True"),
        ('env_substitution = "yes"', "env_substitution must be true or false, not 'yes'"),
        ('order_gap = "soon"', 'order_gap must be "off" or a number of milliseconds such as 25'),
    ],
)
def test_single_values_are_checked_when_the_file_is_read(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "blackbox.toml", text + "\n")
    with pytest.raises(ConfigError, match=message) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: ")
