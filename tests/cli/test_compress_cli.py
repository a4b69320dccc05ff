"""`blackbox compress` / `decompress`, and the reading commands (verify, show, diff, view, golden) on compressed cassettes.

Through click's CliRunner: output and exit codes. Record, replay and fork of a
compressed cassette go through the real proxy in tests/e2e/test_compressed_e2e.py.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from blackbox_mitm.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cassettes"
PARENT = FIXTURES / "js_weather.json"
CHILD = FIXTURES / "js_weather_sunny.json"


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    out = tmp_path / "weather.json"
    out.write_bytes(PARENT.read_bytes())
    return out


def test_compress_writes_zst_beside_the_file_and_keeps_the_original(plain: Path) -> None:
    result = run("compress", plain)
    assert result.exit_code == 0, result.output
    out = plain.with_name("weather.json.zst")
    assert out.exists() and plain.exists()
    assert result.output.startswith(f"compressed {plain} (6,468 bytes) -> {out} (")
    assert "7 steps); the original is kept (--replace removes it)" in result.output


def test_compress_gzip_compact_then_decompress_round_trips_the_steps(plain: Path, tmp_path: Path) -> None:
    assert run("compress", plain, "--gzip", "--compact").exit_code == 0
    packed = tmp_path / "weather.json.gz"
    assert gzip.decompress(packed.read_bytes()).count(b"\n") == 1
    back = tmp_path / "back.json"
    result = run("decompress", packed, "-o", back)
    assert result.exit_code == 0, result.output
    assert json.loads(back.read_bytes())["steps"] == json.loads(plain.read_bytes())["steps"]


def test_compress_never_overwrites_without_overwrite(plain: Path) -> None:
    assert run("compress", plain).exit_code == 0
    out = plain.with_name("weather.json.zst")
    before = out.read_bytes()
    result = run("compress", plain, "--compact")
    assert result.exit_code == 2
    assert "the cassette already exists" in result.output and "--overwrite" in result.output
    assert out.read_bytes() == before
    assert run("compress", plain, "--compact", "--overwrite").exit_code == 0
    assert out.read_bytes() != before


def test_replace_removes_the_original(plain: Path) -> None:
    result = run("compress", plain, "--replace")
    assert result.exit_code == 0 and "the original was removed" in result.output
    assert not plain.exists()
    result = run("decompress", plain.with_name("weather.json.zst"), "--replace")
    assert result.exit_code == 0, result.output
    assert plain.read_bytes() == PARENT.read_bytes()  # byte for byte
    assert not plain.with_name("weather.json.zst").exists()


def test_names_that_do_not_fit_are_usage_errors(plain: Path, tmp_path: Path) -> None:
    result = run("compress", plain, "-o", tmp_path / "x.json")
    assert result.exit_code == 2 and "must end in .zst (zstd) or .gz (gzip)" in result.output
    result = run("decompress", plain)
    assert result.exit_code == 2 and "there is nothing to decompress" in result.output


def test_verify_show_and_diff_read_compressed_cassettes(plain: Path, tmp_path: Path) -> None:
    assert run("compress", plain).exit_code == 0
    child = tmp_path / "sunny.json.gz"
    child.write_bytes(gzip.compress(CHILD.read_bytes()))
    zst = plain.with_name("weather.json.zst")

    verified = run("verify", zst, child)
    assert verified.exit_code == 0
    assert verified.output.splitlines() == [f"OK {zst} (7 steps)", f"OK {child} (7 steps)"]
    assert run("show", zst).output == run("show", plain).output
    same = run("diff", plain, zst)
    assert same.exit_code == 0 and "identical: the same 7 steps in both" in same.output
    differ = run("diff", zst, child)
    assert differ.exit_code == 1
    assert differ.output.splitlines()[2:] == run("diff", plain, CHILD).output.splitlines()[2:]


def test_view_writes_a_page_of_a_compressed_run(plain: Path) -> None:
    assert run("compress", plain, "--replace").exit_code == 0
    result = run("view", plain.with_name("weather.json.zst"), "--no-forks")
    assert result.exit_code == 0, result.output
    page = plain.with_name("weather.html")
    assert page.exists() and "js-weather" in page.read_text(encoding="utf-8")


def test_golden_add_keeps_a_compressed_cassette_compressed(plain: Path, tmp_path: Path) -> None:
    assert run("compress", plain).exit_code == 0
    goldens = tmp_path / "goldens"
    result = run("golden", "add", plain.with_name("weather.json.zst"), "--goldens", goldens)
    assert result.exit_code == 0, result.output
    assert "as " + str(goldens / "weather.json.zst") in result.output
    listing = run("golden", "list", "--goldens", goldens)
    assert listing.exit_code == 0 and "weather  js-weather  7" in listing.output


def test_bad_compressed_input_is_a_named_error_with_exit_2(tmp_path: Path) -> None:
    not_gzip = tmp_path / "a.json.gz"
    not_gzip.write_bytes(PARENT.read_bytes())
    cut = tmp_path / "b.json.zst"
    full = tmp_path / "full.json"
    full.write_bytes(PARENT.read_bytes())
    assert run("compress", full, "-o", cut).exit_code == 0
    cut.write_bytes(cut.read_bytes()[:-8])
    result = run("verify", not_gzip, cut)
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert lines[0].startswith(f"ERROR {not_gzip}: the file is not gzip data, though its name ends in .gz")
    assert lines[1].startswith(f"ERROR {cut}: the zstd data is cut short (the file is truncated)")
    for command in ("show", "decompress"):
        result = run(command, cut)
        assert result.exit_code == 2
        assert "cut short" in result.output and "Traceback" not in result.output


def test_a_zip_bomb_is_refused_past_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * (32 << 20)))
    monkeypatch.setenv("BLACKBOX_MAX_CASSETTE_BYTES", str(4 << 20))
    result = run("show", bomb)
    assert result.exit_code == 2
    assert "decompresses to more than the 4,194,304 bytes a reader accepts" in result.output


def test_forks_lists_a_compressed_child_of_a_compressed_parent(tmp_path: Path) -> None:
    parent = tmp_path / "weather.json.zst"
    assert run("compress", PARENT, "-o", parent).exit_code == 0
    (tmp_path / "sunny.json.gz").write_bytes(gzip.compress(CHILD.read_bytes()))
    result = run("forks", parent, "--json")
    assert result.exit_code == 0, result.output
    assert [f["file"].rsplit("/", 1)[-1] for f in json.loads(result.output)["forks"]] == ["sunny.json.gz"]
