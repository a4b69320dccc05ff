"""The Anthropic codec's documents with a content-list source, citations into documents, system text, and pause_turn.

A ``document`` whose source is a list of content blocks (``{"type": "content",
"content": [text, image]}``) is a neutral document part holding its content as
neutral parts (the image by digest); ``context`` and enabled citations are kept on
every document. An answer's citations into documents (``char_location``,
``page_location``, ``content_block_location``) are kept on its text and served back,
whole and streamed. A ``pause_turn`` answer is recorded with the neutral stop
``"pause"`` and served back as ``pause_turn``; a codec whose API has no paused stop
refuses to serve it, by name.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest

from blackbox_mitm.cassette.media_bytes import collecting
from blackbox_mitm.codecs import CODECS, codec_named, parse_stream, unservable_stop
from blackbox_mitm.codecs import anthropic_messages as codec
from blackbox_mitm.codecs.base import CallIds, DecodedRequest
from blackbox_mitm.errors import BlackboxUnsupportedError

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000")
PNG_B64 = base64.b64encode(PNG).decode()
PNG_SHA = hashlib.sha256(PNG).hexdigest()
CREATED_MS = 1_767_225_600_000

CONTENT_DOCUMENT: dict[str, Any] = {
    "type": "document",
    "source": {
        "type": "content",
        "content": [
            {"type": "text", "text": "Chapter 1. "},
            {"type": "text", "text": "The figure shows the pipeline."},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
        ],
    },
    "title": "Design notes",
    "context": "Written by the platform team",
    "citations": {"enabled": True},
    "cache_control": {"type": "ephemeral"},
}


def _request(*content: dict[str, Any], system: Any = None) -> bytes:
    body: dict[str, Any] = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": [{"role": "user", "content": list(content)}]}
    if system is not None:
        body["system"] = system
    return json.dumps(body).encode()


def _decoded(body: bytes) -> Any:
    return codec.decode_request(body, CallIds()).model_input["messages"][0]["content"]


# --- documents -------------------------------------------------------------------------


def test_a_content_list_document_is_a_document_part_of_neutral_parts() -> None:
    with collecting() as media:
        parts = _decoded(_request({"type": "text", "text": "Summarize:"}, CONTENT_DOCUMENT))
    assert parts == [
        {"type": "text", "text": "Summarize:"},
        {
            "type": "document",
            "content": [
                {"type": "text", "text": "Chapter 1. The figure shows the pipeline."},
                {"type": "image", "mediaType": "image/png", "sha256": PNG_SHA, "size": len(PNG)},
            ],
            "name": "Design notes",
            "context": "Written by the platform team",
            "citations": True,
        },
    ]
    assert media == {PNG_SHA: ("image/png", PNG)}  # the image's bytes go to the run's media file, once


def test_a_changed_image_inside_a_document_is_another_part() -> None:
    other = json.loads(json.dumps(CONTENT_DOCUMENT))
    other["source"]["content"][2]["source"]["data"] = base64.b64encode(PNG + b"\0").decode()
    assert _decoded(_request(other)) != _decoded(_request(CONTENT_DOCUMENT))


def test_a_string_content_source_and_a_text_split_otherwise_are_the_same_part() -> None:
    as_string = {"type": "document", "source": {"type": "content", "content": "Chapter 1. The figure shows the pipeline."}}
    as_blocks = {
        "type": "document",
        "source": {
            "type": "content",
            "content": [{"type": "text", "text": "Chapter 1. The figure"}, {"type": "text", "text": " shows the pipeline."}],
        },
    }
    assert (
        _decoded(_request(as_string))
        == _decoded(_request(as_blocks))
        == [{"type": "document", "content": [{"type": "text", "text": "Chapter 1. The figure shows the pipeline."}]}]
    )


def test_text_and_file_documents_keep_their_title_context_and_citations() -> None:
    text_doc = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "The grass is green."},
        "title": "facts.txt",
        "context": "trusted",
        "citations": {"enabled": True},
    }
    file_doc = {"type": "document", "source": {"type": "file", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"}, "citations": {"enabled": False}}
    assert _decoded(_request(text_doc, file_doc)) == [
        {
            "type": "document",
            "mediaType": "text/plain",
            "sha256": hashlib.sha256(b"The grass is green.").hexdigest(),
            "size": 19,
            "name": "facts.txt",
            "context": "trusted",
            "citations": True,
        },
        {"type": "document", "file": "file_011CNha8iCJcU1wXNR6q4V8w"},  # citations off: the part a document always was
    ]


def test_turning_citations_on_is_a_different_request() -> None:
    plain = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}}
    cited = {**plain, "citations": {"enabled": True}}
    assert _decoded(_request(plain)) != _decoded(_request(cited))


@pytest.mark.parametrize(
    ("block", "field"),
    [
        ({"type": "document", "source": {"type": "content", "content": [{"type": "document", "source": {}}]}}, "source.content[0]"),
        ({"type": "document", "source": {"type": "content", "content": [{"type": "text"}]}}, "source.content[0].text"),
        ({"type": "document", "source": {"type": "content", "content": {"text": "x"}}}, "source.type"),
        ({"type": "image", "source": {"type": "content", "content": []}}, "source.type"),
    ],
)
def test_a_bad_content_document_names_the_field(block: dict[str, Any], field: str) -> None:
    with pytest.raises(BlackboxUnsupportedError) as err:
        _decoded(_request(block))
    assert err.value.field == f"messages[0].content[0].{field}"


def test_a_content_document_in_a_tool_result_is_recorded() -> None:
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "read it"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [CONTENT_DOCUMENT]}]},
        ],
    }
    content: Any = codec.decode_request(json.dumps(body).encode(), CallIds()).model_input["messages"][2]["content"]
    [result] = content
    assert result["type"] == "tool_result"
    assert result["result"][0]["type"] == "document" and result["result"][0]["content"][1]["sha256"] == PNG_SHA


# --- system and assistant content --------------------------------------------------------


@pytest.mark.parametrize(
    "system",
    [
        [
            {"type": "text", "text": "Be brief."},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
        ],
        [{"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}}],
    ],
)
def test_system_takes_text_only_as_the_api_does(system: Any) -> None:
    with pytest.raises(BlackboxUnsupportedError, match="the API does not accept it") as err:
        codec.decode_request(_request({"type": "text", "text": "hi"}, system=system), CallIds())
    assert err.value.field.startswith("system[")


def test_media_in_an_assistant_message_is_recorded() -> None:
    """The API's assistant messages take the same content blocks as user messages (``MessageContentParam``)."""
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "draw"},
            {"role": "assistant", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}}]},
            {"role": "user", "content": "again"},
        ],
    }
    content = codec.decode_request(json.dumps(body).encode(), CallIds()).model_input["messages"][1]["content"]
    assert content == [{"type": "image", "mediaType": "image/png", "sha256": PNG_SHA, "size": len(PNG)}]


