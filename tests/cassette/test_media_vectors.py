"""Media files across implementations: one Node wrote from docs/cassette.md verifies here, and Node checks ours.

``make_js_extensions.js`` writes a run whose PNG is in ``js_media.media.json``,
sealed by the terminal event; ``check_js_media.js`` checks a media file Blackbox
wrote (chain, seal, each item's digest and size, every named digest stored).
Both are written from the docs alone.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from blackbox_mitm.cassette import load_trace
from blackbox_mitm.cassette.media import load_media, media_path
from blackbox_mitm.codecs.verified import verify_file

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cassettes"
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==")
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed (scripts/setup-test-clients)")


def _record_turns(cassette: Path, n: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "session"))
    from test_media_store import _record_turns as record

    record(cassette, n)


def _copy(tmp_path: Path) -> Path:
    for name in ("js_media.json", "js_media.media.json"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    return tmp_path / "js_media.json"


def test_the_node_written_media_file_verifies_and_holds_the_png() -> None:
    cassette = FIXTURES / "js_media.json"
    assert verify_file(cassette).ok
    document = load_media(cassette, load_trace(cassette))
    assert document is not None
    assert base64.b64decode(document["media"][hashlib.sha256(PNG).hexdigest()]["data"]) == PNG


def test_a_byte_changed_in_the_node_written_media_file_fails_verify(tmp_path: Path) -> None:
    cassette = _copy(tmp_path)
    side = tmp_path / "js_media.media.json"
    document = json.loads(side.read_text())
    digest = hashlib.sha256(PNG).hexdigest()
    document["media"][digest]["data"] = base64.b64encode(PNG[:-1] + b"\x00").decode()
    side.write_text(json.dumps(document))
    reasons = [p.reason for p in verify_file(cassette).problems]
    assert reasons and digest in reasons[0] and "do not have that SHA-256" in reasons[0]


@needs_node
def test_the_fixture_is_what_the_node_writer_writes(tmp_path: Path) -> None:
    subprocess.run([str(NODE), str(FIXTURES / "make_js_extensions.js"), str(tmp_path)], check=True, timeout=60)
    for name in ("js_media.json", "js_media.media.json"):
        assert (tmp_path / name).read_bytes() == (FIXTURES / name).read_bytes(), name


def _node_check(cassette: Path) -> tuple[int, dict[str, object]]:
    done = subprocess.run([str(NODE), str(FIXTURES / "check_js_media.js"), str(cassette)], capture_output=True, text=True, timeout=60)
    return done.returncode, json.loads(done.stdout)


@needs_node
@pytest.mark.parametrize("name", ["shots.json", "shots.json.gz"])
def test_node_checks_a_media_file_blackbox_wrote(tmp_path: Path, name: str) -> None:
    cassette = tmp_path / name
    _record_turns(cassette, 3)
    code, result = _node_check(cassette)
    assert code == 0 and result == {"ok": True, "problems": [], "stored": 2, "named": 2}, result


@needs_node
def test_node_finds_a_changed_byte_in_a_media_file_blackbox_wrote(tmp_path: Path) -> None:
    cassette = tmp_path / "shots.json"
    _record_turns(cassette, 2)
    side = media_path(cassette)
    document = json.loads(side.read_text())
    digest = hashlib.sha256(PNG).hexdigest()
    document["media"][digest]["data"] = base64.b64encode(PNG[:-1] + b"\x01").decode()
    side.write_text(json.dumps(document))
    code, result = _node_check(cassette)
    assert code == 1
    problems = result["problems"]
    assert isinstance(problems, list) and f"media {digest}: its bytes do not have that SHA-256" in problems


@needs_node
def test_node_verifies_its_own_fixture() -> None:
    code, result = _node_check(FIXTURES / "js_media.json")
    assert code == 0 and result["stored"] == 1, result
