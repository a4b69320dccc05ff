"""The replayed answer's response built without ``Response.make``, and the destination kept per connection: what mitmproxy computes."""

from __future__ import annotations

from typing import Any

import pytest
from mitmproxy import http

from blackbox_mitm.proxy.flows import destination as _destination
from blackbox_mitm.proxy.flows import make_response as _make_response
from blackbox_mitm.session.engine import Answer


def _same(built: http.Response, made: http.Response) -> None:
    assert built.status_code == made.status_code
    assert built.reason == made.reason
    assert built.http_version == made.http_version
    assert built.headers.fields == made.headers.fields
    assert built.raw_content == made.raw_content
    assert built.content == made.content
    assert built.trailers is None and made.trailers is None
    assert built.timestamp_start is not None and built.timestamp_end is not None
    assert built.stream is False


@pytest.mark.parametrize(
    ("status", "headers", "body"),
    [
        (200, {"content-type": "application/json"}, b'{"ok":true}'),
        (200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}, b"data: {}\n\n"),
        (404, {"content-type": "application/json", "Content-Length": "999"}, b'{"error":{}}'),
        (529, {}, b""),  # a status with no reason phrase
        (200, {"x-note": "caf\u00e9"}, "é".encode()),
    ],
)
def test_the_answer_is_the_response_make_builds(status: int, headers: dict[str, str], body: bytes) -> None:
    answer = Answer(status=status, headers=headers, body=body)
    _same(_make_response(answer), http.Response.make(status, body, headers))


def test_an_encoded_answer_takes_make_and_is_encoded_as_make_encodes_it() -> None:
    answer = Answer(status=200, headers={"content-type": "application/json", "content-encoding": "gzip"}, body=b'{"a":1}')
    built = _make_response(answer)
    _same(built, http.Response.make(200, answer.body, answer.headers))
    assert built.content == b'{"a":1}' and built.raw_content != b'{"a":1}'


def test_the_response_is_a_working_mitmproxy_response() -> None:
    built = _make_response(Answer(status=200, headers={"content-type": "application/json"}, body=b"{}"))
    built.headers["x-added"] = "1"
    built.content = b'{"changed":1}'
    assert built.headers["content-length"] == "13"
    assert http.Response.from_state(built.get_state()).content == b'{"changed":1}'
    assert built.copy().headers["x-added"] == "1"


def _host(value: str) -> dict[str | bytes, str | bytes]:
    """A Host header, as Request.make takes headers."""
    return {"Host": value}


@pytest.mark.parametrize(
    "make",
    [
        lambda: http.Request.make("POST", "https://api.openai.com/v1/chat/completions", b"{}", _host("api.openai.com")),
        lambda: http.Request.make("POST", "https://api.openai.com:8443/v1/x?y=1", b"{}", _host("API.OpenAI.com:8443")),
        lambda: http.Request.make("GET", "http://127.0.0.1:9/*", b"", {}),
        lambda: http.Request.make("GET", "https://example.com/a", b"", _host("other.example")),
        lambda: http.Request.make("CONNECT", "https://example.com:443", b"", {}),
    ],
)
def test_the_destination_is_what_mitmproxy_computes_for_each_request(make: Any) -> None:
    for path in ("/first", "/second?q=1", None):
        request = make()
        if path is not None and request.method != "CONNECT":
            request.path = path
        assert _destination(request) == (request.pretty_host.lower(), request.pretty_url)


def test_the_destination_follows_a_changed_host_header() -> None:
    request = http.Request.make("POST", "https://api.openai.com/v1/x", b"{}", _host("api.openai.com"))
    assert _destination(request)[0] == "api.openai.com"
    request.headers["Host"] = "api.anthropic.com"
    assert _destination(request) == ("api.anthropic.com", request.pretty_url)
    request.http_version = "HTTP/2.0"
    request.authority = "generativelanguage.googleapis.com"
    assert _destination(request) == (request.pretty_host.lower(), request.pretty_url)