# --- citations into documents on the answer ----------------------------------------------

CITATIONS = [
    {
        "type": "char_location",
        "cited_text": "The grass is green.",
        "document_index": 0,
        "document_title": "facts.txt",
        "start_char_index": 0,
        "end_char_index": 19,
        "file_id": None,
    },
    {
        "type": "page_location",
        "cited_text": "Revenue grew 12%.",
        "document_index": 1,
        "document_title": "report.pdf",
        "start_page_number": 2,
        "end_page_number": 3,
        "file_id": None,
    },
    {
        "type": "content_block_location",
        "cited_text": "The figure shows the pipeline.",
        "document_index": 2,
        "document_title": "Design notes",
        "start_block_index": 0,
        "end_block_index": 1,
        "file_id": None,
    },
]
CITED_ANSWER: dict[str, Any] = {
    "id": "msg_01Cited",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [
        {"type": "text", "text": "According to the documents, "},
        {"type": "text", "text": "the grass is green", "citations": CITATIONS[:1]},
        {"type": "text", "text": " and revenue grew", "citations": CITATIONS[1:]},
        {"type": "text", "text": "."},
    ],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 500, "output_tokens": 40},
}


def _plain_request(stream: bool) -> DecodedRequest:
    request = codec.decode_request(_request({"type": "text", "text": "hi"}), CallIds())
    request.stream = stream
    return request


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_citations_into_documents_are_kept_and_served_back(stream: bool) -> None:
    request = _plain_request(stream)
    output = codec.decode_response(json.dumps(CITED_ANSWER).encode(), CallIds(), request)
    assert output["text"] == "According to the documents, the grass is green and revenue grew."
    assert [p.get("citations") for p in output["parts"]] == [None, CITATIONS[:1], CITATIONS[1:], None]
    served = _served(codec_named("anthropic"), output, request, stream)
    assert [b.get("citations") for b in served["content"]] == [None, CITATIONS[:1], CITATIONS[1:], None]
    assert codec.decode_response(served, CallIds(), request) == output


