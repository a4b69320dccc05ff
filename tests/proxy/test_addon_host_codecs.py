"""The addon and hosts named with their codec (``blackbox_hosts=HOST=CODEC``, ``[tool.blackbox.hosts]``), without sockets."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from mitmproxy import exceptions, http
from mitmproxy.addons.script import load_script
from mitmproxy.test import taddons, tflow, tutils

from blackbox_mitm.proxy.addon import DEFAULT_HOSTS, BlackboxAddon

CHAT = {"model": "llama-3.3-70b", "messages": [{"role": "user", "content": "Hi"}]}
MESSAGES = {"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]}


def _flow(host: str, path: str, body: object = CHAT, method: str = "POST") -> http.HTTPFlow:
    req = tutils.treq(host=host, port=443, scheme=b"https", method=method.encode(), path=path.encode(), content=orjson.dumps(body))
    req.headers["content-type"] = "application/json"
    return tflow.tflow(req=req)


def test_the_option_names_hosts_with_their_codec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BLACKBOX_CONFIG", "")
    addon = BlackboxAddon()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, blackbox_hosts=[*DEFAULT_HOSTS, "LLM.corp.example=openai"])
        assert "llm.corp.example" in addon.hosts and addon.host_codecs == {"llm.corp.example": "openai"}
        tctx.configure(addon, blackbox_mode="record", blackbox_cassette=str(tmp_path / "run.json"))
        chat = _flow("llm.corp.example", "/v1/chat/completions")
        addon.requestheaders(chat)
        addon.request(chat)
        assert chat.metadata["blackbox.ticket"].codec.NAME == "openai"  # its model call, forwarded to be recorded
        other = _flow("llm.corp.example", "/v1/messages", MESSAGES)  # not the codec it speaks: not a model call
        addon.requestheaders(other)
        addon.request(other)
        assert "blackbox.ticket" not in other.metadata and other.response is None
        addon.done()


def test_an_unknown_codec_in_the_option_is_refused_with_the_names() -> None:
    addon = BlackboxAddon()
    with taddons.context(addon) as tctx, pytest.raises(exceptions.OptionsError, match=r"blackbox_hosts: gw: unknown codec 'vllm'.*openai"):
        tctx.configure(addon, blackbox_hosts=["gw=vllm"])


def test_the_project_configs_hosts_table_is_used_by_mitmdump(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "blackbox.toml"
    config.write_text('[hosts]\n"llm.corp.example" = "anthropic"\n')
    monkeypatch.setenv("BLACKBOX_CONFIG", str(config))
    addon = BlackboxAddon()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, blackbox_mode="record", blackbox_cassette=str(tmp_path / "run.json"))
        assert "llm.corp.example" in addon.hosts and addon.host_codecs == {"llm.corp.example": "anthropic"}
        call = _flow("llm.corp.example", "/v1/messages", MESSAGES)
        addon.requestheaders(call)
        addon.request(call)
        assert call.metadata["blackbox.ticket"].codec.NAME == "anthropic"
        addon.done()


def test_use_hosts_gives_the_intercepted_hosts_and_codecs() -> None:
    addon = BlackboxAddon()
    every = addon.use_hosts(["gw.example=gemini", "plain.example", " "])
    assert every[: len(DEFAULT_HOSTS)] == list(DEFAULT_HOSTS) and every[-2:] == ["gw.example", "plain.example"]
    assert addon.hosts == set(every) and addon.host_codecs == {"gw.example": "gemini"}


def test_the_cli_and_mitmdumps_options_build_the_same_host_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One table, two ways in: `blackbox record --host ...` (proxy_for -> use_hosts) and
    `mitmdump -s addon/blackbox_addon.py --set blackbox_hosts=...` (configure), each with the project config's hosts."""
    from blackbox_mitm.config import effective_settings
    from blackbox_mitm.proxy.wrap import proxy_for
    from blackbox_mitm.session.build import record_session

    config = tmp_path / "blackbox.toml"
    config.write_text('[hosts]\n"llm.corp.example" = "anthropic"\n"gw.example" = "openai"\n')
    monkeypatch.setenv("BLACKBOX_CONFIG", str(config))
    flags = ["GW.example=gemini", "plain.example"]  # the flag's codec wins over the config's, in both

    cli = proxy_for(record_session(tmp_path / "cli.json"), hosts=effective_settings(hosts=flags).host_specs).addon  # not started
    script = load_script(str(Path(__file__).resolve().parents[2] / "addon" / "blackbox_addon.py"))  # as mitmdump -s does
    assert script is not None
    (dump,) = script.addons
    assert isinstance(dump, BlackboxAddon)
    with taddons.context(dump) as tctx:
        tctx.configure(dump, blackbox_hosts=[*DEFAULT_HOSTS, *flags])
        tctx.configure(dump, blackbox_mode="record", blackbox_cassette=str(tmp_path / "dump.json"))
        assert (dump.hosts, dump.host_codecs) == (cli.hosts, cli.host_codecs)
        assert dump.hosts == {*DEFAULT_HOSTS, "llm.corp.example", "gw.example", "plain.example"}
        assert dump.host_codecs == {"llm.corp.example": "anthropic", "gw.example": "gemini"}
        dump.done()


def test_host_table_puts_the_base_first_and_the_later_codec_wins() -> None:
    from blackbox_mitm.errors import ConfigError
    from blackbox_mitm.proxy.hosts import host_table

    table = host_table(["a.example=openai", "B.example", "a.example=gemini", ""], base=("z.example", "b.example"))
    assert table.hosts == ("z.example", "b.example", "a.example") and table.codecs == {"a.example": "gemini"}
    assert host_table([]).hosts == DEFAULT_HOSTS and host_table([], base=()).hosts == ()
    with pytest.raises(ConfigError, match="unknown codec 'vllm'"):
        host_table(["gw=vllm"])
