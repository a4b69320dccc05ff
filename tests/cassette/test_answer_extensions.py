"""Blackbox's extensions of the answer: token counts (verify, show, forks) and kept thinking (verify)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cassette_builders import save

from blackbox_mitm.cassette import Trace
from blackbox_mitm.cassette.timeline import build_timeline, render_timeline
from blackbox_mitm.codecs.verified import verify_trace
from blackbox_mitm.session.lineage import list_forks, render_forks

T0 = 1_732_981_200_000
QUESTION = {"messages": [{"role": "user", "content": "Weather?"}], "tools": []}


def _run(run_id: str, answers: list[dict[str, Any]], *, parent: str | None = None) -> Trace:
    trace = Trace.new(run_id, created_at=T0)
    if parent is not None:
        trace.parentId, trace.forkedFromStepId = parent, f"{parent}:0"
    for n, answer in enumerate(answers):
        trace.append("model_input", QUESTION, timestamp=T0 + 10 * n)
        trace.append("model_output", answer, timestamp=T0 + 10 * n + 5)
    trace.append("metadata", {"event": "run_completed", "status": "success", "result": "ok"}, timestamp=T0 + 999)
    return trace


BIG = {"type": "final_answer", "text": "ok", "tokens": {"input": 151_000, "output": 812, "cachedInput": 150_000, "reasoning": 64}}
SMALL = {"type": "final_answer", "text": "ok", "tokens": {"input": 20, "output": 7}}


def test_verify_accepts_the_neutral_counts_and_still_flags_a_provider_usage_object() -> None:
    assert verify_trace(_run("r", [BIG, SMALL])) == []
    leaked = _run("r", [{"type": "final_answer", "text": "ok", "usage": {"prompt_tokens": 3}}])
    assert {p.code for p in verify_trace(leaked)} >= {"provider_field"}
    bad = _run("r", [{"type": "final_answer", "text": "ok", "tokens": {"input": -1, "prompt_tokens": 3}}])
    reasons = [str(p) for p in verify_trace(bad)]
    assert any("payload.tokens.input" in r and "non-negative integer" in r for r in reasons)
    assert any("payload.tokens.prompt_tokens" in r for r in reasons)


def test_show_gives_tokens_per_answer_and_for_the_run() -> None:
    timeline = build_timeline(_run("r", [BIG, SMALL]))
    assert timeline.tokens == {"input": 151_020, "output": 819, "cachedInput": 150_000, "reasoning": 64, "calls": 2}
    text = render_timeline(timeline)
    assert "tokens 151,020 in (150,000 cached) / 819 out (64 reasoning) over 2 answers" in text
    assert "[151,000 in (150,000 cached) / 812 out (64 reasoning)] answer: " in text
    tokens = timeline.to_json()["tokens"]
    assert tokens is not None and tokens["calls"] == 2


def test_a_run_without_counts_shows_none() -> None:
    timeline = build_timeline(_run("r", [{"type": "final_answer", "text": "ok"}]))
    assert timeline.tokens is None and "tokens" not in render_timeline(timeline)


def test_forks_compare_tokens_with_their_parent(tmp_path: Path) -> None:
    parent = save(_run("parent-1", [BIG]), tmp_path / "parent.json")
    save(_run("fork-1", [SMALL, SMALL], parent="parent-1"), tmp_path / "fork.json")
    listing = list_forks(parent)
    [fork] = listing["forks"]
    assert fork["delta"]["tokens"] == {"input": 40 - 151_000, "output": 14 - 812}
    text = render_forks(listing)
    assert "151,000 in / 812 out tokens" in text.splitlines()[0]
    assert "-150,960 in / -798 out tokens" in text
    json.dumps(listing)  # the --json listing stays JSON


def test_verify_reads_kept_thinking_as_the_models_data() -> None:
    """A thought that mentions a provider id is the model's text, not a leak; a real key in it is still flagged."""
    thought = {"type": "thinking", "text": "The docs mention toolu_01 and msg_02.", "signature": "EqQBCkgIARAB"}
    assert verify_trace(_run("r", [{**SMALL, "reasoning": [thought]}])) == []
    key = "sk-ant-api03-" + "Zq9X" * 12
    leaked = _run("r", [{**SMALL, "reasoning": [{**thought, "text": f"use {key}"}]}])
    assert [p.code for p in verify_trace(leaked)] == ["credential"]


def test_verify_accepts_media_parts_and_their_references() -> None:
    digest = "ab" * 32
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "see"},
            {"type": "image", "mediaType": "image/png", "sha256": digest, "size": 12},
            {"type": "document", "url": "https://example.com/msg_report.pdf", "name": "msg_report.pdf"},
        ],
    }
    trace = Trace.new("media-1", created_at=T0)
    trace.append("model_input", {"messages": [message], "tools": []}, timestamp=T0 + 1)
    trace.append("model_output", SMALL, timestamp=T0 + 2)
    assert verify_trace(trace) == []


JS_MEDIA = Path(__file__).resolve().parent.parent / "fixtures" / "cassettes" / "js_media.json"
PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="


def test_a_node_written_cassette_with_the_extensions_verifies_and_matches_the_codecs() -> None:
    """make_js_extensions.js writes media, tokens, thinking and strict from the docs alone: the chain holds, verify
    passes, and an Anthropic request reading the same PNG decodes to the very model_input it recorded."""
    from blackbox_mitm.cassette import load_trace
    from blackbox_mitm.codecs import anthropic_messages
    from blackbox_mitm.codecs.base import CallIds
    from blackbox_mitm.codecs.verified import verify_file
    from blackbox_mitm.matcher.outcomes import Served
    from blackbox_mitm.matcher.recorded import RecordedCalls

    assert verify_file(JS_MEDIA).ok
    trace = load_trace(JS_MEDIA)
    tool = {
        "name": "Read",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
        "strict": True,
    }
    use = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/w/img.png"}}
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}}
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "tools": [tool],
        "messages": [
            {"role": "user", "content": "What is in img.png?"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}, use]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [image]}]},
        ],
    }
    ids = CallIds()
    first = anthropic_messages.decode_request(json.dumps({**body, "messages": body["messages"][:1]}).encode(), ids)
    ids.assign("toolu_1", "Read")
    second = anthropic_messages.decode_request(json.dumps(body).encode(), ids)
    calls = RecordedCalls(trace)
    assert isinstance(calls.match(first.model_input), Served)
    assert isinstance(calls.match(second.model_input), Served)
    assert build_timeline(trace).tokens == {"input": 302_200, "output": 51, "cachedInput": 150_000, "reasoning": 0, "calls": 2}