# --- pause_turn ---------------------------------------------------------------------------

PAUSED: dict[str, Any] = {
    "id": "msg_01Paused",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [
        {"type": "text", "text": "Let me search for that."},
        {"type": "server_tool_use", "id": "srvtoolu_01Pause", "name": "web_search", "input": {"query": "paris weather"}},
    ],
    "stop_reason": "pause_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1200, "output_tokens": 30, "server_tool_use": {"web_search_requests": 1}},
}
RESUMED: dict[str, Any] = {
    **PAUSED,
    "id": "msg_01Resumed",
    "content": [
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_01Pause",
            "content": [
                {"type": "web_search_result", "url": "https://w.example", "title": "W", "encrypted_content": "Eq", "page_age": None}
            ],
        },
        {"type": "text", "text": "Sunny, 24 °C."},
    ],
    "stop_reason": "end_turn",
}


def _served(c: Any, output: Any, request: DecodedRequest, stream: bool, ids: CallIds | None = None) -> dict[str, Any]:
    ids = ids or CallIds()
    if stream:
        return dict(c.aggregate_stream(parse_stream(c, c.encode_stream(output, request=request, ids=ids, created_ms=CREATED_MS))))
    return dict(c.encode_response(output, request=request, ids=ids, created_ms=CREATED_MS))


def test_a_paused_turn_is_an_answer_with_the_pause_stop() -> None:
    output = codec.decode_response(json.dumps(PAUSED).encode(), CallIds(), _plain_request(False))
    assert output["type"] == "final_answer" and output["stop"] == "pause"
    assert output["text"] == "Let me search for that."
    assert output["parts"] == [
        {"type": "text", "text": "Let me search for that."},
        {"type": "server_tool_call", "toolCallId": "call-0", "toolName": "web_search", "toolInput": {"query": "paris weather"}},
    ]
    text_only = {**PAUSED, "content": PAUSED["content"][:1]}
    assert codec.decode_response(json.dumps(text_only).encode(), CallIds(), _plain_request(False)) == {
        "type": "final_answer",
        "text": "Let me search for that.",
        "stop": "pause",
        "tokens": {"input": 1200, "output": 30},
        "serverToolUse": {"web_search": 1},
    }


@pytest.mark.parametrize("name", ["anthropic", "bedrock", "vertex-anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_paused_turn_is_served_back_as_pause_turn(name: str, stream: bool) -> None:
    c = codec_named(name)
    request = _plain_request(stream)
    output = codec.decode_response(json.dumps(PAUSED).encode(), CallIds(), request)
    served = _served(c, output, request, stream)
    assert served["stop_reason"] == "pause_turn"
    assert [b["type"] for b in served["content"]] == ["text", "server_tool_use"]
    assert codec.decode_response(served, CallIds(), request) == output


def test_the_continuation_sends_the_paused_turn_back_and_its_result_names_the_same_call() -> None:
    """The agent sends the paused content back as the last (assistant) message; the resumed answer's result is call-0's."""
    ids = CallIds()
    paused = codec.decode_response(json.dumps(PAUSED).encode(), ids, _plain_request(False))
    served = codec.encode_response(paused, request=_plain_request(False), ids=ids, created_ms=CREATED_MS)
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": served["content"]}],
    }
    history = codec.decode_request(json.dumps(body).encode(), ids).model_input["messages"][1]
    assert history == {"role": "assistant", "content": paused["parts"]}
    resumed = codec.decode_response(json.dumps(RESUMED).encode(), ids, _plain_request(False))
    assert resumed["parts"][0]["toolCallId"] == "call-0" and "stop" not in resumed


@pytest.mark.parametrize("name", sorted(CODECS))
def test_only_a_codec_with_a_paused_stop_serves_one(name: str) -> None:
    c = codec_named(name)
    refusal = unservable_stop(c, {"type": "final_answer", "text": "so far", "stop": "pause"})
    assert unservable_stop(c, {"type": "final_answer", "text": "done"}) is None
    if name in ("anthropic", "bedrock", "vertex-anthropic"):
        assert refusal is None
    else:
        assert refusal is not None and refusal.field == "stop" and '(it was "pause")' in refusal.client_message
        assert c.NAME in str(refusal) and "paused" in str(refusal)
