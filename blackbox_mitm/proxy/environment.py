"""Where the CA lives, and the environment that makes real clients use the proxy and trust it.

The CA is mitmproxy's own, in its ``confdir`` (``~/.mitmproxy`` unless
``--confdir`` or ``BLACKBOX_CONFDIR`` says otherwise); it is created on first use.
Only the public certificate is ever shown or copied.

A wrapped command gets:

* ``HTTPS_PROXY`` / ``HTTP_PROXY`` (both cases) pointing at the proxy;
* a CA bundle — the system roots plus our CA, because ``SSL_CERT_FILE``
  *replaces* a Python client's trust store — in ``SSL_CERT_FILE``,
  ``REQUESTS_CA_BUNDLE``, ``CURL_CA_BUNDLE`` and ``CODEX_CA_CERTIFICATE``, and
  the CA alone in ``NODE_EXTRA_CA_CERTS`` (which extends Node's roots);
* ``NODE_OPTIONS=--require node_preload.cjs``: Node 20's built-in fetch ignores
  ``HTTPS_PROXY``; the preload installs a dispatcher that tunnels through it.
"""

from __future__ import annotations

import hashlib
import os
import ssl
from collections.abc import Iterable
from pathlib import Path

from blackbox_mitm.codecs import placeholder_env_vars

__all__ = ["REPLAY_PLACEHOLDER_KEY", "ca_bundle", "ca_cert_path", "client_env", "default_confdir", "ensure_ca", "node_preload_path"]

CA_BASENAME = "mitmproxy"
BUNDLE_NAME = "blackbox-ca-bundle.pem"


def default_confdir() -> Path:
    return Path(os.environ.get("BLACKBOX_CONFDIR") or "~/.mitmproxy").expanduser()


def ca_cert_path(confdir: str | Path | None = None) -> Path:
    return Path(confdir or default_confdir()).expanduser() / f"{CA_BASENAME}-ca-cert.pem"


def ensure_ca(confdir: str | Path | None = None) -> Path:
    """Create mitmproxy's CA in ``confdir`` if it is not there; return the public certificate's path."""
    directory = Path(confdir or default_confdir()).expanduser()
    cert = ca_cert_path(directory)
    if not cert.exists():
        from mitmproxy.certs import CertStore

        CertStore.from_store(directory, CA_BASENAME, 2048)
    return cert


def _system_roots() -> bytes:
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile, "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"):
        if candidate and Path(candidate).is_file():
            return Path(candidate).read_bytes()
    try:
        import certifi

        return Path(certifi.where()).read_bytes()
    except Exception:  # pragma: no cover - certifi comes with mitmproxy
        return b""


def ca_bundle(confdir: str | Path | None = None, *, roots: str | Path | None = None) -> Path:
    """Trusted roots plus our CA, written beside the CA (rewritten when either is newer).

    ``roots`` is the file whose certificates stay trusted (a bundle the user's
    environment already named); by default, the system's.
    """
    cert = ensure_ca(confdir)
    if roots is not None and Path(roots).is_file():
        roots_path: Path | None = Path(roots).resolve()
        digest = hashlib.sha256(str(roots_path).encode()).hexdigest()[:10]
        bundle = cert.with_name(f"blackbox-ca-bundle-{digest}.pem")
    else:
        roots_path = None
        bundle = cert.with_name(BUNDLE_NAME)
    newest = max(cert.stat().st_mtime, roots_path.stat().st_mtime if roots_path else 0)
    if not bundle.exists() or bundle.stat().st_mtime < newest:
        base = roots_path.read_bytes() if roots_path else _system_roots()
        _write(bundle, base.rstrip(b"\n") + b"\n" + cert.read_bytes())
    return bundle


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _node_extra(cert: Path, existing: str | None) -> Path:
    """NODE_EXTRA_CA_CERTS names one file: ours, or the user's extra CAs plus ours."""
    if (
        not existing
        or not Path(existing).is_file()
        or Path(existing).resolve() == cert.resolve()
        or Path(existing).name.startswith("blackbox-")
    ):
        return cert
    digest = hashlib.sha256(str(Path(existing).resolve()).encode()).hexdigest()[:10]
    combined = cert.with_name(f"blackbox-node-extra-{digest}.pem")
    if not combined.exists() or combined.stat().st_mtime < max(cert.stat().st_mtime, Path(existing).stat().st_mtime):
        _write(combined, Path(existing).read_bytes().rstrip(b"\n") + b"\n" + cert.read_bytes())
    return combined


def node_preload_path() -> Path:
    return Path(__file__).with_name("node_preload.cjs")


LOOPBACK = ("localhost", "127.0.0.1", "::1")
CA_BUNDLE_VARS = (
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "CODEX_CA_CERTIFICATE",
    "AWS_CA_BUNDLE",
    "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
)


REPLAY_PLACEHOLDER_KEY = "blackbox-replay-needs-no-key"


def client_env(
    proxy_url: str,
    *,
    confdir: str | Path | None = None,
    base: dict[str, str] | None = None,
    replaying: bool = False,
    proxied_loopback: Iterable[str] = (),
) -> dict[str, str]:
    """The environment for a wrapped command: proxy variables, CA bundles, the Node preload.

    Loopback stays direct (``NO_PROXY``): an agent's local services are not the
    provider, and an offline replay would refuse them — except the loopback names
    in ``proxied_loopback``, the hosts the user asked to record (``--host
    localhost``: a model server such as Ollama on ``localhost:11434``). A replay needs no API key,
    but SDKs refuse to start without one: ``replaying`` sets a placeholder where
    none is set.
    """
    env = dict(os.environ if base is None else base)
    if replaying:
        for key in placeholder_env_vars():
            if not env.get(key, "").strip():  # unset or empty: clients refuse to start without a key
                env[key] = REPLAY_PLACEHOLDER_KEY
    recorded = {h.lower() for h in proxied_loopback}
    for name in ("NO_PROXY", "no_proxy"):
        present = [h.strip() for h in env.get(name, "").replace(" ", ",").split(",") if h.strip()]
        env[name] = ",".join(h for h in dict.fromkeys([*present, *LOOPBACK]) if h.lower().split(":")[0] not in recorded)
    cert = ensure_ca(confdir)
    # Keep what the environment already trusted: our CA is added to it, not swapped in.
    user_roots = env.get("SSL_CERT_FILE")
    if user_roots and Path(user_roots).name.startswith("blackbox-ca-bundle"):
        user_roots = None
    bundle = ca_bundle(confdir, roots=user_roots)
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        env[name] = proxy_url
    for name in ("ALL_PROXY", "all_proxy"):
        env.pop(name, None)
    # Every variable a client reads its CA bundle from: boto3 and the AWS CLI read AWS_CA_BUNDLE (not
    # SSL_CERT_FILE), the Google and Azure Python SDKs requests' REQUESTS_CA_BUNDLE, gRPC its own.
    for name in (*CA_BUNDLE_VARS,):
        env[name] = str(bundle)
    env["NODE_EXTRA_CA_CERTS"] = str(_node_extra(cert, env.get("NODE_EXTRA_CA_CERTS")))
    path = str(node_preload_path())
    preload = f'--require "{path}"' if " " in path else f"--require {path}"
    existing = env.get("NODE_OPTIONS", "")
    if preload not in existing:
        env["NODE_OPTIONS"] = f"{existing} {preload}".strip()
    return env
