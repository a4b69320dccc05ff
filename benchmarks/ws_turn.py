"""Section 9: a replayed Responses turn over the WebSocket against the same call over HTTPS (issue #14).

The same cassette (``CALLS`` one-turn Responses calls, each a short streamed
text answer) replayed by ``blackbox proxy --mode replay``, a fresh proxy per
variant and round, to one of two clients in this process, both through the
proxy with its CA (TLS interception, as an agent sees it):

* (h) HTTPS: ``POST /v1/responses`` with ``stream: true`` on one keep-alive
  connection (``httpx2``, the SDKs' HTTP stack), the SSE body read to its end;
* (w) WebSocket: one socket to ``wss://api.openai.com/v1/responses``
  (``websockets``), each turn a ``response.create`` frame and its event frames
  up to ``response.completed`` — served by the proxy's loopback socket server,
  one more local hop than (h).

Each client makes ``WARMUP`` untimed calls first, then the rest timed one by
one. The figure is (w)/(h), the ratio of median turn times in the same round.
No target: issue #14 asks for the comparison, not a bound.

    python benchmarks/ws_turn.py         # a quick stand-alone run: prints the ratio
"""

from __future__ import annotations

import json
import ssl
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import PYTHON, ROOT, Context, Section, Service, free_port, md_table, ratio_stats, summarize

__all__ = ["measure"]

CALLS = 40
WARMUP = 5
MODEL = "gpt-4.1"
URL = "api.openai.com/v1/responses"
TEXT = "Sunny in Paris, eighteen degrees, a light breeze from the west."


def _body(i: int) -> dict[str, Any]:
    return {"model": MODEL, "input": [{"type": "message", "role": "user", "content": f"turn {i}: the weather?"}], "store": False}


def build_cassette(path: Path) -> None:
    """``CALLS`` streamed one-turn calls, recorded through the session as the proxy records them."""
    sys.path.insert(0, str(ROOT / "examples"))
    from fake_responses_ws import answer_events

    from blackbox_mitm.codecs.base import SseEvent
    from blackbox_mitm.session.build import record_session
    from blackbox_mitm.session.engine import Forward, ModelRequest

    session = record_session(path, fsync=False)
    for i in range(CALLS):
        body = {**_body(i), "stream": True}
        action = session.on_request(ModelRequest(path="/v1/responses", headers={}, body=json.dumps(body).encode()))
        assert isinstance(action, Forward)
        events = [SseEvent(e["type"], json.dumps(e)) for e in answer_events({"text": TEXT}, body, f"resp_b{i}", i)]
        assert session.on_response(action.ticket, 200, events) is None
    assert session.recorder is not None
    session.recorder.finish(path, exit_code=0)


def _https_turns(proxy: str, ca: str) -> list[float]:
    import httpx2

    times = []
    with httpx2.Client(proxy=proxy, verify=ssl.create_default_context(cafile=ca), timeout=30) as client:
        for i in range(CALLS):
            t0 = time.perf_counter()
            with client.stream("POST", f"https://{URL}", json={**_body(i), "stream": True}, headers={"authorization": "Bearer x"}) as r:
                data = b"".join(r.iter_bytes())
            times.append(time.perf_counter() - t0)
            if r.status_code != 200 or b"response.completed" not in data:
                raise RuntimeError(f"HTTPS turn {i}: {r.status_code} {data[-500:]!r}")
    return times[WARMUP:]


def _socket_turns(proxy: str, ca: str) -> list[float]:
    from websockets.sync.client import connect

    times = []
    with connect(f"wss://{URL}", proxy=proxy, ssl=ssl.create_default_context(cafile=ca), max_size=None, open_timeout=30) as ws:
        for i in range(CALLS):
            t0 = time.perf_counter()
            ws.send(json.dumps({"type": "response.create", **_body(i)}))
            while True:
                event = json.loads(ws.recv(timeout=30))
                if event["type"] in ("response.completed", "error"):
                    break
            times.append(time.perf_counter() - t0)
            if event["type"] != "response.completed":
                raise RuntimeError(f"WebSocket turn {i}: {event}")
    return times[WARMUP:]


def _round(ctx: Context, cassette: Path, variant: str, ca: str) -> list[float]:
    port = free_port()
    argv = [PYTHON, "-m", "blackbox_mitm", "proxy", "--mode", "replay", "--cassette", str(cassette)]
    argv += ["--listen-port", str(port), "--confdir", str(ctx.confdir)]
    with Service(f"ws-turn-{variant}", argv, port=port, log_dir=ctx.workdir) as proxy:
        return (_socket_turns if variant == "w" else _https_turns)(proxy.url, ca)


def measure(ctx: Context) -> Section:
    from blackbox_mitm.proxy.environment import ca_bundle

    section = Section("ws_turn", "9. A WebSocket turn against an HTTPS call (replayed Responses API)")
    cassette = ctx.path("ws-turn.json")
    if not cassette.exists():
        build_cassette(cassette)
    ca = str(ca_bundle(ctx.confdir))
    medians: dict[str, list[float]] = {"h": [], "w": []}
    for _ in range(ctx.rounds):
        for variant in ("h", "w"):
            medians[variant].append(statistics.median(_round(ctx, cassette, variant, ca)))
    ratio = ratio_stats(medians["w"], medians["h"])
    rows = [
        ("(h) HTTPS: POST + SSE, keep-alive", summarize(medians["h"]).fmt(1e3, 2), "1.00"),
        ("(w) WebSocket: a response.create turn", summarize(medians["w"]).fmt(1e3, 2), ratio.fmt()),
    ]
    section.add(
        f"{CALLS - WARMUP} timed turns per client and round after {WARMUP} untimed, {ctx.rounds} rounds, a fresh "
        "`blackbox proxy --mode replay` per variant and round; each answer is a short streamed text. Both clients "
        "go through the proxy's TLS interception; the socket is served by the proxy's loopback WebSocket server.",
        "",
    )
    section.add(*md_table(("client", "ms per turn (median)", "× HTTPS"), rows), "")
    section.headline.append(
        f"A replayed Responses turn over the WebSocket takes {summarize(medians['w']).median * 1e3:.2f} ms against "
        f"{summarize(medians['h']).median * 1e3:.2f} ms for the same call over HTTPS: w/h = {ratio.median:.2f}."
    )
    section.data = {"medians_s": medians, "ratio": ratio.to_json(), "calls": CALLS, "warmup": WARMUP}
    return section


if __name__ == "__main__":
    import tempfile

    from blackbox_mitm.proxy.environment import ensure_ca

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ensure_ca(work / "confdir")
        ctx = Context(quick=True, rounds=2, workdir=work, confdir=work / "confdir", profile=False, log=print)
        result = measure(ctx)
        print("\n".join(result.headline))
