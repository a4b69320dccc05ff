"""The run's other HTTP exchanges in plain Python: what a recording keeps, and how a replay answers from it."""

from __future__ import annotations

from blackbox_mitm.cassette.records import Exchange
from blackbox_mitm.matcher.masks import CompareRules, Mask
from blackbox_mitm.session.exchanges import ExchangeBook, ExchangeServer, Served

PAGE = b"<h1>page</h1>"


def _add(book: ExchangeBook, url: str = "https://docs.example.com/a", body: bytes | None = PAGE, **kw: object) -> Exchange:
    entry = _try_add(book, url, body, **kw)
    assert entry is not None
    return entry


def _try_add(book: ExchangeBook, url: str, body: bytes | None = PAGE, **kw: object) -> Exchange | None:
    args: dict[str, object] = {
        "method": "GET",
        "url": url,
        "request_body": b"",
        "status": 200,
        "headers": {"content-type": "text/html", "set-cookie": "sid=abcdef123456", "x-other": "1"},
        "body": body,
        "started_ms": 1000,
    }
    args.update(kw)
    return book.add(**args)  # type: ignore[arg-type]


def test_a_body_fetched_twice_is_stored_once_and_only_the_headers_that_matter_are_kept() -> None:
    book = ExchangeBook()
    first, second = _add(book), _add(book)
    doc = book.document("run-1")
    assert len(doc["exchanges"]) == 2 and len(doc["bodies"]) == 1
    assert first["response"]["body"] == second["response"]["body"]
    assert first["response"]["headers"] == {"content-type": "text/html"}  # no Set-Cookie, nothing else


def test_credentials_in_the_query_and_known_secrets_never_enter_an_exchange() -> None:
    book = ExchangeBook(secrets={"sk-known-secret-0001"})
    entry = _add(book, url="https://docs.example.com/a?api_key=abcdefgh12345678&q=sk-known-secret-0001&page=2")
    assert entry["url"] == "https://docs.example.com/a?api_key=[credential]&q=[credential]&page=2"
    leak = _add(book, url="https://docs.example.com/b", body=b"your key: sk-known-secret-0001")
    assert "holds a credential" in leak["response"]["notKept"]
    assert b"sk-known-secret-0001" not in repr(book.document("r")).encode()


def test_the_caps_per_exchange_and_per_run_are_named_in_a_note() -> None:
    book = ExchangeBook(exchange_max_bytes=10, run_max_bytes=15)
    big = _add(book, url="https://docs.example.com/big", body=None, body_size=200_000_000)
    assert big["response"]["bytes"] == 200_000_000 and "cap per exchange" in big["response"]["notKept"]
    _add(book, url="https://docs.example.com/one", body=b"0123456789")
    over = _add(book, url="https://docs.example.com/two", body=b"abcdefghij")
    assert "cap per run" in over["response"]["notKept"]
    assert [n.split(":")[0] for n in book.not_kept] == ["GET https", "GET https"]
    assert "200,000,000 bytes" in book.not_kept[0]


def test_policy_model_hosts_and_none() -> None:
    assert ExchangeBook(policy="all").wants(model_host=False)
    assert not ExchangeBook(policy="model-hosts").wants(model_host=False)
    assert ExchangeBook(policy="model-hosts").wants(model_host=True)
    assert not ExchangeBook(policy="none").wants(model_host=True)


def test_repeats_are_answered_in_recorded_order_then_the_last_again() -> None:
    book = ExchangeBook()
    _add(book, body=b"one")
    _add(book, body=b"two")
    server = ExchangeServer(book.document("r"))
    answers = [server.answer("GET", "https://docs.example.com/a", b"", secrets=set()) for _ in range(4)]
    assert [a.body for a in answers if isinstance(a, Served)] == [b"one", b"two", b"two", b"two"]
    assert server.status()["exchanges_reused"] == 2 and server.status()["unmatched_exchanges"] == []


def test_the_body_digest_picks_the_answer_and_an_unknown_url_is_unmatched() -> None:
    book = ExchangeBook()
    _add(book, url="https://mcp.example.com/mcp", request_body=b'{"method":"tools/list"}', body=b"tools", method="POST")
    _add(book, url="https://mcp.example.com/mcp", request_body=b'{"method":"tools/call"}', body=b"called", method="POST")
    server = ExchangeServer(book.document("r"))
    call = server.answer("POST", "https://mcp.example.com/mcp", b'{"method":"tools/call"}', secrets=set())
    assert isinstance(call, Served) and call.body == b"called"
    assert server.answer("GET", "https://docs.example.com/never", b"", secrets=set()) == "it is not in the recording"
    assert server.status()["unmatched_exchanges"] == [{"method": "GET", "host": "docs.example.com", "path": "/never"}]


