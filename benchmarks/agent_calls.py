"""Section: agent-sized requests — a Claude Code-shaped session replayed, in-process, step by step (issue #28, target 2).

The session is ``benchmarks/agent_workload.py``: Anthropic Messages requests that
re-send a ~14 KB system prompt, 20 tool definitions (~42 KB) and a growing
history, the last about 120 KB. It is recorded in-process (the library's
``Session`` in record mode, no fsync) and replayed with the **built-in masks on**
(``CompareRules.build()``), the requests carrying the tool ids the replay served.

Two measurements, each interleaved round by round (A B A B):

* **hooks**: the whole session's requests handed as mitmproxy flows to
  ``server_replay``'s request hook (the same bodies, recorded as flows) and to
  Blackbox's four addon hooks over a replay session (as ``hooks.py`` does for
  section 1's small requests): per-call time of each and their ratio. Blackbox
  is measured twice: replaying the same day (the requests are the recorded
  ones) and **another day** (each request's system prompt has another date and
  billing line, which the built-in masks hide: what a replay in CI sees; mitmproxy's
  ``server_replay`` would not answer these at all, so both are set against its
  same-day figure);
* **cost split** of the last (~120 KB) request, each step timed alone by calling
  the library: decode (the number check and the codec), normalize (tool-result
  order, redaction), mask, canonicalize, digest (SHA-256), lookup, encode — with
  the digest made cold (every piece new: what ``request_digest`` does) and warm
  (``matcher.digests``: the pieces the previous call sent are in the memo) — and
  what an in-order replay does instead of both digests: the request compared with
  the expected recorded call piece by piece (``PieceDigester.same``), the same
  day and another day.

The load on the machine does not cancel out of absolute times; ratios measured in
the same round are what to read.

    python -m benchmarks.agent_calls      # one quick run, printed
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from benchmarks.agent_workload import response_body, session_bodies
from benchmarks.common import Context, Section, Target, md_table, ratio_stats, summarize
from benchmarks.hooks import _drive

__all__ = ["measure"]

PATH = "/v1/messages"
HEADERS = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
LIMIT = 0.9


def prepare(workdir: Path) -> tuple[Path, list[bytes]]:
    """Record the session into a cassette; return it and the request bodies a replaying agent sends."""
    from blackbox_mitm.matcher.masks import CompareRules
    from blackbox_mitm.session.build import finish_proxy_session, record_session, replay_session
    from blackbox_mitm.session.engine import Answer, Forward, ModelRequest

    bodies = session_bodies()
    cassette = workdir / "agent-run.json"
    session = record_session(cassette, fsync=False, overwrite=True)
    for i, body in enumerate(bodies):
        forward = session.on_request(ModelRequest(PATH, dict(HEADERS), body))
        assert isinstance(forward, Forward)
        session.on_response(forward.ticket, 200, response_body(i, i == len(bodies) - 1))
    finish_proxy_session(session)
    # What the agent sends back in replay: the tool ids the replay served (its own, derived from the content).
    replay = replay_session(cassette, rules=CompareRules.build())
    sent: list[bytes] = []
    served_ids: dict[bytes, bytes] = {}
    for i, body in enumerate(bodies):
        for native, ours in served_ids.items():
            body = body.replace(native, ours)
        sent.append(body)
        answer = replay.on_request(ModelRequest(PATH, dict(HEADERS), body))
        assert isinstance(answer, Answer), answer  # a replay answers every call itself
        if answer.status != 200:
            raise RuntimeError(f"the agent session did not replay: {answer.body[:400]!r}")
        for block in orjson.loads(answer.body)["content"]:
            if block["type"] == "tool_use":
                served_ids[b"toolu_bb%04d" % i] = block["id"].encode()
    return cassette, sent


def another_day(bodies: list[bytes]) -> list[bytes]:
    """The requests as the agent sends them on another day: the date and the billing line differ (masked)."""
    return [b.replace(b"2026-12-01", b"2027-03-09").replace(b"cch=3f9a0c1d", b"cch=5e7b21aa") for b in bodies]


def _flows(bodies: list[bytes], with_responses: bool) -> list[Any]:
    from mitmproxy import http
    from mitmproxy.test import tflow

    flows = []
    for i, body in enumerate(bodies):
        headers: dict[str | bytes, str | bytes] = {k: v for k, v in HEADERS.items()}
        req = http.Request.make("POST", f"https://api.anthropic.com{PATH}", body, headers)
        resp = http.Response.make(200, response_body(i, i == len(bodies) - 1), {"content-type": "application/json"})
        flows.append(tflow.tflow(req=req, resp=resp if with_responses else False))
    return flows


def hook_rounds(cassette: Path, bodies: list[bytes], rounds: int, repeat: int) -> dict[str, list[float]]:
    """Per-call seconds per round: ``server_replay``'s request hook and Blackbox's four hooks, interleaved."""
    from mitmproxy.addons.serverplayback import ServerPlayback
    from mitmproxy.test import taddons

    clock = time.perf_counter
    out: dict[str, list[float]] = {"server_replay": [], "blackbox": [], "blackbox_another_day": []}
    n = len(bodies) * repeat
    later = another_day(bodies)
    for _ in range(rounds):
        playback = ServerPlayback()
        with taddons.context(playback) as tctx:
            tctx.configure(playback, server_replay_reuse=True, server_replay_extra="kill")
            playback.load_flows(_flows(bodies, True))
            flows = [f for _ in range(repeat) for f in _flows(bodies, False)]
            t0 = clock()
            for flow in flows:
                playback.request(flow)
            out["server_replay"].append((clock() - t0) / n)
            if any(flow.response is None for flow in flows):
                raise RuntimeError("server_replay did not answer every request")
        for key, sent in (("blackbox", bodies), ("blackbox_another_day", later)):
            out[key].append(_blackbox_pass(cassette, sent, repeat) / n)
    return out


def _blackbox_pass(cassette: Path, bodies: list[bytes], repeat: int) -> float:
    """Seconds for ``repeat`` replays of ``bodies`` through Blackbox's four addon hooks, a fresh session each."""
    from mitmproxy.test import taddons

    from blackbox_mitm.matcher.masks import CompareRules
    from blackbox_mitm.proxy.addon import DEFAULT_HOSTS, BlackboxAddon
    from blackbox_mitm.session.build import replay_session

    clock = time.perf_counter
    total = 0.0
    with taddons.context():
        for _ in range(repeat):  # a fresh session per pass: each request is served once, as in a replay
            session = replay_session(cassette, rules=CompareRules.build(), order_gap_ms=None)  # one call at a time (hooks.py)
            addon = BlackboxAddon(session, on_done=lambda: None)
            addon.hosts = set(DEFAULT_HOSTS)
            addon.offline = True
            flows = _flows(bodies, False)
            t0 = clock()
            for flow in flows:
                addon.requestheaders(flow)
                addon.request(flow)
                addon.responseheaders(flow)
                _drive(addon.response(flow))
            total += clock() - t0
            bad = [f for f in flows if f.response is None or f.response.status_code != 200]
            if bad:
                raise RuntimeError(f"blackbox did not serve {len(bad)} of {len(flows)} agent requests")
    return total


