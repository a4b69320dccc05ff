"""The example agents through a real mitmdump with TLS interception; the Node preload that makes Node 20's fetch use HTTPS_PROXY.

A real `mitmdump` maps api.openai.com / api.anthropic.com to the fake provider on
127.0.0.1; the agents run unmodified with the proxy variables and our CA. Node
runs also load a guard that refuses every DNS lookup, so nothing in these tests
can reach the internet, and a direct (unproxied) connection fails at once.
"""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
NODE_AGENT = EXAMPLES / "node" / "weather_agent.js"
PRELOAD = ROOT / "blackbox_mitm" / "proxy" / "node_preload.cjs"
MITMDUMP = Path(sys.executable).parent / "mitmdump"
sys.path.insert(0, str(EXAMPLES))

from fake_provider import FakeProvider  # noqa: E402

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not on PATH: the Node preload cannot be exercised")
pytestmark = pytest.mark.e2e

DNS_GUARD = """
// Test guard: no DNS for anything but localhost, so no test can leave the machine.
const dns = require('node:dns');
const lookup = dns.lookup;
dns.lookup = function (hostname, options, callback) {
  if (typeof options === 'function') callback = options;
  if (hostname === 'localhost') return lookup.apply(this, arguments);
  const err = Object.assign(new Error(`test guard: no DNS for ${hostname}`), { code: 'ENOTFOUND', hostname });
  process.nextTick(callback, err);
};
"""


@dataclass
class Proxy:
    port: int
    confdir: Path
    provider: FakeProvider
    bundle: Path
    guard: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """os.environ without anything that would reroute or preload, plus `extra`."""
    drop = {
        "https_proxy",
        "http_proxy",
        "all_proxy",
        "no_proxy",
        "node_options",
        "node_extra_ca_certs",
        "ssl_cert_file",
        "node_use_env_proxy",
    }
    env = {k: v for k, v in os.environ.items() if k.lower() not in drop and not k.endswith("_BASE_URL")}
    return env | extra


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    tmp = tmp_path_factory.mktemp("mitm")
    confdir = tmp / "confdir"
    port = free_port()
    with FakeProvider() as provider:
        cmd = [
            str(MITMDUMP),
            "--listen-host", "127.0.0.1",
            "--listen-port", str(port),
            "--set", f"confdir={confdir}",
            "--set", "connection_strategy=lazy",
            "--map-remote", rf"|https://api\.openai\.com|{provider.url}",
            "--map-remote", rf"|https://api\.anthropic\.com|{provider.url}",
            "--map-remote", rf"|http://plain-openai\.test|{provider.url}",
        ]  # fmt: skip
        log = (tmp / "mitmdump.log").open("w")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=clean_env())
        try:
            deadline = time.monotonic() + 60
            while True:
                assert proc.poll() is None, f"mitmdump exited: {(tmp / 'mitmdump.log').read_text()}"
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "mitmdump did not start listening"
                    time.sleep(0.1)
            ca = confdir / "mitmproxy-ca-cert.pem"
            assert ca.exists()
            bundle = tmp / "bundle.pem"
            roots = ssl.get_default_verify_paths().cafile
            bundle.write_text((Path(roots).read_text() if roots and Path(roots).exists() else "") + "\n" + ca.read_text())
            guard = tmp / "dns_guard.cjs"
            guard.write_text(DNS_GUARD)
            yield Proxy(port, confdir, provider, bundle, guard)
        finally:
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()


def run_node(proxy: Proxy, *args: str, preload: bool = True, **env: str) -> subprocess.CompletedProcess[str]:
    requires = f"--require {proxy.guard}" + (f" --require {PRELOAD}" if preload else "")
    full = clean_env(OPENAI_API_KEY="test", NODE_EXTRA_CA_CERTS=str(proxy.confdir / "mitmproxy-ca-cert.pem"), NODE_OPTIONS=requires) | env
    return subprocess.run([str(NODE), *args], env=full, capture_output=True, text=True, timeout=60, cwd=ROOT)


# ---------------------------------------------------------------- Node through mitmdump


