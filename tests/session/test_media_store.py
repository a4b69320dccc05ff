"""The run's media bytes (cassette/media.py, session/media.py): stored once per run, sealed, verified, compressed, capped.

Driven through the session engine in plain Python (no proxy): an agent that re-sends
its screenshot on every turn, an answer that carries an image, a fork.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from blackbox_mitm.cassette import compression, load_trace
from blackbox_mitm.cassette.media import load_media, media_path, media_ref_of
from blackbox_mitm.cassette.records import MediaDocument
from blackbox_mitm.codecs.base import SseEvent
from blackbox_mitm.codecs.verified import verify_file
from blackbox_mitm.session.build import record_session, replay_session
from blackbox_mitm.session.engine import Answer, Forward, ModelRequest, Session
from blackbox_mitm.session.media import MediaBook, media_max_bytes

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==")
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n" * 40
CHAT = "/v1/chat/completions"
GEMINI = "/v1beta/models/gemini-2.5-flash-image:generateContent"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _screenshot_turns(n: int) -> list[bytes]:
    """An agent's requests: each turn re-sends the same screenshot (and, from turn 2, a PDF) with the history."""
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_b64(PNG)}"}}
    doc = {"type": "file", "file": {"filename": "spec.pdf", "file_data": f"data:application/pdf;base64,{_b64(PDF)}"}}
    bodies: list[bytes] = []
    messages: list[dict[str, Any]] = []
    for k in range(n):
        parts: list[Any] = [{"type": "text", "text": f"turn {k}"}, image] + ([doc] if k else [])
        messages = [*messages, {"role": "user", "content": parts}]
        bodies.append(json.dumps({"model": "gpt-4.1", "messages": messages}).encode())
        messages = [*messages, {"role": "assistant", "content": f"seen {k}"}]
    return bodies


