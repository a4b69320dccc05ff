"""How ``blackbox`` reads its command line, through click's CliRunner: nothing here starts a proxy.

The commands that wrap an agent (record, replay, fork, test) take the agent's
command after ``--`` or from the first word that is not theirs; an unknown option
before it is a usage error. Library errors become ``blackbox CMD: message`` with a
hint, and exit 2 (1 where a command declares the refusal an outcome).
"""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "session"))
from fork_parent import weather_cassette

from blackbox_mitm.cli import golden_commands, main
from blackbox_mitm.cli.base import BlackboxCommand, BlackboxGroup
from blackbox_mitm.cli.fork_commands import fork
from blackbox_mitm.cli.run_commands import record, replay
from blackbox_mitm.errors import BlackboxError, ForkRefused


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def parsed(command: click.Command, *args: str) -> dict[str, object]:
    with command.make_context(command.name, list(args)) as ctx:
        return dict(ctx.params)


# -- where the wrapped command starts -----------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["record", "--junt", "out.xml", "-o", "run.json", "--", "python", "agent.py"],
        ["replay", "run.json", "--junt", "out.xml", "--", "python", "agent.py"],
        ["fork", "run.json", "--at", "3", "--junt", "out.xml", "-o", "child.json", "--", "python", "agent.py"],
        ["test", "--junt", "out.xml", "--", "python", "agent.py"],
    ],
    ids=["record", "replay", "fork", "test"],
)
def test_an_unknown_option_before_the_command_is_a_usage_error(tmp_path: Path, args: list[str]) -> None:
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 2
    assert "no such option: --junt" in result.output


def test_the_wrapped_command_starts_at_the_first_word_that_is_not_an_option() -> None:
    params = parsed(record, "-o", "run.json", "-v", "python", "agent.py", "--task", "x", "--", "-o")
    assert params["command"] == ("python", "agent.py", "--task", "x", "--", "-o")
    assert params["verbose"] is True and params["output"] == Path("run.json")


def test_after_a_double_dash_everything_is_the_wrapped_command() -> None:
    assert parsed(record, "-o", "run.json", "--", "--looks-like-ours", "-v")["command"] == ("--looks-like-ours", "-v")


def test_options_may_follow_the_positional_arguments_up_to_the_command() -> None:
    params = parsed(replay, "run.json", "--match", "sequence", "--stream-delay-ms", "5", "node", "agent.js", "--match", "x")
    assert (params["cassette"], params["match"], params["stream_delay_ms"]) == ("run.json", "sequence", 5)
    assert params["command"] == ("node", "agent.js", "--match", "x")
    forked = parsed(fork, "run.json", "--at", "3", "--tool-result", "{}", "-o", "c.json", "python", "a.py")
    assert (forked["parent"], forked["at"], forked["tool_result"], forked["command"]) == ("run.json", (3,), "{}", ("python", "a.py"))


def test_short_options_cluster_and_take_attached_values() -> None:
    params = parsed(record, "-vo", "run.json", "python", "a.py")
    assert (params["verbose"], params["output"], params["command"]) == (True, Path("run.json"), ("python", "a.py"))
    attached = parsed(record, "-orun.json", "--map-remote=|a|b", "python")
    assert (attached["output"], attached["map_remote"], attached["command"]) == (Path("run.json"), ("|a|b",), ("python",))


def test_the_test_command_takes_its_command_the_same_way(tmp_path: Path) -> None:
    params = parsed(golden_commands.test_command, "--junit", str(tmp_path / "out.xml"), "-j", "2", "python", "agent.py", "--junit", "x")
    assert params["command"] == ("python", "agent.py", "--junit", "x") and params["jobs"] == 2


@pytest.mark.parametrize("command", ["replay", "fork"])
def test_modes_are_a_choice(command: str) -> None:
    args = ["replay", "run.json"] if command == "replay" else ["fork", "run.json", "-o", "c.json"]
    result = cli(*args, "--match", "loose", "--", "true")
    assert result.exit_code == 2
    assert "'loose' is not one of 'strict', 'sequence'" in result.output


def test_a_bad_map_remote_spec_is_refused_before_anything_runs(tmp_path: Path) -> None:
    result = cli("record", "-o", str(tmp_path / "run.json"), "--map-remote", "nope", "--", "true")
    assert result.exit_code == 2
    assert "'nope' is not a map_remote spec" in result.output
    assert not (tmp_path / "run.json.journal").exists()


# -- library errors to exit codes, in one place -------------------------------------------------


def _toy(error: BaseException, **attrs: object) -> click.Group:
    @click.group(cls=BlackboxGroup)
    def toy() -> None:
        pass

    @toy.command("go", **attrs)
    @click.option("--tool-result", "tool_result")
    @click.option("--overwrite", is_flag=True)
    def go(tool_result: str | None, overwrite: bool) -> None:
        raise error

    return toy


def test_a_library_error_prints_its_message_and_hint_with_this_commands_flags() -> None:
    error = ForkRefused("step 1 is a model answer", hint="edit it with a tool result", options=("tool_result", "overwrite", "not_ours"))
    result = CliRunner().invoke(_toy(error), ["go"], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.output == "blackbox go: step 1 is a model answer\n  hint: edit it with a tool result (--tool-result, --overwrite)\n"


def test_a_command_may_declare_a_refusal_an_outcome() -> None:
    toy = _toy(ForkRefused("refused"), exit_codes={ForkRefused: 1})
    assert CliRunner().invoke(toy, ["go"], catch_exceptions=False).exit_code == 1
    other = _toy(BlackboxError("other"), exit_codes={ForkRefused: 1})
    assert CliRunner().invoke(other, ["go"], catch_exceptions=False).exit_code == 2


def test_an_os_error_is_a_named_refusal_with_exit_2() -> None:
    toy = _toy(PermissionError(errno.EACCES, "Permission denied", "/srv/out.json"))
    result = CliRunner().invoke(toy, ["go"], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.output == "blackbox go: /srv/out.json: Permission denied\n"


def test_every_registered_command_translates_errors() -> None:
    def walk(group: click.Group) -> list[click.Command]:
        found: list[click.Command] = []
        ctx = click.Context(group)
        for name in group.list_commands(ctx):  # through click's API: the top group imports its commands lazily
            sub = group.get_command(ctx, name)
            assert sub is not None
            found.extend(walk(sub) if isinstance(sub, click.Group) else [sub])
        return found

    commands = walk(main)
    assert {c.name for c in commands} >= {"record", "replay", "proxy", "fork", "forks", "verify", "show", "diff", "recover", "test"}
    assert all(isinstance(c, BlackboxCommand) for c in commands)


def test_fork_refusals_show_the_flags_to_use(tmp_path: Path) -> None:
    parent = weather_cassette(tmp_path / "parent.json")
    result = cli("fork", str(parent), "--at", "1", "--tool-result", "{}", "-o", str(tmp_path / "c.json"), "--", "true")
    assert result.exit_code == 2
    assert 'blackbox fork: step 1 is a model answer (tool:get_weather), so a "tool_result" edit cannot replace it' in result.output
    assert "hint: a model answer is edited with a response edit (--response)" in result.output


def test_the_cli_imports_neither_pytest_nor_mitmproxy() -> None:
    code = "import sys, blackbox_mitm.cli\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('pytest', '_pytest', 'mitmproxy')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
