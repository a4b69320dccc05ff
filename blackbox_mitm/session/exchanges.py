"""The run's other HTTP(S) exchanges in plain Python: kept while recording, served in an offline replay.

``ExchangeBook`` (record) keeps what the proxy saw for every request that was
not a model call, by the policy (``all``, ``model-hosts``, ``none``) and within
the caps (per exchange, per run): method, URL (credential query values
replaced), the request body's digest (its body too when it is small), status,
the headers that matter, the response body. Nothing of a request's headers is
kept, so cookies and auth headers never are; neither is ``Set-Cookie``.
``ExchangeServer`` (replay) answers a request from them: by method, URL (masks
applied to query values) and body digest; repeats in recorded order, then the
last one again (mitmproxy's ``server_replay_reuse``). What matches nothing is
listed (``unmatched``). The file format is ``cassette/exchanges.py``'s.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

from blackbox_mitm.cassette.exchanges import KEPT_HEADERS, KIND, VERSION, body_bytes, digest_of, stored_body
from blackbox_mitm.cassette.records import Exchange, ExchangeRequest, ExchangeResponse, ExchangesDocument, FileSeal, StoredBody
from blackbox_mitm.cassette.trace import now_ms
from blackbox_mitm.codecs import TOKEN_HOSTS, credential_query, host_matches
from blackbox_mitm.matcher.masks import NO_RULES, CompareRules
from blackbox_mitm.matcher.profiles import background_profile
from blackbox_mitm.session.recorder import scrub
from blackbox_mitm.session.redact import Redactor

__all__ = [
    "DEFAULT_EXCHANGE_MAX_BYTES",
    "DEFAULT_RUN_MAX_BYTES",
    "POLICIES",
    "ExchangeBook",
    "ExchangeServer",
    "ExchangeStatus",
    "Served",
    "request_key",
]

POLICIES = ("all", "model-hosts", "none")
DEFAULT_EXCHANGE_MAX_BYTES = 16 * 1024 * 1024  # one response body
DEFAULT_RUN_MAX_BYTES = 64 * 1024 * 1024  # every kept body of the run together
SMALL_REQUEST_BYTES = 256 * 1024  # request bodies kept whole (for masked matching); larger ones by digest only
_CREDENTIAL_QUERY = {"key", "api_key", "api-key", "apikey", "access_token", "token", "auth", "password", "secret", "sig", "signature"}
_VOLATILE_QUERY = {"session_id", "sessionid"}  # MCP's HTTP+SSE transport names its session in the URL
_CREDENTIAL = "[credential]"


def _clean_url(url: str, secrets: set[str]) -> str:
    """The URL with credential query values replaced and known secrets scrubbed: what is stored and matched."""
    parts = urlsplit(url)
    if parts.query:
        names = _CREDENTIAL_QUERY | {n.lower() for n in credential_query()}  # and the providers' own key parameters
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        query = "&".join(f"{quote(k, safe='')}={_CREDENTIAL if k.lower() in names and v else quote(v, safe='')}" for k, v in pairs)
        parts = parts._replace(query=query)
    return str(scrub(urlunsplit(parts._replace(fragment="")), secrets))


def _masked_url(url: str, rules: CompareRules) -> str:
    parts = urlsplit(url)
    if not parts.query:
        return url
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = "&".join(f"{k}={'<masked>' if k.lower() in _VOLATILE_QUERY else rules.mask_text(v)}" for k, v in pairs)
    return urlunsplit(parts._replace(query=query))


def _body_text(body: bytes, secrets: set[str], redactor: Redactor) -> bytes:
    """The request body as it is stored and digested: known secrets scrubbed, redaction applied (text bodies)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return body
    return redactor.text(str(scrub(text, secrets))).encode("utf-8")


def request_key(method: str, url: str, body: bytes, *, secrets: set[str], redactor: Redactor) -> tuple[str, str, str, bytes]:
    """(method, stored URL, body digest, stored body) of a request, the same at record and at replay."""
    kept = _body_text(body, secrets, redactor)
    return method.upper(), _clean_url(url, secrets), digest_of(kept), kept


@dataclass(slots=True)
class _Pending:
    index: int
    started_ms: int
    entry: Exchange


