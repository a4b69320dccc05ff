"""The replay logic alone: Blackbox's addon hooks against mitmproxy's ``server_replay`` hook, in-process.

No sockets, no TLS, no event loop: the same recorded requests (the SDK's exact
bytes, from section 1's flow file) are handed as mitmproxy flows to

* ``ServerPlayback.request`` with the flows loaded (``server_replay_reuse``), and to
* ``BlackboxAddon`` — ``requestheaders``, ``request`` (decode, digest, strict
  match, encode), ``responseheaders`` and ``response`` — over a replay session of
  section 1's cassette, built as ``blackbox proxy --mode replay`` builds it.

Both answer every request from their recording; the time per call is what each
adds inside mitmproxy's hook dispatch (the dispatch itself, shared by both, is
not included). This is the deterministic part of (d) against (c).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from benchmarks.common import Stats, summarize

__all__ = ["component_costs", "hook_costs"]


def _drive(coro: Any) -> None:
    """Run a coroutine that never awaits anything pending (the addon's ``response`` in replay)."""
    try:
        coro.send(None)
    except StopIteration:
        return
    coro.close()
    raise RuntimeError("the hook awaited something; it cannot be timed without an event loop")


def _fresh_flows(requests: list[Any]) -> list[Any]:
    from mitmproxy.test import tflow

    return [tflow.tflow(req=req.copy()) for req in requests]


def hook_costs(flows_path: Path, cassette: Path, rounds: int) -> dict[str, Stats]:
    """Per-call seconds: ``server_replay`` (its request hook), ``blackbox`` (all four hooks), ``blackbox_request``."""
    from mitmproxy import http, io
    from mitmproxy.addons.serverplayback import ServerPlayback
    from mitmproxy.test import taddons

    from blackbox_mitm.proxy.addon import DEFAULT_HOSTS, BlackboxAddon
    from blackbox_mitm.session.build import replay_session

    with flows_path.open("rb") as f:
        recorded = [flow for flow in io.FlowReader(f).stream() if isinstance(flow, http.HTTPFlow)]
    requests = [flow.request for flow in recorded]
    n = len(requests)
    clock = time.perf_counter
    server_replay: list[float] = []
    blackbox: list[float] = []
    blackbox_request: list[float] = []

    playback = ServerPlayback()
    with taddons.context(playback) as tctx:
        tctx.configure(playback, server_replay_reuse=True, server_replay_extra="kill")
        playback.load_flows(recorded)
        for _ in range(rounds):
            flows = _fresh_flows(requests)
            t0 = clock()
            for flow in flows:
                playback.request(flow)
            server_replay.append((clock() - t0) / n)
            if any(flow.response is None for flow in flows):
                raise RuntimeError("server_replay did not answer every recorded request")

    with taddons.context():
        for _ in range(rounds):
            # Calls driven one at a time, with no event loop: none overlaps, so the release order (session/release.py) is off;
            # its separations would be wall time, not the hooks' cost.
            addon = BlackboxAddon(replay_session(cassette, order_gap_ms=None), on_done=lambda: None)
            addon.hosts = set(DEFAULT_HOSTS)
            addon.offline = True
            flows = _fresh_flows(requests)
            in_request = 0.0
            t0 = clock()
            for flow in flows:
                addon.requestheaders(flow)
                t1 = clock()
                addon.request(flow)
                in_request += clock() - t1
                addon.responseheaders(flow)
                _drive(addon.response(flow))
            blackbox.append((clock() - t0) / n)
            blackbox_request.append(in_request / n)
            bad = [flow for flow in flows if flow.response is None or flow.response.status_code != 200]
            if bad:
                raise RuntimeError(f"blackbox did not serve {len(bad)} of {n} recorded requests")
    return {"server_replay": summarize(server_replay), "blackbox": summarize(blackbox), "blackbox_request": summarize(blackbox_request)}


def _per_call(fn: Any, items: list[Any], repeat: int) -> float:
    """Median over ``repeat`` passes of the mean seconds of ``fn(item)`` over ``items``."""
    clock = time.perf_counter
    passes = []
    for _ in range(repeat):
        t0 = clock()
        for item in items:
            fn(item)
        passes.append((clock() - t0) / len(items))
    return sorted(passes)[len(passes) // 2]


def _header_dict_linear(headers: Any) -> dict[str, str]:
    # What ``{k.lower(): v for k, v in headers.items()}`` gives, in one pass over the raw fields.
    out: dict[str, str] = {}
    for raw_key, raw_value in headers.fields:
        key = raw_key.decode("utf-8", "surrogateescape").lower()
        value = raw_value.decode("utf-8", "surrogateescape")
        out[key] = f"{out[key]}, {value}" if key in out else value
    return out


def component_costs(flows_path: Path, repeat: int = 5) -> list[tuple[str, str, float]]:
    """Per-call seconds of each step on the replay path, on the recorded requests: (who, step, seconds).

    Each step is timed by calling the library (or mitmproxy) directly, so the table
    stays true as the code changes; the header copy is timed both as mitmproxy's
    ``Headers.items()`` gives it and as one pass over ``Headers.fields``.
    """
    import orjson
    from mitmproxy import http, io
    from mitmproxy.addons.serverplayback import ServerPlayback
    from mitmproxy.test import taddons

    from blackbox_mitm.codecs import openai_chat
    from blackbox_mitm.codecs.base import CallIds
    from blackbox_mitm.matcher.normalize import request_digest

    with flows_path.open("rb") as f:
        recorded = [flow for flow in io.FlowReader(f).stream() if isinstance(flow, http.HTTPFlow)]
    requests = [flow.request for flow in recorded]
    bodies = [req.get_content(strict=False) or b"" for req in requests]
    ids = CallIds()
    decoded = [openai_chat.decode_request(body, ids) for body in bodies]
    output = {"type": "final_answer", "text": "Echo: " + "x" * 200}

    def encode(d: Any) -> bytes:
        return orjson.dumps(openai_chat.encode_response(output, request=d, ids=ids, created_ms=1_760_000_000_000))

    answers = [encode(d) for d in decoded]
    headers = [req.headers for req in requests]
    if any({k.lower(): v for k, v in h.items()} != _header_dict_linear(h) for h in headers):
        raise RuntimeError("the one-pass header copy differs from Headers.items()")
    responses = [flow.response for flow in recorded if flow.response is not None]
    copy = _per_call(lambda resp: resp.copy(), responses, repeat)
    playback = ServerPlayback()
    with taddons.context(playback):
        look_up = _per_call(playback._hash, recorded, repeat)
    return [
        (
            "blackbox",
            f"header copy via `Headers.items()` ({len(headers[0].fields)} headers, as the openai SDK sends them)",
            _per_call(lambda h: {k.lower(): v for k, v in h.items()}, headers, repeat),
        ),
        ("blackbox", "the same dict in one pass over `Headers.fields`", _per_call(_header_dict_linear, headers, repeat)),
        ("blackbox", "`Request.get_content()`", _per_call(lambda r: r.get_content(strict=False), requests, repeat)),
        (
            "blackbox",
            "`openai_chat.decode_request`",
            _per_call(lambda b: openai_chat.decode_request(b, CallIds()), bodies, repeat),
        ),
        (
            "blackbox",
            "`request_digest` (compared view, canonical JSON, SHA-256)",
            _per_call(lambda d: request_digest(d.model_input), decoded, repeat),
        ),
        ("blackbox", "`encode_response` + `orjson.dumps`", _per_call(encode, decoded, repeat)),
        (
            "blackbox",
            "`http.Response.make`",
            _per_call(lambda body: http.Response.make(200, body, {"content-type": "application/json"}), answers, repeat),
        ),
        ("server_replay", "flow look-up hash (`_hash`)", look_up),
        ("server_replay", "`Response.copy()`", copy),
        (
            "server_replay",
            "`Response.refresh()` (on by default)",
            max(0.0, _per_call(lambda resp: resp.copy().refresh(), responses, repeat) - copy),
        ),
    ]
