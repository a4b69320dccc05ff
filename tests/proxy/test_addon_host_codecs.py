"""The addon and hosts named with their codec (``blackbox_hosts=HOST=CODEC``, ``[tool.blackbox.hosts]``), without sockets."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from mitmproxy import exceptions, http
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