def _chat_answer(text: str) -> bytes:
    message = {"role": "assistant", "content": text}
    return orjson.dumps(
        {"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    )


def _record(session: Session, path: str, body: bytes, answer: bytes) -> None:
    action = session.on_request(ModelRequest(path=path, headers={}, body=body))
    assert isinstance(action, Forward), action
    assert session.on_response(action.ticket, 200, answer) is None


def _record_turns(cassette: Path, n: int = 3) -> None:
    session = record_session(cassette)
    for k, body in enumerate(_screenshot_turns(n)):
        _record(session, CHAT, body, _chat_answer(f"seen {k}"))
    assert session.recorder is not None
    session.recorder.finish(cassette, exit_code=0)


def test_a_screenshot_re_sent_on_every_turn_is_stored_once(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    _record_turns(cassette, 3)
    trace = load_trace(cassette)
    ref = media_ref_of(trace)
    assert ref is not None and ref["file"] == "run.media.json" and ref["count"] == 2
    document = load_media(cassette, trace)
    assert document is not None
    assert sorted(document["media"]) == sorted([_sha(PNG), _sha(PDF)])  # 3 turns x PNG + 2 x PDF sent: each stored once
    assert base64.b64decode(document["media"][_sha(PNG)]["data"]) == PNG
    assert document["media"][_sha(PDF)] == {"mediaType": "application/pdf", "size": len(PDF), "data": _b64(PDF)}
    assert media_path(cassette).read_bytes().count(_b64(PNG).encode()) == 1
    assert verify_file(cassette).ok


def test_a_changed_byte_fails_verify_naming_the_digest(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    _record_turns(cassette, 2)
    side = media_path(cassette)
    document = json.loads(side.read_text())
    tampered = bytearray(PNG)
    tampered[-5] ^= 1
    document["media"][_sha(PNG)]["data"] = _b64(bytes(tampered))
    side.write_text(json.dumps(document))
    result = verify_file(cassette)
    assert not result.ok
    reasons = [p.reason for p in result.problems]
    assert any(_sha(PNG) in r and "do not have that SHA-256" in r for r in reasons), reasons
    assert any("the terminal event seals" in r for r in reasons)
    with pytest.raises(Exception, match="does not verify"):
        replay_session(cassette)


def test_a_missing_media_file_or_a_dropped_item_fails_verify(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    _record_turns(cassette, 2)
    side = media_path(cassette)
    document = json.loads(side.read_text())
    del document["media"][_sha(PDF)]
    side.write_text(json.dumps(document))
    reasons = [p.reason for p in verify_file(cassette).problems]
    assert any(_sha(PDF) in r and "neither stored nor listed" in r for r in reasons), reasons
    side.unlink()
    reasons = [p.reason for p in verify_file(cassette).problems]
    assert any("run.media.json" in r and "keep it beside the cassette" in r for r in reasons), reasons


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
def test_the_media_file_is_compressed_as_the_cassette_is(tmp_path: Path, suffix: str) -> None:
    cassette = tmp_path / f"run.json{suffix}"
    _record_turns(cassette, 3)
    side = media_path(cassette)
    assert side.name == f"run.media.json{suffix}"
    raw = side.read_bytes()
    assert compression.kind_of(side) != compression.PLAIN
    assert _b64(PNG).encode() not in raw  # compressed, not plain JSON
    plain = compression.decode(side, raw)
    assert json.loads(plain)["kind"] == "blackbox-media"
    assert len(raw) < len(plain)  # the PDF is repetitive text
    assert verify_file(cassette).ok
    assert load_media(cassette, load_trace(cassette)) is not None


def test_over_the_cap_an_item_is_listed_as_not_kept_and_the_run_still_verifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BLACKBOX_MEDIA_MAX_BYTES", str(len(PNG) + 10))  # room for the PNG, not the PDF
    cassette = tmp_path / "run.json"
    _record_turns(cassette, 2)
    document = load_media(cassette, load_trace(cassette))
    assert document is not None and list(document["media"]) == [_sha(PNG)]
    [left] = document["notKept"]
    assert left["sha256"] == _sha(PDF) and left["size"] == len(PDF) and left["mediaType"] == "application/pdf"
    assert "cap" in left["why"] and "BLACKBOX_MEDIA_MAX_BYTES raises it" in left["why"]
    assert verify_file(cassette).ok  # nothing recorded is lost: the steps still name the PDF by digest
    session = replay_session(cassette)  # and a strict replay compares it by digest
    for body in _screenshot_turns(2):
        action = session.on_request(ModelRequest(path=CHAT, headers={}, body=body))
        assert isinstance(action, Answer) and action.status == 200, action


def test_the_cap_setting_is_read_and_checked() -> None:
    assert media_max_bytes({}) == 256 * 1024 * 1024
    assert media_max_bytes({"BLACKBOX_MEDIA_MAX_BYTES": "1000"}) == 1000
    with pytest.raises(ValueError, match="number of bytes"):
        media_max_bytes({"BLACKBOX_MEDIA_MAX_BYTES": "10MB"})


def test_a_text_document_holding_a_known_credential_is_not_kept() -> None:
    book = MediaBook(max_bytes=10_000, secrets={"sk-secret-0123456789"})
    book.add({"d1": ("text/plain", b"token sk-secret-0123456789"), "d2": ("image/png", PNG)})
    assert list(book.items) == ["d2"] and book.not_kept["d1"]["why"] == "it holds a credential the run used"


def test_a_run_without_media_writes_no_media_file(tmp_path: Path) -> None:
    cassette = tmp_path / "run.json"
    session = record_session(cassette)
    _record(session, CHAT, json.dumps({"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}).encode(), _chat_answer("hi"))
    assert session.recorder is not None
    session.recorder.finish(cassette, exit_code=0)
    assert not media_path(cassette).exists()
    assert "media" not in load_trace(cassette).steps[-1].payload


# -- an answer that carries an image (Gemini) ------------------------------------------------------


def _gemini_request(stream: bool = False) -> ModelRequest:
    body = {
        "contents": [{"role": "user", "parts": [{"text": "Draw a red pixel."}]}],
        "generationConfig": {"responseModalities": ["TEXT", "IMAGE"]},
    }
    path = GEMINI.replace("generateContent", "streamGenerateContent?alt=sse") if stream else GEMINI
    return ModelRequest(path=path, headers={}, body=json.dumps(body).encode())


GEMINI_ANSWER = {
    "candidates": [
        {
            "content": {"role": "model", "parts": [{"text": "Here it is."}, {"inlineData": {"mimeType": "image/png", "data": _b64(PNG)}}]},
            "finishReason": "STOP",
        }
    ],
    "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1290, "totalTokenCount": 1295},
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_an_image_answer_is_recorded_and_served_back_byte_identical(tmp_path: Path, stream: bool) -> None:
    cassette = tmp_path / "img.json"
    session = record_session(cassette)
    action = session.on_request(_gemini_request(stream))
    assert isinstance(action, Forward)
    if stream:  # the answer as one server-sent chunk, as the proxy's stream tee hands it over
        assert session.on_response(action.ticket, 200, [SseEvent(None, json.dumps(GEMINI_ANSWER))]) is None
    else:
        assert session.on_response(action.ticket, 200, orjson.dumps(GEMINI_ANSWER)) is None
    assert session.recorder is not None
    session.recorder.finish(cassette, exit_code=0)
    output = load_trace(cassette).steps[1].payload
    assert output["content"] == [
        {"type": "text", "text": "Here it is."},
        {"type": "image", "mediaType": "image/png", "sha256": _sha(PNG), "size": len(PNG)},
    ]
    assert "data" not in json.dumps(output)  # the bytes are in the media file, not in the step
    assert verify_file(cassette).ok
    answer = replay_session(cassette).on_request(_gemini_request(stream))
    assert isinstance(answer, Answer) and answer.status == 200, answer
    if stream:
        events = [json.loads(line[6:]) for line in answer.body.decode().splitlines() if line.startswith("data: ")]
        parts = [p for e in events for p in e["candidates"][0]["content"]["parts"]]
    else:
        parts = json.loads(answer.body)["candidates"][0]["content"]["parts"]
    assert parts[0]["text"] == "Here it is."
    assert base64.b64decode(parts[-1]["inlineData"]["data"]) == PNG and parts[-1]["inlineData"]["mimeType"] == "image/png"


def test_an_image_answer_whose_bytes_were_not_kept_is_a_clear_error_at_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BLACKBOX_MEDIA_MAX_BYTES", "10")
    cassette = tmp_path / "img.json"
    session = record_session(cassette)
    action = session.on_request(_gemini_request())
    assert isinstance(action, Forward)
    assert session.on_response(action.ticket, 200, orjson.dumps(GEMINI_ANSWER)) is None
    assert session.recorder is not None
    session.recorder.finish(cassette, exit_code=0)
    assert verify_file(cassette).ok
    answer = replay_session(cassette).on_request(_gemini_request())
    assert isinstance(answer, Answer) and answer.status >= 400
    assert f"{_sha(PNG)[:12]}" in answer.body.decode() and "over the cap" in answer.body.decode()


# -- forks: the copied steps' media, and a Responses chain rebuilt upstream with its image ------------------

RESPONSES = "/v1/responses"


def _responses_body(previous: str | None, text: str, image: bool) -> bytes:
    content: list[Any] = [{"type": "input_text", "text": text}]
    if image:
        content.append({"type": "input_image", "image_url": f"data:image/png;base64,{_b64(PNG)}"})
    body: dict[str, Any] = {"model": "gpt-5", "input": [{"role": "user", "content": content}]}
    if previous is not None:
        body["previous_response_id"] = previous
    return json.dumps(body).encode()


def _responses_answer(rid: str, text: str) -> bytes:
    item = {
        "type": "message",
        "id": f"msg_{rid}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    return orjson.dumps({"id": rid, "object": "response", "status": "completed", "model": "gpt-5", "output": [item]})


def test_a_fork_keeps_its_parents_media_and_sends_a_chained_image_upstream_with_its_bytes(tmp_path: Path) -> None:
    """Rewind after the first call: the replayed prefix served our own response id; the live call chains on it
    (previous_response_id), so Blackbox rebuilds the history upstream, and the screenshot goes with its bytes."""
    from blackbox_mitm.codecs.verified import load_verified
    from blackbox_mitm.session.fork import fork_session, plan_fork

    parent = tmp_path / "parent.json"
    session = record_session(parent)
    _record(session, RESPONSES, _responses_body(None, "What is on the screen?", image=True), _responses_answer("resp_1", "A red pixel."))
    _record(session, RESPONSES, _responses_body("resp_1", "And now?", image=False), _responses_answer("resp_2", "Still red."))
    assert session.recorder is not None
    session.recorder.finish(parent, exit_code=0)
    trace = load_verified(parent)

    child = tmp_path / "child.json"
    fork = fork_session(plan_fork(trace, live_after=1), child, fsync=False, parent_media=load_media(parent, trace))
    served = fork.on_request(ModelRequest(path=RESPONSES, headers={}, body=_responses_body(None, "What is on the screen?", image=True)))
    assert isinstance(served, Answer) and served.status == 200, served
    our_id = json.loads(served.body)["id"]
    live = fork.on_request(ModelRequest(path=RESPONSES, headers={}, body=_responses_body(our_id, "And now?", image=False)))
    assert isinstance(live, Forward) and live.body is not None
    upstream = json.loads(live.body)
    assert "previous_response_id" not in upstream  # the provider never saw our id: the chain is written out
    images = [p for item in upstream["input"] for p in item.get("content") or [] if isinstance(p, dict) and p.get("type") == "input_image"]
    assert [p["image_url"] for p in images] == [f"data:image/png;base64,{_b64(PNG)}"]  # the bytes, as the agent sent them
    assert fork.on_response(live.ticket, 200, _responses_answer("resp_9", "Blue now.")) is None
    assert fork.recorder is not None
    fork.recorder.finish(child, exit_code=0)
    assert verify_file(child).ok
    document = load_media(child, load_trace(child))
    assert document is not None and list(document["media"]) == [_sha(PNG)]  # the copied step's screenshot, kept for the child


def test_a_seeded_book_keeps_the_parents_items_its_copied_steps_name() -> None:
    parent: MediaDocument = {
        "kind": "blackbox-media",
        "version": 1,
        "run": "parent-1",
        "media": {_sha(PNG): {"mediaType": "image/png", "size": len(PNG), "data": _b64(PNG)}},
        "notKept": [{"sha256": "ab" * 32, "mediaType": None, "size": 9, "why": "cap"}],
    }
    book = MediaBook(max_bytes=1000, seed=parent)
    part = {"type": "image", "mediaType": "image/png", "sha256": _sha(PNG), "size": len(PNG)}
    gone = {"type": "document", "sha256": "ab" * 32, "size": 9}
    document = book.document("child-1", [{"messages": [{"role": "user", "content": [part, gone]}]}])
    assert document["media"] == parent["media"] and document["notKept"] == parent["notKept"]
    assert book.document("child-1", [{"messages": []}])["media"] == {}  # what no step names is not written


def test_a_golden_takes_its_media_file_along_and_is_not_listed_as_a_golden(tmp_path: Path) -> None:
    from blackbox_mitm.golden.suite import add_golden, golden_paths

    cassette = tmp_path / "runs" / "shots.json"
    cassette.parent.mkdir()
    _record_turns(cassette, 2)
    folder = tmp_path / "goldens"
    info = add_golden(cassette, folder)
    assert (folder / "shots.media.json").read_bytes() == media_path(cassette).read_bytes()
    assert [p.name for p in golden_paths(folder)] == ["shots.json"]  # the media file is not a golden of its own
    assert verify_file(info.path).ok


def test_a_fork_listing_does_not_mistake_the_media_file_for_a_run(tmp_path: Path) -> None:
    from blackbox_mitm.session.lineage import list_forks

    cassette = tmp_path / "shots.json"
    _record_turns(cassette, 2)
    listing = list_forks(cassette)
    assert listing["forks"] == [] and listing["skipped"] == []


# -- a recording killed before it ended: the spool --------------------------------------------------------


def _kill(session: Session) -> None:
    """What a kill -9 leaves: the journal's lock dropped, nothing finished."""
    import os

    assert session.recorder is not None and session.recorder.journal is not None
    fd = session.recorder.journal._fd
    assert fd is not None
    os.close(fd)
    session.recorder.journal._fd = None


def test_a_killed_recording_keeps_its_media_through_recover(tmp_path: Path) -> None:
    """The recorder dies after two calls (no finish): `blackbox recover` writes the media file from the spool and seals it."""
    from blackbox_mitm.cassette.media import spool_path
    from blackbox_mitm.cassette.recovery import recover_journal

    cassette = tmp_path / "run.json.zst"
    session = record_session(cassette)
    for k, body in enumerate(_screenshot_turns(2)):
        _record(session, CHAT, body, _chat_answer(f"seen {k}"))
    spool = spool_path(cassette)
    assert spool.read_bytes().count(b'"sha256"') == 2  # each item once, spooled as it came
    _kill(session)  # no terminal event, no media file
    assert not media_path(cassette).exists()
    recover_journal(cassette, quiet=True)
    trace = load_trace(cassette)
    assert trace.steps[-1].payload["reason"] == "recording_interrupted"
    assert media_ref_of(trace) is not None and not spool.exists()
    document = load_media(cassette, trace)
    assert document is not None and sorted(document["media"]) == sorted([_sha(PNG), _sha(PDF)])
    assert verify_file(cassette).ok


def test_a_spool_line_cut_off_by_the_kill_is_dropped_and_the_item_listed_as_not_kept(tmp_path: Path) -> None:
    from blackbox_mitm.cassette.media import spool_path
    from blackbox_mitm.cassette.recovery import recover_journal

    cassette = tmp_path / "run.json"
    session = record_session(cassette)
    for k, body in enumerate(_screenshot_turns(2)):
        _record(session, CHAT, body, _chat_answer(f"seen {k}"))
    spool = spool_path(cassette)
    spool.write_bytes(spool.read_bytes()[:-40])  # the PDF's line, torn
    _kill(session)
    recover_journal(cassette, quiet=True)
    document = load_media(cassette, load_trace(cassette))
    assert document is not None and list(document["media"]) == [_sha(PNG)]
    assert document["notKept"] == [
        {
            "sha256": _sha(PDF),
            "mediaType": "application/pdf",
            "size": len(PDF),
            "why": "the recording was interrupted before its bytes were kept",
        }
    ]
    assert verify_file(cassette).ok


def test_a_run_that_ends_leaves_no_spool(tmp_path: Path) -> None:
    from blackbox_mitm.cassette.media import spool_path

    cassette = tmp_path / "run.json"
    _record_turns(cassette, 2)
    assert not spool_path(cassette).exists() and media_path(cassette).exists()
