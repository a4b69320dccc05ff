"""The recording path in-process, split by step: where a recorded call's time goes (issue #28, target 3).

Each step of ``Session.on_request`` + ``on_response`` on a record session, timed alone on the same calls as
section 1 (``workload.simple_messages``: a 1.5 KB system prompt, three tools, a short answer), with the settings
``blackbox proxy --mode record`` runs with: the environment's placeholders on (``RunEnvironment.capture()``), the
default redaction, the SDK's ``Authorization`` header known as a credential. Then the whole path, with and without
the fsync. Used by ``proxy_calls`` (section 1) and runnable alone::

    python benchmarks/record_costs.py
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.workload import CHAT_PATH, MODEL, TOOLS, simple_expected, simple_messages

__all__ = ["overlapping_on_a_loop", "overlapping_record", "record_step_costs"]

HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-bench-0123456789abcdefghij", "user-agent": "OpenAI/Python"}


def _bodies(n: int) -> tuple[list[bytes], list[bytes]]:
    requests = [json.dumps({"messages": simple_messages(i), "model": MODEL, "tools": TOOLS}).encode() for i in range(n)]
    answers = [
        json.dumps(
            {
                "id": f"chatcmpl-bench{i}",
                "object": "chat.completion",
                "created": 1_760_000_000,
                "model": MODEL,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": simple_expected(i)}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 900, "completion_tokens": 30, "total_tokens": 930},
            }
        ).encode()
        for i in range(n)
    ]
    return requests, answers


def _seq(*steps: Callable[[], object]) -> None:
    """Run each step in turn (several timed as one)."""
    for step in steps:
        step()


def _per_call(fn: Callable[[int], Any], n: int, passes: int) -> float:
    """Median over ``passes`` of the mean seconds of ``fn(i)`` over ``n`` calls."""
    means = []
    for _ in range(passes):
        t0 = time.perf_counter()
        for i in range(n):
            fn(i)
        means.append((time.perf_counter() - t0) / n)
    return statistics.median(means)


def _whole(workdir: Path, requests: list[bytes], answers: list[bytes], *, fsync: bool) -> float:
    from blackbox_mitm.cassette.trace import now_ms
    from blackbox_mitm.config import effective_settings
    from blackbox_mitm.session.build import record_session
    from blackbox_mitm.session.engine import Forward, ModelRequest
    from blackbox_mitm.session.environment import RunEnvironment

    settings = effective_settings()
    path = workdir / f"whole-{int(fsync)}.json"
    session = record_session(path, overwrite=True, fsync=fsync, redactor=settings.redactor, environment=RunEnvironment.capture())
    t0 = time.perf_counter()
    for body, answer in zip(requests, answers, strict=True):
        action = session.on_request(ModelRequest(CHAT_PATH, HEADERS, body, received_ms=now_ms()))
        if not isinstance(action, Forward):
            raise RuntimeError(f"a recorded call was not forwarded: {action!r}")
        if session.on_response(action.ticket, 200, answer, response_ms=now_ms()) is not None:
            raise RuntimeError("a recorded call was refused")
    per_call = (time.perf_counter() - t0) / len(requests)
    assert session.recorder is not None
    session.recorder.finish(path, exit_code=0)
    return per_call


def overlapping_record(*, clients: int = 8, per_client: int = 40) -> dict[str, float]:
    """``clients`` threads recording at once through one record session, fsync on (group commit, issue #28).

    Returns the wall seconds per call, the same calls one at a time on one thread, and how many journal lines
    (one per call) and fsyncs it took (the journal's own counts, its first line aside).
    """
    from blackbox_mitm.cassette.trace import now_ms
    from blackbox_mitm.config import effective_settings
    from blackbox_mitm.session.build import record_session
    from blackbox_mitm.session.engine import Forward, ModelRequest
    from blackbox_mitm.session.environment import RunEnvironment

    requests, answers = _bodies(clients * per_client)
    settings = effective_settings()
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bb-group-commit-") as tmp:
        for label, threads in (("one_s", 1), ("overlapping_s", clients)):
            path = Path(tmp) / f"{label}.json"
            session = record_session(path, overwrite=True, redactor=settings.redactor, environment=RunEnvironment.capture())
            start = threading.Barrier(threads)
            failed: list[str] = []

            def client(
                k: int, session: Any = session, start: threading.Barrier = start, failed: list[str] = failed, n: int = threads
            ) -> None:
                start.wait()
                for i in range(k, len(requests), n):
                    action = session.on_request(ModelRequest(CHAT_PATH, HEADERS, requests[i], received_ms=now_ms()))
                    if not isinstance(action, Forward) or session.on_response(action.ticket, 200, answers[i], response_ms=now_ms()):
                        failed.append(f"call {i}")

            workers = [threading.Thread(target=client, args=(k,)) for k in range(threads)]
            t0 = time.perf_counter()
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            out[label] = (time.perf_counter() - t0) / len(requests)
            if failed:
                raise RuntimeError(f"overlapping recording refused {failed[:3]}")
            assert session.recorder is not None and session.recorder.journal is not None
            lines, fsyncs = session.recorder.journal.fsyncs
            out[label.replace("_s", "_lines")], out[label.replace("_s", "_fsyncs")] = lines - 1, fsyncs - 1  # less the header
            session.recorder.finish(path, exit_code=0)
    return out


def overlapping_on_a_loop(*, clients: int = 8, per_client: int = 40, passes: int = 3) -> dict[str, float]:
    """``clients`` coroutines recording at once on one event loop, as the proxy's overlapping calls are, fsync on.

    Two ways to finish each answer, timed in turns: ``thread`` — the whole of ``Session.on_response`` hops to a
    worker thread (``asyncio.to_thread``, how the proxy did it before); ``awaited`` — the answer is recorded on the
    loop and its fsync awaited (``take_response(...).settle_async()``, how the proxy does it). Returns, per way, the
    median over ``passes`` of process CPU seconds and wall seconds a call, and the calls an fsync covered.
    """
    from blackbox_mitm.cassette.trace import now_ms
    from blackbox_mitm.config import effective_settings
    from blackbox_mitm.session.build import record_session
    from blackbox_mitm.session.engine import Forward, ModelRequest, Session
    from blackbox_mitm.session.environment import RunEnvironment

    n = clients * per_client
    requests, answers = _bodies(n)
    settings = effective_settings()

    async def finish(session: Session, way: str, ticket: Any, i: int) -> Any:
        if way == "thread":
            return await asyncio.to_thread(session.on_response, ticket, 200, answers[i], response_ms=now_ms())
        return await session.take_response(ticket, 200, answers[i], response_ms=now_ms()).settle_async()

    async def run(session: Session, way: str) -> tuple[float, float]:
        todo = iter(range(n))

        async def client() -> None:
            for i in todo:  # shared: each call is taken once
                action = session.on_request(ModelRequest(CHAT_PATH, HEADERS, requests[i], received_ms=now_ms()))
                if not isinstance(action, Forward):
                    raise RuntimeError(f"a recorded call was not forwarded: {action!r}")
                await asyncio.sleep(0)  # the upstream round trip: the other clients run meanwhile
                if await finish(session, way, action.ticket, i) is not None:
                    raise RuntimeError("a recorded call was refused")

        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        return (time.process_time() - cpu) / n, (time.perf_counter() - wall) / n

    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bb-on-a-loop-") as tmp:
        for k in range(passes):
            for way in ("thread", "awaited") if k % 2 == 0 else ("awaited", "thread"):
                path = Path(tmp) / f"{way}-{k}.json"
                session = record_session(path, overwrite=True, redactor=settings.redactor, environment=RunEnvironment.capture())
                cpu_s, wall_s = asyncio.run(run(session, way))
                assert session.recorder is not None and session.recorder.journal is not None
                lines, fsyncs = session.recorder.journal.fsyncs
                session.recorder.finish(path, exit_code=0)
                figures.setdefault(f"{way}_cpu_s", []).append(cpu_s)
                figures.setdefault(f"{way}_wall_s", []).append(wall_s)
                figures.setdefault(f"{way}_calls_per_fsync", []).append((lines - 1) / max(1, fsyncs - 1))  # less the header
    return {key: statistics.median(values) for key, values in figures.items()}


def record_step_costs(*, n: int = 300, passes: int = 5) -> list[tuple[str, float]]:
    """(step, seconds per call) for each step of a recorded call, then the whole path with and without the fsync."""
    from blackbox_mitm.cassette.canonical import canonical_bytes, step_hash_from_canonical_payload
    from blackbox_mitm.cassette.store import encode_json
    from blackbox_mitm.cassette.trace import Trace
    from blackbox_mitm.codecs import codec_for
    from blackbox_mitm.codecs.base import CallIds
    from blackbox_mitm.config import effective_settings
    from blackbox_mitm.session.environment import EnvSubstitution, RunEnvironment
    from blackbox_mitm.session.numbers import refuse_unrepresentable_numbers
    from blackbox_mitm.session.recorder import RunRecorder, secrets_from_request

    requests, answers = _bodies(n)
    codec = codec_for("POST", CHAT_PATH)
    assert codec is not None
    ids = CallIds()
    redactor = effective_settings().redactor
    env = EnvSubstitution.for_record(RunEnvironment.capture())
    decoded = [codec.decode_request(b, ids, path=CHAT_PATH) for b in requests]
    inputs = [redactor.payload(env.neutral(d.model_input)) for d in decoded]
    outputs = [redactor.payload(env.neutral(codec.decode_response(a, ids, d))) for a, d in zip(answers, decoded, strict=True)]
    canon = [(canonical_bytes(i), canonical_bytes(o)) for i, o in zip(inputs, outputs, strict=True)]
    recorder = RunRecorder(Trace.new(), None)
    recorder.privacy.learn(secrets_from_request(HEADERS))
    steps: list[tuple[str, Callable[[int], Any]]] = [
        (
            "number check + request decode (`refuse_unrepresentable_numbers`, `decode_request`)",
            lambda i: _seq(
                lambda: refuse_unrepresentable_numbers(requests[i]), lambda: codec.decode_request(requests[i], ids, path=CHAT_PATH)
            ),
        ),
        (
            "answer decode (number check, `decode_response`)",
            lambda i: _seq(
                lambda: refuse_unrepresentable_numbers(answers[i], what="response"),
                lambda: codec.decode_response(answers[i], ids, decoded[i]),
            ),
        ),
        (
            "environment placeholders (`EnvSubstitution.neutral`, request and answer)",
            lambda i: (env.neutral(decoded[i].model_input), env.neutral(outputs[i])),
        ),
        ("redaction (`Redactor.payload`, request and answer)", lambda i: (redactor.payload(inputs[i]), redactor.payload(outputs[i]))),
        (
            "credentials: read from the headers, then the leak check of both steps",
            lambda i: _seq(
                lambda: secrets_from_request(HEADERS),
                lambda: recorder._refuse_secrets([("model_input", inputs[i], 0), ("model_output", outputs[i], 0)]),
            ),
        ),
        ("canonical JSON of both steps (`canonical_bytes`)", lambda i: (canonical_bytes(inputs[i]), canonical_bytes(outputs[i]))),
        (
            "hash chain: two SHA-256 step hashes over the canonical bytes",
            lambda i: step_hash_from_canonical_payload(
                1, "model_output", 1, canon[i][1], step_hash_from_canonical_payload(0, "model_input", 1, canon[i][0], None)
            ),
        ),
        (
            "journal line (`encode_json` of both steps)",
            lambda i: encode_json([{"id": "t:0", "payload": inputs[i]}, {"id": "t:1", "payload": outputs[i]}]),
        ),
    ]
    out = [(name, _per_call(fn, n, passes)) for name, fn in steps]
    with tempfile.TemporaryDirectory(prefix="bb-record-costs-") as tmp:
        work = Path(tmp)
        fd = os.open(work / "probe.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        line = encode_json([inputs[0], outputs[0]]) + b"\n"
        try:
            out.append(("a line appended (`os.write`)", _per_call(lambda i: os.write(fd, line), n, passes)))
            out.append(
                (
                    "a line appended + `os.fsync` (the journal writes its lines over zeros instead: section 1's fsync paragraph)",
                    _per_call(lambda i: _seq(lambda: os.write(fd, line), lambda: os.fsync(fd)), n, passes),
                )
            )
        finally:
            os.close(fd)
        out.append(
            (
                "the whole path, no fsync (`on_request` + `on_response`)",
                statistics.median(_whole(work, requests, answers, fsync=False) for _ in range(3)),
            )
        )
        out.append(("the whole path, with the fsync", statistics.median(_whole(work, requests, answers, fsync=True) for _ in range(3))))
    return out


if __name__ == "__main__":
    for name, seconds in record_step_costs():
        print(f"{seconds * 1e6:9.1f} µs  {name}")
    print({k: round(v, 5) for k, v in overlapping_record().items()})
    print({k: round(v, 6) for k, v in overlapping_on_a_loop().items()})
