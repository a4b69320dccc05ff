"""Building a session for each mode from files, and ending it.

``record_session`` opens a journal for a new cassette; ``replay_session`` loads
and verifies one (a cassette that does not verify is never replayed);
``finish_proxy_session`` ends a run whose end is the proxy's own shutdown
(``mitmdump -s``): the recording gets its terminal event, the replay its report.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Protocol, Required, TypedDict

import orjson

from blackbox_mitm.cassette import compression
from blackbox_mitm.cassette.exchanges import exchanges_ref_of, load_exchanges
from blackbox_mitm.cassette.journal import Journal
from blackbox_mitm.cassette.media import load_media, spool_path
from blackbox_mitm.cassette.store import write_atomic
from blackbox_mitm.cassette.trace import Trace, new_trace_id
from blackbox_mitm.codecs import id_prefixes
from blackbox_mitm.codecs.verified import load_verified
from blackbox_mitm.errors import CassetteError
from blackbox_mitm.matcher import RecordedCalls, verdict
from blackbox_mitm.matcher.masks import NO_RULES, CompareRules
from blackbox_mitm.matcher.report import ReplayStatus
from blackbox_mitm.session.engine import Session
from blackbox_mitm.session.env_report import explainer
from blackbox_mitm.session.environment import EnvSubstitution, RunEnvironment, replay_substitution
from blackbox_mitm.session.exchanges import DEFAULT_EXCHANGE_MAX_BYTES, DEFAULT_RUN_MAX_BYTES, ExchangeBook, ExchangeServer
from blackbox_mitm.session.media import MediaBook
from blackbox_mitm.session.plan import REFUSE, UPSTREAM, RunPlan
from blackbox_mitm.session.recorder import Privacy, RunRecorder, scrub
from blackbox_mitm.session.redact import Redactor
from blackbox_mitm.session.release import DEFAULT_GAP_MS

__all__ = [
    "ReplayReport",
    "ReplaySettings",
    "finish_proxy_session",
    "record_session",
    "replay_report",
    "replay_session",
    "replay_session_from",
    "run_id_for",
]

log = logging.getLogger(__name__)


def run_id_for(stem: str) -> str:
    """A new run id from a cassette's name; never one that starts like a provider id (``resp_x.json``)."""
    run_id = new_trace_id(stem)
    return f"run-{run_id}" if run_id.startswith(id_prefixes()) else run_id


def record_session(
    cassette: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    fsync: bool = True,
    run_id: str | None = None,
    compact: bool = False,
    redactor: Redactor | None = None,
    exchanges: str = "all",
    exchange_max_bytes: int = DEFAULT_EXCHANGE_MAX_BYTES,
    exchanges_max_bytes: int = DEFAULT_RUN_MAX_BYTES,
    environment: RunEnvironment | None = None,
) -> Session:
    """A recording; ``redactor``: rules applied to every payload before it is hashed or written.

    ``exchanges``: which other HTTP exchanges are kept (``all``, ``model-hosts``, ``none``), within the caps.

    ``environment``: the wrapped command's, whose values become placeholders (None: no substitution).
    """
    path = Path(cassette)
    trace = Trace.new(run_id or run_id_for(compression.plain_name(path).stem))  # run.json.zst: run-…
    env = EnvSubstitution.for_record(environment) if environment is not None else None
    privacy = Privacy(redactor=redactor, env=env)
    if env is not None:
        trace.environment = privacy.redactor.payload(env.metadata())  # in the header: a recovered journal keeps it
    journal = Journal(path, trace, overwrite=overwrite, fsync=fsync, compact=compact)  # refuses an existing cassette
    recorder = RunRecorder(trace, journal, privacy=privacy)
    # images, documents, audio: once each, beside the cassette (spooled, so a killed recording keeps them)
    recorder.media = MediaBook(spool=spool_path(path), fsync=fsync)
    if exchanges != "none":
        recorder.exchanges = ExchangeBook(
            policy=exchanges,
            exchange_max_bytes=exchange_max_bytes,
            run_max_bytes=exchanges_max_bytes,
            redactor=privacy.redactor,
            secrets=set(privacy.secrets),
        )
    return Session(RunPlan(tail=UPSTREAM), run_id=trace.id, recorder=recorder)