class ExchangeBook:
    """The exchanges of one recording; thread-safe."""

    def __init__(
        self,
        *,
        policy: str = "all",
        exchange_max_bytes: int = DEFAULT_EXCHANGE_MAX_BYTES,
        run_max_bytes: int = DEFAULT_RUN_MAX_BYTES,
        redactor: Redactor | None = None,
        secrets: set[str] | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"exchanges must be one of {', '.join(POLICIES)}, not {policy!r}")
        self.policy = policy
        self.exchange_max_bytes = exchange_max_bytes
        self.run_max_bytes = run_max_bytes
        self.redactor = redactor or Redactor()
        self.secrets: set[str] = set(secrets or ())
        self.entries: list[Exchange] = []
        self.bodies: dict[str, StoredBody] = {}
        self.not_kept: list[str] = []
        self.kept_bytes = 0
        self._lock = threading.Lock()

    def wants(self, *, model_host: bool) -> bool:
        return self.policy == "all" or (self.policy == "model-hosts" and model_host)

    def add(
        self,
        *,
        method: str,
        url: str,
        request_body: bytes,
        status: int,
        headers: Mapping[str, str],
        body: bytes | None,
        started_ms: int,
        body_size: int | None = None,
        secrets: set[str] | None = None,
        incomplete: bool = False,
    ) -> Exchange | None:
        """Keep one exchange (``body`` None: it was larger than the cap; ``body_size`` says how large).

        A cloud's credential endpoint (STS, OAuth, Entra ID, instance metadata) is never kept, not even its URL's
        digest: what it answers is a credential. The note names it; an offline replay refuses it by name.
        """
        with self._lock:
            self.secrets |= secrets or set()
            host = (urlsplit(url).hostname or "").lower()
            if host_matches(host, TOKEN_HOSTS):
                self.not_kept.append(f"{method.upper()} {host}: a credential endpoint, never kept (its answer is a credential)")
                return None
            method, clean, digest, kept = request_key(method, url, request_body, secrets=self.secrets, redactor=self.redactor)
            parts = urlsplit(clean)
            entry: Exchange = {
                "index": len(self.entries),
                "timestamp": started_ms,
                "durationMs": max(0, now_ms() - started_ms),
                "method": method,
                "url": clean,
                "host": parts.hostname or "",
                "path": parts.path or "/",
                "request": self._request(kept, digest, len(request_body)),
                "response": self._response(method, clean, status, headers, body, body_size),
            }
            if incomplete:
                entry["response"]["incomplete"] = True  # the stream was still open when the run ended
            self.entries.append(entry)
            return entry

    def _request(self, kept: bytes, digest: str, size: int) -> ExchangeRequest:
        out: ExchangeRequest = {"bytes": size, "digest": digest}
        if kept and len(kept) <= SMALL_REQUEST_BYTES:
            self.bodies.setdefault(digest, stored_body(kept))
            out["body"] = digest
        return out

    def _response(
        self, method: str, url: str, status: int, headers: Mapping[str, str], body: bytes | None, body_size: int | None
    ) -> ExchangeResponse:
        kept_headers = {k: str(scrub(v, self.secrets)) for k, v in headers.items() if k.lower() in KEPT_HEADERS}
        size = len(body) if body is not None else int(body_size or 0)
        out: ExchangeResponse = {"status": status, "headers": kept_headers, "bytes": size}
        why = self._why_not_kept(body, size)
        if why is None and body is not None and any(s.encode() in body for s in self.secrets):
            why = "it holds a credential the run used"
        if why is not None:
            out["notKept"] = why
            self.not_kept.append(f"{method} {url}: the response body ({size:,} bytes) was not kept: {why}")
            return out
        assert body is not None
        if body:
            digest = digest_of(body)
            if digest not in self.bodies:
                self.bodies[digest] = stored_body(body)
                self.kept_bytes += len(body)
            out["body"] = digest
        return out

    def _why_not_kept(self, body: bytes | None, size: int) -> str | None:
        if body is None or size > self.exchange_max_bytes:
            return f"larger than the {self.exchange_max_bytes:,}-byte cap per exchange (--exchange-max-bytes raises it)"
        if self.kept_bytes + size > self.run_max_bytes:
            return f"the run's exchanges reached the {self.run_max_bytes:,}-byte cap per run (--exchanges-max-bytes raises it)"
        return None

    def note(self, line: str) -> None:
        with self._lock:
            self.not_kept.append(line)

    def document(self, run_id: str) -> ExchangesDocument:
        with self._lock:
            return {
                "kind": KIND,
                "version": VERSION,
                "run": run_id,
                "exchanges": list(self.entries),
                "bodies": dict(self.bodies),
                "notKept": list(self.not_kept),
            }

    def seal(self, cassette: str | Path, run_id: str) -> FileSeal | None:
        """Write the exchanges beside ``cassette``; the terminal event's ``exchanges`` (None: nothing to keep)."""
        from blackbox_mitm.cassette.exchanges import exchanges_ref, write_exchanges

        document = self.document(run_id)
        if not document["exchanges"] and not document["notKept"]:
            return None
        write_exchanges(cassette, document)
        return exchanges_ref(cassette, document)


