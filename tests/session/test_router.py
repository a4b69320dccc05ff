"""``session/router``: a run's name from the proxy credentials, and names that could leave the runs folder refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from blackbox_mitm.session.router import RouteRefused, RunRouter, run_from_proxy_authorization


def test_run_names_come_from_basic_proxy_credentials(tmp_path: Path) -> None:
    assert run_from_proxy_authorization("Basic cnVuLWE6") == "run-a"  # "run-a:"
    assert run_from_proxy_authorization("Bearer x") is None and run_from_proxy_authorization(None) is None
    router = RunRouter(tmp_path)
    for bad in ("../etc/passwd", "a/b", ""):
        with pytest.raises(RouteRefused):
            router.session_for(bad or None)


def test_a_name_the_report_would_take_a_missing_name_and_a_missing_cassette_are_refused_with_what_to_do(tmp_path: Path) -> None:
    router = RunRouter(tmp_path)
    with pytest.raises(RouteRefused, match=r"HTTPS_PROXY=http://<run>@HOST:PORT"):
        router.session_for(None)
    with pytest.raises(RouteRefused, match=r"may not end in '\.report'"):
        router.session_for("weather.report")
    with pytest.raises(RouteRefused, match=r"there is no cassette .*ghost\.json to replay"):
        router.session_for("ghost")
    assert router.runs() == ["ghost"]  # the refusal is kept for that run alone
    assert router.finish("ghost") == {
        "run": "ghost",
        "error": f"the proxy credentials name the run 'ghost', but there is no cassette {tmp_path / 'ghost.json'} to replay",
    }
    assert router.finish("never") == {"run": "never", "error": "the run made no model call"}


def test_a_broken_cassette_is_refused_for_its_run_and_records_go_to_their_own_files(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{not json")
    router = RunRouter(tmp_path)
    with pytest.raises(RouteRefused, match=r"run 'broken' cannot be served"):
        router.session_for("broken")
    recorder = RunRouter(tmp_path, mode="record")
    session = recorder.session_for("fresh")
    assert recorder.session_for("fresh") is session  # one session a run
    assert recorder.cassette_of("fresh") == tmp_path / "fresh.json"


def test_a_router_needs_a_folder_and_a_known_mode(tmp_path: Path) -> None:
    with pytest.raises(RouteRefused, match="not a directory"):
        RunRouter(tmp_path / "missing")
    with pytest.raises(ValueError, match="unknown mode 'fork'"):
        RunRouter(tmp_path, mode="fork")
    assert run_from_proxy_authorization("Basic !!!") is None  # not base64
    assert run_from_proxy_authorization("basic cnVuLWI6c2VjcmV0") == "run-b"  # "run-b:secret": the password is not the run