def replay_session(
    cassette: str | os.PathLike[str],
    *,
    match: str = "strict",
    rules: CompareRules = NO_RULES,
    redactor: Redactor | None = None,
    pace: float | None = None,
    order_gap_ms: float | None = DEFAULT_GAP_MS,
    environment: RunEnvironment | None = None,
) -> Session:
    """A replay: ``rules`` masks what is compared, ``redactor`` redacts live requests as the recording was, ``pace`` keeps time,
    ``order_gap_ms`` separates the ends of overlapping answers released in the recorded order (None: off; session/release.py).

    ``environment``: the live one, put in place of the recorded placeholders (None: no substitution).
    """
    trace = load_verified(cassette)
    env = replay_substitution(environment, trace)
    replay = RecordedCalls(trace, rules=rules, explain=explainer(trace, env))
    plan = RunPlan(prefix=replay, tail=REFUSE, match=match, pace=pace, order_gap_ms=order_gap_ms)
    session = Session(plan, run_id=trace.id, privacy=Privacy(redactor=redactor, env=env))
    ref = exchanges_ref_of(trace)
    if ref is not None:  # load_verified checked the file against the terminal event's seal
        session.exchange_server = ExchangeServer(load_exchanges(cassette, ref), rules=rules, redactor=redactor)
    media = load_media(cassette, trace)  # checked by load_verified too
    session.media_store = media["media"] if media is not None else None
    return session


class _Setting(Protocol):
    @property
    def value(self) -> Any: ...


class ReplaySettings(Protocol):
    """What a replay is built from: ``config.Effective`` (the project config and a command's flags) is one."""

    @property
    def match(self) -> _Setting: ...
    @property
    def pace(self) -> _Setting: ...
    @property
    def order_gap(self) -> _Setting: ...
    @property
    def rules(self) -> CompareRules: ...
    @property
    def redactor(self) -> Redactor: ...


def replay_session_from(cassette: str | os.PathLike[str], settings: ReplaySettings, environment: RunEnvironment | None) -> Session:
    """``replay_session`` with its match mode, masks, redaction, pace and order gap read from ``settings``.

    ``environment`` is the live one (``settings.environment``, or one the caller changed, such as a recorded clock).
    """
    return replay_session(
        cassette,
        match=str(settings.match.value),
        rules=settings.rules,
        redactor=settings.redactor,
        pace=settings.pace.value,
        order_gap_ms=settings.order_gap.value,
        environment=environment,
    )


class _ExchangesReport(TypedDict, total=False):
    """``ExchangeStatus``'s counts, when the run kept exchanges, and whether they were matched strictly."""

    exchanges: int
    exchanges_served: int
    exchanges_reused: int
    exchanges_other_body: int
    unmatched_exchanges: list[dict[str, str]]
    background_unmatched: list[dict[str, str]]
    exchanges_strict: bool  # strict matching: an unmatched exchange makes the verdict ``unmatched``


class _ExitReport(TypedDict, total=False):
    exit_code: int | None  # the wrapped command's (proxy.lifecycle), when the run ended with it


class ReplayReport(ReplayStatus, _ExchangesReport, _ExitReport, total=False):
    """The end-of-replay report: the matcher's status, what the session refused or could not record, the exchanges."""

    refused: Required[list[str]]
    unrecorded: Required[list[str]]


def replay_report(session: Session) -> ReplayReport:
    """The end-of-replay status as data: served, exhausted, incomplete, first divergence."""
    assert session.replay is not None
    exchanges: _ExchangesReport = {}
    if session.exchange_server is not None:
        exchanges = {**session.exchange_server.status(), "exchanges_strict": session.match_mode == "strict"}
    ended: _ExitReport = {}  # the wrapped command's exit is the caller's to add
    status: ReplayReport = {
        **session.replay.status(),
        "run": session.run_id,
        "refused": list(session.refused),
        "unrecorded": [*session.failed_writes, *session.unrecorded],
        **exchanges,
        **ended,
    }
    status["verdict"] = verdict(status)
    scrubbed: ReplayReport = scrub(status, session.secrets)  # a report never quotes a credential
    return scrubbed.copy()


def finish_proxy_session(session: Session, *, report: str | None = None) -> None:
    if session.recorder is not None:
        out = session.recorder.finish(session.cassette_path, exit_code=None, in_flight=session.in_flight, proxy_only=True)
        log.warning(
            "blackbox: recorded %d steps (%d model calls) to %s", len(session.recorder.trace.steps), session.recorder.model_calls, out
        )
        for line in session.recorder.media.lines() if session.recorder.media is not None else []:
            log.warning("blackbox: media not kept: %s", line)
    elif session.replay is not None:
        status = replay_report(session)
        if report:
            try:
                write_atomic(Path(report), orjson.dumps(status, option=orjson.OPT_INDENT_2) + b"\n", overwrite=True)
            except (OSError, CassetteError) as exc:
                log.error("blackbox: could not write the replay report %s: %s", report, exc)
        from blackbox_mitm.matcher import render_report

        log.warning("%s", render_report(status))