def _timed(fn: Callable[[], Any], repeat: int) -> float:
    clock = time.perf_counter
    best = []
    for _ in range(5):
        t0 = clock()
        for _ in range(repeat):
            fn()
        best.append((clock() - t0) / repeat)
    return sorted(best)[2]


def cost_split(bodies: list[bytes], repeat: int) -> list[tuple[str, float]]:
    """Seconds per step for the last request (module docstring), each step alone."""
    from blackbox_mitm.cassette.canonical import canonical_bytes
    from blackbox_mitm.codecs import anthropic_messages as codec
    from blackbox_mitm.codecs.base import CallIds
    from blackbox_mitm.matcher.digests import PieceDigester
    from blackbox_mitm.matcher.masks import NO_RULES, CompareRules
    from blackbox_mitm.matcher.normalize import compared_view
    from blackbox_mitm.session.numbers import refuse_unrepresentable_numbers
    from blackbox_mitm.session.redact import Redactor
    from blackbox_mitm.session.transcript import order_tool_results

    rules = CompareRules.build()
    body = bodies[-1]
    ids = CallIds()
    decoded = codec.decode_request(body, ids, path=PATH)
    redactor = Redactor()
    model_input = redactor.payload(dict(order_tool_results(decoded.model_input)))
    masked_view = compared_view(model_input, rules)
    canonical = canonical_bytes(masked_view)
    index = {hashlib.sha256(canonical).hexdigest(): 0}
    digest = hashlib.sha256(canonical).hexdigest()
    previous = codec.decode_request(bodies[-2], CallIds(), path=PATH).model_input

    digester = PieceDigester(rules)
    digester.digest(previous)
    after_previous = dict(digester._memo)  # the memo as the previous call left it
    prefix_after_previous = digester._prefix  # and the hash states of its history
    last_after_previous = dict(digester._last)  # and its pieces in order

    def warm() -> str:
        digester._memo = dict(after_previous)  # (a copy of a few dozen entries: negligible)
        digester._prefix = prefix_after_previous
        digester._last = dict(last_after_previous)
        return digester.digest(model_input)

    # What an in-order replay does instead of both digests: the request set against the recorded call it expects.
    recorded = redactor.payload(dict(order_tool_results(decoded.model_input)))
    later = codec.decode_request(another_day(bodies)[-1], CallIds(), path=PATH).model_input
    compare = PieceDigester(rules)
    compare.same(recorded, later)  # the other day's masked system prompt in the memo, as after the replay's first call

    output = {"type": "final_answer", "text": "step_3_1 doubles its input; no other step does."}
    check = _timed(lambda: refuse_unrepresentable_numbers(body), repeat)

    def checked_then_decoded() -> object:  # as the engine runs them: the check's parse is handed to the codec
        refuse_unrepresentable_numbers(body)
        return codec.decode_request(body, CallIds(), path=PATH)

    return [
        ("decode: number check (`refuse_unrepresentable_numbers`, the one orjson parse)", check),
        (
            "decode: `anthropic_messages.decode_request` after the check (codec, given its parse: `jsonio.hand_over`)",
            max(0.0, _timed(checked_then_decoded, repeat) - check),
        ),
        (
            "normalize: tool-result order + redaction",
            _timed(lambda: redactor.payload(dict(order_tool_results(decoded.model_input))), repeat),
        ),
        ("compared view, no masks", _timed(lambda: compared_view(model_input, NO_RULES), repeat)),
        (
            "mask: the built-in masks over the view",
            max(
                0.0,
                _timed(lambda: compared_view(model_input, rules), repeat) - _timed(lambda: compared_view(model_input, NO_RULES), repeat),
            ),
        ),
        ("canonicalize: `canonical_bytes` of the masked view", _timed(lambda: canonical_bytes(masked_view), repeat)),
        ("digest: SHA-256 of the canonical bytes", _timed(lambda: hashlib.sha256(canonical).hexdigest(), repeat)),
        ("lookup: digest -> recorded call", _timed(lambda: index.get(digest), repeat)),
        (
            "cold digest, all of the above after normalize (`request_digest`, every piece new)",
            _timed(lambda: PieceDigester(rules).digest(model_input), repeat),
        ),
        ("warm digest (`matcher.digests`, the previous call's pieces in the memo)", _timed(warm, repeat)),
        (
            "in place of both digests, in order: the request against the expected call, piece by piece (`PieceDigester.same`), the same day",
            _timed(lambda: compare.same(recorded, model_input), repeat),
        ),
        ("the same, another day (the system prompt differs where a mask hides it)", _timed(lambda: compare.same(recorded, later), repeat)),
        (
            "encode: `encode_response` + `orjson.dumps`",
            _timed(lambda: orjson.dumps(codec.encode_response(output, request=decoded, ids=ids, created_ms=1_760_000_000_000)), repeat),
        ),
        ("floor, for scale: `orjson.loads` of the body", _timed(lambda: orjson.loads(body), repeat)),
        ("floor, for scale: SHA-256 of the raw body (what server_replay hashes)", _timed(lambda: hashlib.sha256(body).digest(), repeat)),
    ]


