"""``--clock recorded``'s pieces: libfaketime's variables, a clear error without it, certificates valid back then."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from mitmproxy import certs

from blackbox_mitm.proxy.clock import ClockUnavailable, faketime_env, find_libfaketime, reach_back


def test_the_variables_start_the_clock_at_the_recorded_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = tmp_path / "libfaketime.so.1"
    lib.write_bytes(b"")
    monkeypatch.setenv("BLACKBOX_LIBFAKETIME", str(lib))
    monkeypatch.setenv("TZ", "UTC")
    start = dt.datetime(2026, 11, 28, 10, 0, 5, tzinfo=dt.UTC)
    env = faketime_env(start.timestamp() * 1000, {"LD_PRELOAD": "/other.so"})
    assert env["FAKETIME"] == "@2026-11-28 10:00:05"
    assert env["LD_PRELOAD"] == f"{lib} /other.so"
    assert env["FAKETIME_DONT_FAKE_MONOTONIC"] == "1"


def test_without_libfaketime_the_error_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BLACKBOX_LIBFAKETIME", str(tmp_path / "missing.so"))
    with pytest.raises(ClockUnavailable, match="apt-get install faketime"):
        find_libfaketime()


def test_certificates_made_after_reach_back_are_valid_from_before_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(certs, "CERT_VALIDITY_OFFSET", dt.timedelta(days=-2))
    ten_days_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=10)
    reach_back(ten_days_ago.timestamp() * 1000)
    assert dt.timedelta(days=-11) >= certs.CERT_VALIDITY_OFFSET
    reach_back(dt.datetime.now(dt.UTC).timestamp() * 1000)  # a recent start never narrows it
    assert dt.timedelta(days=-11) >= certs.CERT_VALIDITY_OFFSET