@needs_node
@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_node_agent_goes_through_the_proxy_with_the_preload(proxy: Proxy, stream: bool) -> None:
    before = len(proxy.provider.requests)
    flags = ["--stream"] if stream else []
    done = run_node(proxy, str(NODE_AGENT), "What's the weather in Paris?", *flags, HTTPS_PROXY=proxy.url)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Paris: cloudy, 18°C.\n"
    new = proxy.provider.requests[before:]
    assert len(new) == 2  # the tool call, then the answer
    assert all(r["path"] == "/v1/chat/completions" and r["headers"]["x-stainless-lang"] == "js" for r in new)
    assert new[1]["body"]["messages"][-1]["content"] == '{"city":"Paris","forecast":"cloudy","celsius":18}'
    assert bool(new[0]["body"].get("stream")) is stream


@needs_node
def test_node_agent_without_the_preload_never_reaches_the_provider(proxy: Proxy) -> None:
    before = len(proxy.provider.requests)
    done = run_node(proxy, str(NODE_AGENT), "What's the weather in Paris?", preload=False, HTTPS_PROXY=proxy.url)
    assert done.returncode == 1 and "API error" in done.stderr
    assert done.stdout == ""
    assert len(proxy.provider.requests) == before  # fetch ignored HTTPS_PROXY and tried api.openai.com directly


@needs_node
def test_http_origin_is_tunnelled_through_http_proxy(proxy: Proxy) -> None:
    before = len(proxy.provider.requests)
    done = run_node(proxy, str(NODE_AGENT), "Weather in Lyon?", HTTP_PROXY=proxy.url, OPENAI_BASE_URL="http://plain-openai.test/v1")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Lyon: rain, 15°C.\n"
    assert len(proxy.provider.requests) == before + 2


@needs_node
@pytest.mark.parametrize("no_proxy", ["127.0.0.1", "example.com, 127.0.0.1", "*", "other.test 127.0.0.1:{port}"])
def test_no_proxy_connects_directly(proxy: Proxy, no_proxy: str) -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens: any proxied request would fail
    base = f"{proxy.provider.url}/v1"
    entry = no_proxy.format(port=proxy.provider.port)
    done = run_node(proxy, str(NODE_AGENT), "Weather in Tokyo?", HTTPS_PROXY=dead, HTTP_PROXY=dead, NO_PROXY=entry, OPENAI_BASE_URL=base)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Tokyo: clear, 26°C.\n"


@needs_node
def test_no_proxy_with_another_port_does_not_bypass(proxy: Proxy) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    base = f"{proxy.provider.url}/v1"
    done = run_node(proxy, str(NODE_AGENT), "Weather in Tokyo?", HTTP_PROXY=dead, NO_PROXY="127.0.0.1:1", OPENAI_BASE_URL=base)
    assert done.returncode == 1 and "ECONNREFUSED" in done.stderr


class TlsRelay:
    """TLS on 127.0.0.1 (a certificate for `localhost` from the mitmproxy CA), relayed in clear to `upstream_port`."""

    def __init__(self, confdir: Path, tmp: Path, upstream_port: int) -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization
        from mitmproxy.certs import CertStore

        entry = CertStore.from_store(confdir, "mitmproxy", 2048).get_cert("localhost", [x509.DNSName("localhost")])
        key = entry.privatekey.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        pem = tmp / "localhost.pem"
        pem.write_bytes(entry.cert.to_pem() + key)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(pem)
        self.upstream_port = upstream_port
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.handshakes = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(conn,), daemon=True).start()

    def _relay(self, conn: socket.socket) -> None:
        try:
            tls = self.context.wrap_socket(conn, server_side=True)
        except (OSError, ssl.SSLError):
            conn.close()
            return
        self.handshakes += 1
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port))

        def pump(src: socket.socket, dst: socket.socket) -> None:
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    try:
                        s.close()
                    except OSError:
                        pass

        threading.Thread(target=pump, args=(upstream, tls), daemon=True).start()
        pump(tls, upstream)

    def close(self) -> None:
        self.sock.close()


@needs_node
def test_no_proxy_https_origin_is_a_direct_tls_connection(proxy: Proxy, tmp_path: Path) -> None:
    relay = TlsRelay(proxy.confdir, tmp_path, proxy.provider.port)
    dead = f"http://127.0.0.1:{free_port()}"
    try:
        base = f"https://localhost:{relay.port}/v1"
        done = run_node(
            proxy, str(NODE_AGENT), "Weather in Berlin?", HTTPS_PROXY=dead, NO_PROXY=".localhost,localhost", OPENAI_BASE_URL=base
        )
    finally:
        relay.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Berlin: windy, 14°C.\n"
    assert relay.handshakes >= 1  # TLS, verified against NODE_EXTRA_CA_CERTS, straight to the origin


