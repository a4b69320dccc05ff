"""An offline replay reaches nothing, whatever the client sends (a real mitmproxy, a loopback canary).

The canary is a TCP listener on 127.0.0.1 standing in for the outside world: every
path a client could take through the proxy is tried against it, and it must never
see a connection. Provider hosts are pointed at it with map_remote, so a request
that slipped through to "the provider" would reach it too.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx  # the HTTP client the provider SDKs ship with
import pytest

from blackbox_mitm.proxy.environment import ca_bundle
from blackbox_mitm.proxy.wrap import proxy_for
from blackbox_mitm.session.build import record_session, replay_session
from blackbox_mitm.session.engine import Forward, ModelRequest

pytestmark = pytest.mark.e2e


class Canary:
    """Counts every connection made to it; answers nothing useful."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self.sock.close()


@pytest.fixture
def canary() -> Iterator[Canary]:
    c = Canary()
    yield c
    c.close()


@pytest.fixture
def proxy(tmp_path: Path, confdir: Path, canary: Canary) -> Iterator[str]:
    cassette = tmp_path / "run.json"
    rec = record_session(cassette)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    fwd = rec.on_request(ModelRequest(path="/v1/chat/completions", headers={}, body=body))
    assert isinstance(fwd, Forward)
    answer = {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    }
    rec.on_response(fwd.ticket, 200, json.dumps(answer).encode())
    assert rec.recorder is not None
    rec.recorder.finish(cassette, exit_code=0)
    to_canary = [
        rf"|https://api\.openai\.com|http://127.0.0.1:{canary.port}",
        rf"|https://api\.anthropic\.com|http://127.0.0.1:{canary.port}",
    ]
    runner = proxy_for(replay_session(cassette), confdir=confdir, map_remote=to_canary)
    runner.start()
    yield runner.url
    runner.stop()


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _connect(proxy: str, target: str) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", _port(proxy)), timeout=10)
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = s.recv(4096)
    assert head.startswith(b"HTTP/1.1 200"), head
    return s


def _drain(s: socket.socket) -> bytes:
    out = b""
    try:
        while chunk := s.recv(65536):
            out += chunk
    except (TimeoutError, OSError):
        pass
    s.close()
    return out


def test_a_tunnel_carrying_raw_bytes_is_never_relayed(proxy: str, canary: Canary) -> None:
    s = _connect(proxy, f"127.0.0.1:{canary.port}")
    s.settimeout(3)
    s.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
    _drain(s)
    assert canary.connections == 0


def test_absolute_form_http_is_answered_locally(proxy: str, canary: Canary) -> None:
    with httpx.Client(proxy=proxy, trust_env=False, timeout=10) as client:
        r = client.get(f"http://127.0.0.1:{canary.port}/anything")
    assert r.status_code == 502 and "offline" in r.text
    assert canary.connections == 0


def test_tls_in_a_tunnel_to_another_host_is_answered_locally(proxy: str, canary: Canary, confdir: Path) -> None:
    verify = ssl.create_default_context(cafile=str(ca_bundle(confdir)))
    for http2 in (False, True):
        with httpx.Client(proxy=proxy, verify=verify, trust_env=False, timeout=10, http2=http2) as client:
            r = client.get(f"https://127.0.0.1:{canary.port}/x")
        assert r.status_code == 502
    assert canary.connections == 0


def test_a_websocket_upgrade_to_another_host_is_not_relayed(proxy: str, canary: Canary) -> None:
    s = socket.create_connection(("127.0.0.1", _port(proxy)), timeout=60)  # a bound for a hang, not a timing
    s.sendall(
        (
            f"GET http://127.0.0.1:{canary.port}/socket HTTP/1.1\r\nHost: 127.0.0.1:{canary.port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        ).encode()
    )
    s.settimeout(3)
    reply = _drain(s)
    assert not reply.startswith(b"HTTP/1.1 101")
    assert canary.connections == 0


def test_a_provider_request_that_cannot_be_decoded_is_answered_locally(proxy: str, canary: Canary, confdir: Path) -> None:
    verify = ssl.create_default_context(cafile=str(ca_bundle(confdir)))
    deep = b'{"model": "m", "messages": [{"role": "user", "content": ' + b"[" * 10_000 + b"]" * 10_000 + b"}]}"
    with httpx.Client(proxy=proxy, verify=verify, trust_env=False, timeout=10) as client:
        nested = client.post("https://api.openai.com/v1/chat/completions", content=deep, headers={"content-type": "application/json"})
        garbled = client.post(
            "https://api.openai.com/v1/chat/completions",
            content=b"\x1f\x8bnot gzip",
            headers={"content-type": "application/json", "content-encoding": "gzip"},
        )
        other = client.post("https://api.anthropic.com/v1/unknown", content=b"{}")
    assert nested.status_code == 400 and "BlackboxUnsupportedError" in nested.text
    assert garbled.status_code == 400 and "could not be decoded" in garbled.text
    assert other.status_code == 404
    assert canary.connections == 0