def measure(ctx: Context) -> Section:
    section = Section("agent", "Agent-sized requests: a Claude Code-shaped session, in-process (issue #28, target 2)")
    repeat = 1 if ctx.quick else 5
    # The library's log lines would go to the handler an earlier in-process proxy left behind (its event loop
    # closed): nothing here is worth logging, so logging is off while this section runs.
    logging.disable(logging.CRITICAL)
    try:
        with tempfile.TemporaryDirectory(dir=ctx.workdir) as tmp:
            cassette, bodies = prepare(Path(tmp))
            hooks = hook_rounds(cassette, bodies, ctx.rounds, repeat)
            split = cost_split(bodies, 3 if ctx.quick else 20)
    finally:
        logging.disable(logging.NOTSET)
    ratio = ratio_stats(hooks["blackbox"], hooks["server_replay"])
    ratio_later = ratio_stats(hooks["blackbox_another_day"], hooks["server_replay"])
    sizes = [len(b) for b in bodies]
    section.add(
        f"{len(bodies)} Anthropic Messages requests of {sizes[0] // 1000}–{sizes[-1] // 1000} KB (a ~14 KB system prompt, "
        f"20 tool definitions, a history growing by a tool round per call), built-in masks on; {ctx.rounds} rounds of "
        f"{repeat} passes, the two interleaved. Per call, median (min–max):",
        "",
        *md_table(
            ("hooks", "µs per call", "× server_replay"),
            [
                ("mitmproxy `server_replay` (its request hook)", summarize(hooks["server_replay"]).fmt(1e6, 0), "1.00"),
                ("Blackbox (its four addon hooks, replay session), the same day", summarize(hooks["blackbox"]).fmt(1e6, 0), ratio.fmt()),
                (
                    "Blackbox, another day (each system prompt's date and billing line differ; the built-in masks hide them)",
                    summarize(hooks["blackbox_another_day"]).fmt(1e6, 0),
                    ratio_later.fmt(),
                ),
            ],
        ),
        "",
        "`server_replay` is timed on the same-day requests: on another day it would find none of them (its key is a "
        "hash of the body). A replay in order does not digest: each request is compared with the recorded call it "
        "expects, piece by piece (the last messages first; a piece with the same JSON costs a serialization, one that "
        "differs is masked and compared by its canonical bytes, from the memo). A request that is not the expected "
        "call's (an overlapping call, a divergence) is digested, warm, and looked up: the rows below.",
        "",
        f"The cost split of the last request ({sizes[-1] // 1000} KB), each step timed alone (median of 5 passes):",
        "",
        *md_table(("step", "µs"), [(name, f"{s * 1e6:.0f}") for name, s in split]),
    )
    section.headline.append(
        f"Agent-sized requests ({sizes[-1] // 1000} KB Claude Code-shaped, built-in masks on), in-process: Blackbox's hooks "
        f"cost {summarize(hooks['blackbox']).median * 1e6:.0f} µs a call, {ratio.median:.2f}x server_replay's request hook "
        f"({summarize(hooks['server_replay']).median * 1e6:.0f} µs); another day (masked dates) "
        f"{summarize(hooks['blackbox_another_day']).median * 1e6:.0f} µs, {ratio_later.median:.2f}x."
    )
    decode = sum(v for k, v in split if k.startswith("decode"))
    compared = sum(v for k, v in split if k.startswith("in place of both digests"))
    note = (
        f"server_replay hashes the raw body once; Blackbox must parse it: decode alone is {decode * 1e6:.0f} µs "
        f"(once: the number check hands its orjson parse to the codec), the comparison with the expected call "
        f"{compared * 1e6:.0f} µs; the rest is the echoed-id check (a serialization and a scan), the tool-result order, "
        "redaction and the answer's encoding"
    )
    for label, r in (("the same day", ratio), ("another day, masked dates", ratio_later)):
        section.targets.append(
            Target(
                f"agent-sized request (120 KB), in-process hooks, {label}: blackbox / server_replay",
                f"≤ {LIMIT:.2f}",
                r.median,
                LIMIT,
                note=note,
            )
        )
    section.data = {"hooks_s": hooks, "split_s": split, "sizes": sizes}
    return section


if __name__ == "__main__":
    import sys

    from benchmarks.common import Context

    work = Path(tempfile.mkdtemp(prefix="agent-bench-"))
    found = measure(Context(quick=True, rounds=2, workdir=work, confdir=work, profile=False, log=lambda m: print(m, file=sys.stderr)))
    print("\n".join(found.lines))
    print(found.headline, [t.verdict() for t in found.targets])
