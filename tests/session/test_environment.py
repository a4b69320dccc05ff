"""The run's environment as placeholders: recorded as values, replayed as the live ones (session.environment)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.codecs.verified import verify_trace
from blackbox_mitm.matcher.compare_runs import masked_divergence
from blackbox_mitm.matcher.masks import NO_RULES
from blackbox_mitm.matcher.report import ReplayStatus
from blackbox_mitm.session.build import record_session, replay_session
from blackbox_mitm.session.engine import Answer, Forward, ModelRequest, Session
from blackbox_mitm.session.environment import EnvSubstitution, RunEnvironment

PATH = "/v1/chat/completions"
KIRITIMATI = dt.datetime(2026, 12, 2, 9, 30, tzinfo=ZoneInfo("Pacific/Kiritimati"))
PAGO = dt.datetime(2026, 11, 30, 8, 30, tzinfo=ZoneInfo("Pacific/Pago_Pago"))


def env_a() -> RunEnvironment:
    return RunEnvironment(
        cwd="/srv/A/alice/proj",
        home="/srv/A/home/alice",
        user="alice",
        host="laptop-a",
        tmp="/tmp",
        now=KIRITIMATI,
        time_zone="Pacific/Kiritimati",
    )


def env_b() -> RunEnvironment:
    return RunEnvironment(
        cwd="/srv/B/ci/builds/proj",
        home="/srv/B/home/ci-bot",
        user="ci-bot",
        host="runner-b7",
        tmp="/tmp",
        now=PAGO,
        time_zone="Pacific/Pago_Pago",
    )


def prompt_in(env: RunEnvironment) -> str:
    forms = env.forms()
    return (
        f"Working directory: {env.cwd}\nMemory: {env.home}/.claude/projects/{forms['cwd-slug'][0]}/memory/\n"
        f"Skills: {forms['home-from-cwd'][0]}/skills\nUser {env.user} on {env.host}\n"
        f"Today is {forms['date'][0]} ({forms['date-long'][0]}; {forms['date-js'][0]}; {forms['date-us'][0]}), "
        f"<timezone>{env.time_zone}</timezone> {forms['tz-offset'][0]}"
    )


def test_every_value_and_derived_form_becomes_a_named_placeholder() -> None:
    sub = EnvSubstitution.for_record(env_a())
    assert sub.text(prompt_in(env_a())) == (
        "Working directory: <env:cwd>\nMemory: <env:home>/.claude/projects/<env:cwd-slug>/memory/\n"
        "Skills: <env:home-from-cwd>/skills\nUser <env:user> on <env:host>\n"
        "Today is <env:date> (<env:date-long>; <env:date-js>; <env:date-us>), <timezone><env:tz></timezone> <env:tz-offset>"
    )
    assert env_a().forms()["date-js"][0] == "Wed Dec 02 2026" and env_a().forms()["cwd-slug"][0] == "-srv-A-alice-proj"
    assert env_a().forms()["home-from-cwd"][0] == "../../home/alice"


def test_neighbouring_text_is_not_replaced() -> None:
    sub = EnvSubstitution.for_record(env_a())
    kept = "/srv/A/alice/project /x/srv/A/alice/proj alicebob 12/2/20260 /srv/A/alice/proj.bak"
    # (a user name in another path is the user's: /srv/A/<env:user>/project)
    assert sub.text(kept) == kept.replace("/alice/", "/<env:user>/")
    assert sub.text("see /srv/A/alice/proj/notes.txt, and /srv/A/alice/proj.") == "see <env:cwd>/notes.txt, and <env:cwd>."


def test_too_common_values_are_not_replaced_and_the_metadata_says_why() -> None:
    env = RunEnvironment(cwd="/work/x/proj", home="/root", user="root", host="a", tmp="/tmp", now=dt.datetime(2026, 12, 1, tzinfo=dt.UTC))
    sub = EnvSubstitution.for_record(env)
    meta = sub.metadata()
    assert "user" not in meta["replaced"] and "root" in meta["notReplaced"]["user"]
    assert "tmp" in meta["notReplaced"] and "host" in meta["notReplaced"] and "tz-offset" in meta["notReplaced"]
    assert sub.text("root@a:/tmp$ ls /root/x") == "root@a:/tmp$ ls <env:home>/x"
    assert meta["cwd"] == "/work/x/proj" and meta["startedAt"].startswith("2026-12-01T00:00:00")


def test_restoring_puts_the_live_values_in_place_of_the_placeholders() -> None:
    recorded = EnvSubstitution.for_record(env_a())
    live = EnvSubstitution.for_replay(env_b(), recorded.metadata())
    neutral = recorded.neutral({"toolInput": {"file_path": "/srv/A/alice/proj/notes.txt"}, "n": 1})
    assert neutral == {"toolInput": {"file_path": "<env:cwd>/notes.txt"}, "n": 1}
    assert live.restore(neutral) == {"toolInput": {"file_path": "/srv/B/ci/builds/proj/notes.txt"}, "n": 1}
    assert live.neutral(prompt_in(env_b())) == recorded.neutral(prompt_in(env_a()))


def _chat(prompt: str) -> bytes:
    return json.dumps({"model": "gpt-4.1", "messages": [{"role": "user", "content": prompt}]}).encode()


def _answer_reading(path: str) -> bytes:
    call = {"id": "call_abc", "type": "function", "function": {"name": "read", "arguments": json.dumps({"path": path})}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return orjson.dumps(
        {"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
    )


def _record(path: Path, env: RunEnvironment) -> Path:
    session = record_session(path, environment=env)
    action = session.on_request(ModelRequest(PATH, {}, _chat(prompt_in(env))))
    assert isinstance(action, Forward)
    assert session.on_response(action.ticket, 200, _answer_reading(f"{env.cwd}/notes.txt")) is None
    assert session.recorder is not None
    session.recorder.finish(path, exit_code=0)
    return path


def _served(session: Session, env: RunEnvironment) -> Any:
    answer = session.on_request(ModelRequest(PATH, {}, _chat(prompt_in(env))))
    assert isinstance(answer, Answer)
    return json.loads(answer.body)


def test_a_run_recorded_in_one_place_replays_in_another_with_its_paths(tmp_path: Path) -> None:
    cassette = _record(tmp_path / "a.json", env_a())
    trace = load_trace(cassette)
    assert verify_trace(trace) == []
    assert "/srv/A" not in json.dumps([s.payload for s in trace.steps])
    assert trace.environment is not None and trace.environment["cwd"] == "/srv/A/alice/proj"
    assert json.loads(cassette.read_text())["environment"]["replaced"][:2] == ["cwd", "cwd-slug"]
    body = _served(replay_session(cassette, environment=env_b()), env_b())
    arguments = body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(arguments) == {"path": "/srv/B/ci/builds/proj/notes.txt"}


def test_a_changed_prompt_still_diverges_and_a_moved_value_is_named(tmp_path: Path) -> None:
    cassette = _record(tmp_path / "a.json", env_a())
    session = replay_session(cassette, environment=env_b())
    changed = session.on_request(ModelRequest(PATH, {}, _chat(prompt_in(env_b()) + " and more")))
    assert isinstance(changed, Answer) and changed.status == 400
    # Replayed without substitution the report says where the agent runs now and where it ran.
    off = replay_session(cassette)
    assert isinstance(off.on_request(ModelRequest(PATH, {}, _chat(prompt_in(env_b())))), Answer)
    assert off.replay is not None
    note = _note(off.replay.status())
    assert "<env:cwd>" in note and "--no-env-substitution" in note


def test_a_recording_made_without_substitution_replayed_elsewhere_says_where_the_agent_runs(tmp_path: Path) -> None:
    session = record_session(tmp_path / "plain.json")  # no environment: the paths are recorded as they are
    action = session.on_request(ModelRequest(PATH, {}, _chat(prompt_in(env_a()))))
    assert isinstance(action, Forward)
    session.on_response(action.ticket, 200, _answer_reading("x"))
    assert session.recorder is not None
    session.recorder.finish(tmp_path / "plain.json", exit_code=0)
    replay = replay_session(tmp_path / "plain.json", environment=env_b())
    replay.on_request(ModelRequest(PATH, {}, _chat(prompt_in(env_b()))))
    assert replay.replay is not None
    note = _note(replay.replay.status())
    assert note == (
        "the agent runs in /srv/B/ci/builds/proj now; the recording was made without env substitution: "
        "re-record it with blackbox record (it is on by default)"
    )


def test_the_report_says_the_agent_runs_elsewhere_when_a_live_value_is_not_replaced(tmp_path: Path) -> None:
    cassette = _record(tmp_path / "a.json", env_a())
    root_env = RunEnvironment(
        cwd="/srv/B/ci/builds/proj", home="/srv/B/home/ci-bot", user="root", host="runner-b7", now=PAGO, time_zone="Pacific/Pago_Pago"
    )
    session = replay_session(cassette, environment=root_env)
    session.on_request(ModelRequest(PATH, {}, _chat(prompt_in(root_env))))
    assert session.replay is not None
    note = _note(session.replay.status())
    assert note.startswith("the agent runs as user root now, as alice when recorded")


def test_two_runs_recorded_in_two_places_compare_equal(tmp_path: Path) -> None:
    a = load_trace(_record(tmp_path / "a.json", env_a()))
    b = load_trace(_record(tmp_path / "b.json", env_b()))
    assert masked_divergence(a, b, NO_RULES) is None
    assert a.environment != b.environment and a.steps[-1].payload == b.steps[-1].payload


def test_capture_reads_this_process_environment(tmp_path: Path) -> None:
    (tmp_path / "proj" / "sub").mkdir(parents=True)
    (tmp_path / "proj" / ".git").mkdir()
    env = RunEnvironment.capture(
        cwd=tmp_path / "proj" / "sub", environ={"HOME": str(tmp_path / "home"), "USER": "alice", "TZ": "Pacific/Kiritimati"}
    )
    assert env.cwd == str(tmp_path / "proj" / "sub") and env.root == str(tmp_path / "proj")
    assert env.home == str(tmp_path / "home") and env.user == "alice" and env.time_zone == "Pacific/Kiritimati"


# -- agent profiles ------------------------------------------------------------------------------


def test_the_agent_profile_is_chosen_by_the_user_agent_and_masks_the_os_version(tmp_path: Path) -> None:
    from blackbox_mitm.matcher.masks import CompareRules
    from blackbox_mitm.matcher.profiles import PROFILES, profile_for

    assert profile_for({"user-agent": "claude-cli/2.1.3 (external, cli)"}) is PROFILES[0]
    assert profile_for({"user-agent": "GeminiCLI/0.9.0 (linux; x64)"}).name == "gemini-cli"  # type: ignore[union-attr]
    # Gemini CLI 0.61 names its client: GeminiCLI-tui/<version>/<model> (<platform>; <arch>; <surface>)
    assert profile_for({"user-agent": "GeminiCLI-tui/0.61.0/gemini-3.1-pro-preview (linux; x64; terminal)"}) is profile_for(
        {"user-agent": "GeminiCLI/0.9.0 (linux; x64)"}
    )
    assert profile_for({"user-agent": "python-httpx/0.28"}) is None
    for profile in PROFILES:  # RE2-compatible: no lookarounds, no backreferences
        for mask in profile.masks:
            assert "(?<" not in mask.pattern and "(?=" not in mask.pattern and "(?!" not in mask.pattern and "\\1" not in mask.pattern

    path = tmp_path / "os.json"
    session = record_session(path)
    action = session.on_request(
        ModelRequest(PATH, {}, _chat("x-billing-header: cc_version=2.1.332.95a; Env: OS Version: Linux 6.1.0-40-amd64\nHi"))
    )
    assert isinstance(action, Forward)
    session.on_response(action.ticket, 200, _answer_reading("x"))
    assert session.recorder is not None
    session.recorder.finish(path, exit_code=0)
    other_machine = _chat("x-billing-header: cc_version=2.1.332.c01; Env: OS Version: Linux 6.12.9-arch1\nHi")
    rules = CompareRules.build()
    plain = replay_session(path, rules=rules).on_request(ModelRequest(PATH, {"user-agent": "python-httpx/0.28"}, other_machine))
    assert isinstance(plain, Answer) and plain.status == 400  # no profile: the kernel version is compared
    claude = replay_session(path, rules=rules).on_request(
        ModelRequest(PATH, {"user-agent": "claude-cli/2.1.3 (external, cli)"}, other_machine)
    )
    assert isinstance(claude, Answer) and claude.status == 200 and claude.replayed
    off = replay_session(path, rules=CompareRules.build(defaults=False))
    refused = off.on_request(ModelRequest(PATH, {"user-agent": "claude-cli/2.1.3"}, other_machine))
    assert isinstance(refused, Answer) and refused.status == 400  # --no-default-masks: no profile either


def test_an_interrupted_recording_keeps_its_environment(tmp_path: Path) -> None:
    from blackbox_mitm.cassette.recovery import recover_journal

    path = tmp_path / "crashed.json"
    session = record_session(path, environment=env_a())
    action = session.on_request(ModelRequest(PATH, {}, _chat(prompt_in(env_a()))))
    assert isinstance(action, Forward)
    session.on_response(action.ticket, 200, _answer_reading(f"{env_a().cwd}/notes.txt"))
    assert session.recorder is not None and session.recorder.journal is not None
    session.recorder.journal.close()  # the process dies here: no finish()
    out, _ = recover_journal(path, quiet=True)
    trace = load_trace(out)
    assert trace.environment is not None and trace.environment["cwd"] == "/srv/A/alice/proj"
    served = _served(replay_session(out, environment=env_b()), env_b())
    assert "/srv/B/ci/builds/proj/notes.txt" in json.dumps(served)


def test_the_literal_prefilter_rewrites_exactly_what_the_regex_alone_does() -> None:
    # text() skips the regex for a string holding none of the replaced values (the recording's hot path): the
    # result must be the same as running the regex on every string, and an untouched string is the same object.
    sub = EnvSubstitution.for_record(env_a())
    assert sub._regex is not None
    forms = env_a().forms()
    texts = [
        prompt_in(env_a()),
        "nothing of this run's environment here: /srv/B/other, bob@desktop, 1999-01-01",
        f"{env_a().cwd}x is another folder; {env_a().cwd}/src is inside",  # the bounds are the regex's, not the prefilter's
        f"slug {forms['cwd-slug'][0]} and the user alice-2 (not the user) and alice",
        "",
    ]
    for text in texts:
        expected = sub._regex.sub(lambda m: f"<env:{str(m.lastgroup).replace('_', '-')}>", text)
        assert sub.text(text) == expected
    untouched = texts[1]
    assert sub.text(untouched) is untouched
    assert sub.neutral({"messages": [untouched]})["messages"][0] is untouched


def test_a_payload_holding_no_replaced_value_is_returned_as_is_and_one_holding_one_is_rewritten() -> None:
    # neutral() serializes a payload once to tell whether any replaced value occurs in it; the values are looked
    # for as JSON writes them, so one with a quote, a backslash or a non-ASCII letter is still found.
    odd = RunEnvironment(cwd='/srv/A/zoë "q" \\proj', home="/srv/A/home/zoë", user="zoebot", host="laptop-z", tmp="/tmp", now=KIRITIMATI)
    sub = EnvSubstitution.for_record(odd)
    clean: dict[str, Any] = {"messages": [{"role": "user", "content": "nothing here"}], "tools": [{"name": "t", "n": 1}]}
    assert sub.neutral(clean) is clean
    holding = {"messages": [{"role": "system", "content": f"cwd: {odd.cwd}; home {odd.home}"}], "n": [1, 2.5, None]}
    out = sub.neutral(holding)
    assert out["messages"][0]["content"] == "cwd: <env:cwd>; home <env:home>"
    assert out["n"] is holding["n"]
    assert sub.neutral([odd.cwd]) == ["<env:cwd>"]
    # What orjson cannot write (a key that is not a string, a lone surrogate) is walked as before.
    assert sub.neutral({1: odd.cwd}) == {1: "<env:cwd>"}
    assert sub.neutral({"a": "\ud800", "b": odd.home}) == {"a": "\ud800", "b": "<env:home>"}


def _note(status: ReplayStatus) -> str:
    """The note of the first divergence's difference (a replay that diverged)."""
    first = status["first_divergence"]
    assert first is not None and first["difference"] is not None
    return first["difference"]["note"]
