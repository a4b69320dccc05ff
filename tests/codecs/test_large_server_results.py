"""A large server-side tool result (a web fetch of a long page) is kept once in the run's media file, by digest.

Under ``RESULT_INLINE_MAX`` a ``server_tool_result`` keeps its ``result`` inline
(the payload, and hash, it always had); over it the part holds ``resultMedia``,
a ``document`` media part of the result's canonical JSON, and the bytes go the
way an image's do: noted while the codec decodes, lent back while it encodes.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from blackbox_mitm.cassette.canonical import canonical_bytes
from blackbox_mitm.cassette.media import digests_in
from blackbox_mitm.cassette.media_bytes import MissingMedia, collecting, resolving
from blackbox_mitm.cassette.server_parts import RESULT_INLINE_MAX, result_of, result_part
from blackbox_mitm.codecs import codec_named, parse_stream
from blackbox_mitm.codecs.base import CallIds

PAGE = "".join(f"Line {n}: the fetched page goes on and on, as long pages do.\n" for n in range(6000))  # ~370 KB
FETCHED: dict[str, Any] = {
    "type": "web_fetch_result",
    "url": "https://docs.example.com/long.html",
    "retrieved_at": "2026-12-01T10:00:00Z",
    "content": {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": PAGE}, "title": "Long"},
}


def _answer(content: Any) -> dict[str, Any]:
    call = "srvtoolu_01AbCdEfGhIjKlMnOpQrStUv"
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [
            {"type": "server_tool_use", "id": call, "name": "web_fetch", "input": {"url": FETCHED["url"]}},
            {"type": "web_fetch_tool_result", "tool_use_id": call, "content": content},
            {"type": "text", "text": "The page has 6000 lines."},
        ],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 90000, "output_tokens": 12, "server_tool_use": {"web_fetch_requests": 1}},
    }


def _request(codec: Any, ids: CallIds, messages: list[dict[str, Any]] | None = None) -> Any:
    body = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": messages or [{"role": "user", "content": "How long is it?"}]}
    body["tools"] = [{"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 1}]
    return codec.decode_request(json.dumps(body).encode(), ids)


def test_a_small_result_stays_inline_as_it_always_was() -> None:
    part = result_part("call-0", "web_search_tool_result", [{"type": "web_search_result", "url": "https://a.example"}])
    assert part == {
        "type": "server_tool_result",
        "toolCallId": "call-0",
        "kind": "web_search_tool_result",
        "result": [{"type": "web_search_result", "url": "https://a.example"}],
    }
    assert result_of(part) == part["result"]


def test_a_large_fetch_result_is_a_document_by_digest_and_its_bytes_are_noted() -> None:
    codec, ids = codec_named("anthropic"), CallIds()
    request = _request(codec, ids)
    with collecting() as found:
        output = codec.decode_response(json.dumps(_answer(FETCHED)).encode(), ids, request)
    [part] = [p for p in output["parts"] if p["type"] == "server_tool_result"]
    data = canonical_bytes(FETCHED)
    assert len(data) > RESULT_INLINE_MAX
    digest = hashlib.sha256(data).hexdigest()
    assert part == {
        "type": "server_tool_result",
        "toolCallId": "call-0",
        "kind": "web_fetch_tool_result",
        "resultMedia": {"type": "document", "mediaType": "application/json", "sha256": digest, "size": len(data)},
    }
    assert found == {digest: ("application/json", data)}  # the run's media file keeps them, once
    assert PAGE[:200] not in json.dumps(output)  # the step names the result; it does not hold it
    assert list(digests_in(output)) == [digest]  # verify checks it like any media part


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_replay_serves_the_large_result_back_from_the_media_store(stream: bool) -> None:
    codec, ids = codec_named("anthropic"), CallIds()
    request = _request(codec, ids)
    request.stream = stream
    with collecting() as found:
        output = codec.decode_response(json.dumps(_answer(FETCHED)).encode(), ids, request)
    store = {d: data for d, (_, data) in found.items()}
    with resolving(store):
        if stream:
            served = codec.aggregate_stream(parse_stream(codec, codec.encode_stream(output, request=request, ids=CallIds(), created_ms=0)))
        else:
            served = codec.encode_response(output, request=request, ids=CallIds(), created_ms=0)
    [block] = [b for b in served["content"] if b["type"] == "web_fetch_tool_result"]
    assert block["content"] == FETCHED  # the provider's content, whole
    with resolving({}), pytest.raises(MissingMedia, match=r"the document [0-9a-f]{12}… \(application/json\) is needed here"):
        codec.encode_response(output, request=request, ids=CallIds(), created_ms=0)


def test_the_history_sending_the_result_back_names_the_same_digest_and_a_changed_page_another() -> None:
    codec, ids = codec_named("anthropic"), CallIds()
    output = codec.decode_response(json.dumps(_answer(FETCHED)).encode(), ids, _request(codec, ids))
    with resolving({hashlib.sha256(canonical_bytes(FETCHED)).hexdigest(): canonical_bytes(FETCHED)}):
        served = codec.encode_response(output, request=_request(codec, CallIds()), ids=ids, created_ms=0)
    history = [{"role": "user", "content": "How long is it?"}, {"role": "assistant", "content": served["content"]}]
    history.append({"role": "user", "content": "Thanks"})
    sent = _request(codec, ids, history).model_input["messages"][1]["content"]
    recorded = next(p for p in output["parts"] if p["type"] == "server_tool_result")
    assert next(p for p in sent if p["type"] == "server_tool_result") == recorded
    # Key order is not content: the digest is of the canonical JSON, as a strict replay compares inline data.
    reordered = {k: FETCHED[k] for k in reversed(list(FETCHED))}
    assert result_part("call-0", "web_fetch_tool_result", reordered) == recorded
    changed = {**FETCHED, "content": {**FETCHED["content"], "title": "Longer"}}
    assert result_part("call-0", "web_fetch_tool_result", changed)["resultMedia"]["sha256"] != recorded["resultMedia"]["sha256"]