# ---------------------------------------------------------------- the preload on its own


class StubProxy:
    """A proxy that records CONNECT requests and refuses them with 403."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.heads: list[str] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data and (chunk := conn.recv(4096)):
                    data += chunk
                self.heads.append(data.decode("latin1"))
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")

    def close(self) -> None:
        self.sock.close()


@needs_node
def test_connect_request_carries_the_authority_and_proxy_credentials(proxy: Proxy) -> None:
    stub = StubProxy()
    try:
        done = run_node(proxy, str(NODE_AGENT), "Weather in Paris?", HTTPS_PROXY=f"http://us%40er:p%3Ass@127.0.0.1:{stub.port}")
    finally:
        stub.close()
    assert done.returncode == 1 and "refused CONNECT api.openai.com:443: HTTP/1.1 403 Forbidden" in done.stderr
    assert len(stub.heads) == 3  # the SDK retried the connection error twice
    lines = stub.heads[0].split("\r\n")
    assert lines[0] == "CONNECT api.openai.com:443 HTTP/1.1"
    assert "Host: api.openai.com:443" in lines
    assert "Proxy-Authorization: Basic dXNAZXI6cDpzcw==" in lines  # base64("us@er:p:ss")


@needs_node
def test_preload_is_silent_and_a_no_op_without_proxy_variables() -> None:
    probe = "console.log(String(globalThis[Symbol.for('undici.globalDispatcher.1')] === undefined))"
    env = clean_env(NODE_OPTIONS=f"--require {PRELOAD}")
    without = subprocess.run([str(NODE), "-e", probe], env=env, capture_output=True, text=True, timeout=30)
    assert (without.returncode, without.stdout, without.stderr) == (0, "true\n", "")  # fetch was never touched
    with_proxy = subprocess.run(
        [str(NODE), "-e", probe], env=env | {"HTTPS_PROXY": "http://127.0.0.1:9"}, capture_output=True, text=True, timeout=30
    )
    assert (with_proxy.returncode, with_proxy.stdout, with_proxy.stderr) == (0, "false\n", "")  # installed, and nothing printed
    # It exits by itself: a preload that kept the event loop alive would hang it to the timeout (a bound, not a timing).
    quiet = subprocess.run(
        [str(NODE), "-e", "process.stdout.write('done')"],
        env=env | {"HTTPS_PROXY": "http://127.0.0.1:9"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "done", "")


# ---------------------------------------------------------------- the Python agents through mitmdump


@pytest.mark.parametrize("agent", ["openai_weather_agent.py", "anthropic_weather_agent.py"])
@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_python_agents_go_through_the_proxy(proxy: Proxy, agent: str, stream: bool) -> None:
    before = len(proxy.provider.requests)
    env = clean_env(HTTPS_PROXY=proxy.url, SSL_CERT_FILE=str(proxy.bundle), OPENAI_API_KEY="test", ANTHROPIC_API_KEY="test")
    args = [sys.executable, str(EXAMPLES / agent), "What's the weather in Paris and Lyon?", *(["--stream"] if stream else [])]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Paris: cloudy, 18°C. Lyon: rain, 15°C.\n"
    new = proxy.provider.requests[before:]
    assert len(new) == 2
    assert {r["provider"] for r in new} == {"openai" if agent.startswith("openai") else "anthropic"}
    assert all(bool(r["body"].get("stream")) is stream for r in new)


def test_python_agent_exits_non_zero_on_an_api_error(tmp_path: Path) -> None:
    with FakeProvider([{"status": 401, "message": "Incorrect API key provided."}]) as provider:
        env = clean_env(OPENAI_API_KEY="test", OPENAI_BASE_URL=f"{provider.url}/v1")
        done = subprocess.run(
            [sys.executable, str(EXAMPLES / "openai_weather_agent.py"), "Weather in Paris?"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1 and done.stdout == ""
    assert "Incorrect API key provided." in done.stderr