def test_masks_apply_to_query_values_and_a_key_sent_at_replay_still_matches() -> None:
    book = ExchangeBook()
    _add(book, url="https://docs.example.com/a?t=2026-12-01T10:00:00Z&api_key=recorded-key-000000")
    rules = CompareRules.build([Mask("time", r"\d{4}-\d\d-\d\dT[\d:]+Z", source="test")], defaults=False)
    server = ExchangeServer(book.document("r"), rules=rules)
    found = server.answer("GET", "https://docs.example.com/a?t=2027-01-02T11:11:11Z&api_key=another-key-1111111", b"", secrets=set())
    assert isinstance(found, Served) and found.body == PAGE


def test_a_response_not_kept_is_refused_with_the_reason() -> None:
    book = ExchangeBook(exchange_max_bytes=1)
    _add(book)
    server = ExchangeServer(book.document("r"))
    why = server.answer("GET", "https://docs.example.com/a", b"", secrets=set())
    assert isinstance(why, str) and "not kept at recording (larger than the 1-byte cap per exchange" in why
    assert server.status()["unmatched_exchanges"][0]["path"] == "/a"


def test_a_clouds_credential_endpoint_is_never_kept_and_a_replay_finds_nothing_for_it() -> None:
    book = ExchangeBook()
    token = b'{"access_token": "ya29.a0AfH6SMBx-not-a-real-token-0123456789", "expires_in": 3599}'
    endpoints = (
        "https://oauth2.googleapis.com/token",
        "https://sts.us-east-1.amazonaws.com/?Action=AssumeRoleWithWebIdentity",
        "https://login.microsoftonline.com/tenant/oauth2/v2.0/token",
        "http://169.254.169.254/latest/api/token",
    )
    for url in endpoints:
        assert _try_add(book, url, body=token, method="POST", request_body=b"grant_type=refresh_token&refresh_token=1//0g") is None
    doc = book.document("r")
    assert doc["exchanges"] == [] and doc["bodies"] == {}
    assert b"ya29." not in repr(doc).encode() and b"refresh_token" not in repr(doc).encode()
    assert [n.split(":")[0] for n in book.not_kept] == [
        "POST oauth2.googleapis.com",
        "POST sts.us-east-1.amazonaws.com",
        "POST login.microsoftonline.com",
        "POST 169.254.169.254",
    ]
    server = ExchangeServer(doc)
    assert not isinstance(server.answer("POST", endpoints[0], b"grant_type=refresh_token", secrets=set()), Served)


def test_a_background_request_the_recording_lacks_is_refused_and_listed_apart_not_as_a_divergence() -> None:
    # Codex fetches its plugin catalogue beside the first turn; a short run often exits before it is sent.
    book = ExchangeBook()
    _add(book, url="https://chatgpt.com/backend-api/codex/models", body=b"models")
    server = ExchangeServer(book.document("r"))
    asked = server.answer("GET", "https://chatgpt.com/backend-api/plugins/export/curated?x=1", b"", secrets=set())
    assert asked == "it is not in the recording"  # refused all the same: nothing leaves the machine
    other = server.answer("GET", "https://chatgpt.com/backend-api/accounts", b"", secrets=set())
    assert other == "it is not in the recording"
    status = server.status()
    assert status["background_unmatched"] == [
        {"method": "GET", "host": "chatgpt.com", "path": "/backend-api/plugins/export/curated", "agent": "codex"}
    ]
    assert status["unmatched_exchanges"] == [{"method": "GET", "host": "chatgpt.com", "path": "/backend-api/accounts"}]
    # The same path asked with another method is not the background request.
    assert (
        server.answer("POST", "https://chatgpt.com/backend-api/plugins/export/curated", b"{}", secrets=set())
        == "it is not in the recording"
    )
    assert len(server.status()["unmatched_exchanges"]) == 2


def test_a_replay_whose_only_unmatched_requests_are_background_ones_is_ok_and_the_report_names_them() -> None:
    from blackbox_mitm.matcher.report import render_report, verdict

    status = {
        "run": "r",
        "exchanges": 1,
        "unmatched_exchanges": [],
        "background_unmatched": [{"method": "POST", "host": "ab.chatgpt.com", "path": "/otlp/v1/metrics", "agent": "codex"}],
    }
    assert verdict(status) == "ok"
    report = render_report(status)
    assert "background requests not in the recording: 1 (refused offline; not a divergence" in report
    assert "POST ab.chatgpt.com/otlp/v1/metrics (codex)" in report
    assert verdict({**status, "unmatched_exchanges": [{"method": "GET", "host": "x", "path": "/"}]}) == "unmatched"
