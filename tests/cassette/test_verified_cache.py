"""``load_verified`` skips re-checking bytes that verified before (cassette/verified_cache.py), and nothing else.

Each test has a cache folder of its own (``BLACKBOX_CACHE_DIR``). What must hold:
the same bytes are verified once; a changed byte, other provider facts, a failed
check or ``BLACKBOX_NO_CACHE`` mean a whole verification again; a cache that
cannot be written is skipped without a word; ``verify_file`` (``blackbox verify``)
never reads it; and a big cassette's objects are kept out of the cyclic collector's walks.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
from cassette_builders import edit_file, save, weather_trace

from blackbox_mitm.cassette import stepwise, verified_cache
from blackbox_mitm.cassette import verify as verify_module
from blackbox_mitm.cassette.facts import ProviderFacts
from blackbox_mitm.codecs import provider_facts
from blackbox_mitm.codecs.verified import load_verified, verify_file
from blackbox_mitm.errors import UnverifiedCassetteError


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("BLACKBOX_CACHE_DIR", str(folder))
    monkeypatch.delenv("BLACKBOX_NO_CACHE", raising=False)
    return folder


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many steps each whole verification (``verify_trace`` inside ``load_verified``) checked."""
    seen: list[int] = []
    real = verify_module.verify_trace

    def counting(trace: Any, **kwargs: Any) -> Any:
        seen.append(len(trace.steps))
        return real(trace, **kwargs)

    monkeypatch.setattr(verify_module, "verify_trace", counting)
    return seen


def _entries(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_the_same_bytes_are_verified_once(tmp_path: Path, cache: Path, checks: list[int]) -> None:
    path = save(weather_trace(), tmp_path / "run.json")
    first, second = load_verified(path), load_verified(path)
    assert checks == [7]  # the second load took the first one's answer
    assert [s.hash for s in first.steps] == [s.hash for s in second.steps]
    assert len(_entries(cache)) == 1
    copy = tmp_path / "copy.json"  # the key is the contents, not the path
    copy.write_bytes(path.read_bytes())
    load_verified(copy)
    assert checks == [7]


def test_a_changed_byte_is_verified_again_and_refused(tmp_path: Path, cache: Path, checks: list[int]) -> None:
    path = save(weather_trace(), tmp_path / "run.json")
    load_verified(path)

    def tamper(data: dict[str, Any]) -> None:
        data["steps"][3]["payload"]["result"]["celsius"] = 30

    edit_file(path, tamper)
    with pytest.raises(UnverifiedCassetteError) as caught:
        load_verified(path)
    assert "step 3" in str(caught.value) and "hash" in str(caught.value)
    assert checks == [7, 7]
    assert len(_entries(cache)) == 1  # a cassette that did not verify is never remembered
    with pytest.raises(UnverifiedCassetteError):
        load_verified(path)
    assert checks == [7, 7, 7]


def test_other_provider_facts_do_not_share_an_answer(cache: Path) -> None:
    facts = provider_facts()
    fewer = ProviderFacts(facts.id_prefixes[1:], facts.response_keys, facts.neutral_params, facts.wire_params)
    digest = "0" * 64
    assert verified_cache.verified_key(digest, facts) == verified_cache.verified_key(digest, facts)
    assert verified_cache.verified_key(digest, facts) != verified_cache.verified_key(digest, fewer)
    assert verified_cache.verified_key(digest, facts) != verified_cache.verified_key("1" * 64, facts)


def test_no_cache_verifies_every_time_and_writes_nothing(
    tmp_path: Path, cache: Path, checks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BLACKBOX_NO_CACHE", "1")
    path = save(weather_trace(), tmp_path / "run.json")
    load_verified(path)
    load_verified(path)
    assert checks == [7, 7]
    assert not cache.exists()


def test_a_cache_that_cannot_be_written_is_skipped(tmp_path: Path, checks: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("BLACKBOX_CACHE_DIR", str(blocked))
    path = save(weather_trace(), tmp_path / "run.json")
    assert len(load_verified(path).steps) == 7
    assert len(load_verified(path).steps) == 7
    assert checks == [7, 7]
    assert blocked.read_text() == "a file where the cache folder would be"


def test_a_folder_others_may_write_is_never_read(tmp_path: Path, cache: Path, checks: list[int]) -> None:
    path = save(weather_trace(), tmp_path / "run.json")
    load_verified(path)
    verified = cache / "verified"
    assert verified.stat().st_mode & 0o777 == 0o700  # made for this user alone
    verified.chmod(0o777)  # as if anyone could have written its entries
    load_verified(path)
    assert checks == [7, 7]  # the entry is there, but nobody else's word is taken
    verified.chmod(0o700)
    load_verified(path)
    assert checks == [7, 7]


def test_verify_file_never_reads_the_cache(tmp_path: Path, cache: Path, checks: list[int]) -> None:
    path = save(weather_trace(), tmp_path / "run.json")
    load_verified(path)
    assert verify_file(path).ok and verify_file(path).ok
    assert checks == [7, 7, 7]  # `blackbox verify` checks every step, every time


def test_the_default_folder_follows_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BLACKBOX_CACHE_DIR", raising=False)
    monkeypatch.delenv("BLACKBOX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert verified_cache.cache_dir() == tmp_path / "xdg" / "blackbox"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec: a relative path is ignored
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert verified_cache.cache_dir() == tmp_path / "home" / ".cache" / "blackbox"


def test_a_big_cassette_is_frozen_out_of_the_collector(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = save(weather_trace(), tmp_path / "run.json")
    before = gc.get_freeze_count()
    load_verified(path)
    assert gc.get_freeze_count() == before  # small: left to the collector
    monkeypatch.setattr(stepwise, "FREEZE_BYTES", 1)
    try:
        trace = load_verified(path)
        assert gc.get_freeze_count() > before
        assert gc.isenabled()
        assert trace.steps[-1].payload["event"] == "run_completed"
    finally:
        gc.unfreeze()