class ExchangeStatus(TypedDict):
    """An offline replay's other HTTP exchanges, counted (the replay report carries them)."""

    exchanges: int
    exchanges_served: int
    exchanges_reused: int
    exchanges_other_body: int
    unmatched_exchanges: list[dict[str, str]]  # method, host, path (and why, for one whose body was not kept)
    background_unmatched: list[dict[str, str]]  # the same, and the agent whose own timer makes it


@dataclass(slots=True)
class Served:
    status: int
    headers: dict[str, str]
    body: bytes
    index: int
    held: bool = False  # an SSE stream still open when the run ended: played back event by event, then held open


@dataclass(slots=True)
class _Group:
    entries: list[Exchange] = field(default_factory=list)
    used: set[int] = field(default_factory=set)
    last: int | None = None


class ExchangeServer:
    """Answers an offline replay's other requests from the recorded exchanges; thread-safe."""

    def __init__(self, document: ExchangesDocument | None, *, rules: CompareRules = NO_RULES, redactor: Redactor | None = None) -> None:
        self.rules = rules
        self.redactor = redactor or Redactor()
        self.bodies: Mapping[str, StoredBody] = (document.get("bodies") if document else None) or {}
        self.entries: list[Exchange] = list((document.get("exchanges") if document else None) or [])
        self.groups: dict[tuple[str, str], _Group] = {}
        for entry in self.entries:
            self.groups.setdefault((entry["method"], _masked_url(entry["url"], rules)), _Group()).entries.append(entry)
        self.served = 0
        self.reused = 0
        self.other_body = 0
        self.unmatched: list[dict[str, str]] = []
        self.background: list[dict[str, str]] = []  # unmatched, but one the agent makes on its own timer (profiles)
        self._lock = threading.Lock()

    def answer(self, method: str, url: str, body: bytes, *, secrets: set[str]) -> Served | str:
        """The recorded response, or why there is none (the request is listed as unmatched)."""
        method, clean, digest, kept = request_key(method, url, body, secrets=secrets, redactor=self.redactor)
        with self._lock:
            group = self.groups.get((method, _masked_url(clean, self.rules)))
            entry = None if group is None else self._pick(group, digest, kept)
            if entry is None:
                parts = urlsplit(clean)
                asked = {"method": method, "host": parts.hostname or "", "path": parts.path or "/"}
                profile = background_profile(method, clean)
                if profile is None:
                    self.unmatched.append(asked)
                else:
                    self.background.append({**asked, "agent": profile.name})
                return "it is not in the recording"
            response = entry["response"]
            if "notKept" in response:
                self.unmatched.append({"method": method, "host": entry["host"], "path": entry["path"], "why": response["notKept"]})
                return f"its response was not kept at recording ({response['notKept']})"
            self.served += 1
        ref = response.get("body")
        data = body_bytes(self.bodies[ref]) if ref else b""
        headers = dict(response.get("headers") or {})
        # A stream still open when the run ended is held open: MCP's GET /sse, a standalone GET stream, subscriptions/listen.
        held = bool(response.get("incomplete")) and headers.get("content-type", "").lower().startswith("text/event-stream")
        return Served(int(response["status"]), headers, data, int(entry["index"]), held=held)

    def _pick(self, group: _Group, digest: str, kept: bytes) -> Exchange | None:
        same = [e for e in group.entries if e["request"]["digest"] == digest]
        if not same and self.rules:
            masked = self.rules.mask_text(kept.decode("utf-8", "replace"))
            same = [e for e in group.entries if self._stored_masked(e) == masked]
        if not same:  # another body: the recorded ones in order (what the agent made of it, the model steps compare)
            same = group.entries
            self.other_body += 1
        fresh = next((e for e in same if e["index"] not in group.used), None)
        if fresh is None:  # asked more often than recorded: the last answer again
            self.reused += 1
            fresh = same[-1]
        group.used.add(fresh["index"])
        return fresh

    def _stored_masked(self, entry: Exchange) -> str | None:
        ref = entry["request"].get("body")
        if not ref or ref not in self.bodies:
            return None
        return self.rules.mask_text(body_bytes(self.bodies[ref]).decode("utf-8", "replace"))

    def status(self) -> ExchangeStatus:
        with self._lock:
            return {
                "exchanges": len(self.entries),
                "exchanges_served": self.served,
                "exchanges_reused": self.reused,
                "exchanges_other_body": self.other_body,
                "unmatched_exchanges": list(self.unmatched),
                "background_unmatched": list(self.background),
            }
