"""The addon's mitmproxy options: declared, validated, and turned into a run (``mitmdump -s addon/blackbox_addon.py``).

Everything here reads mitmproxy's option manager (``ctx.options``) and nothing
else: ``declare`` adds the ``blackbox_*`` options in the addon's ``load`` hook;
``check`` and ``hosts_option`` reject a bad value with an ``OptionsError`` that
says what is wrong; ``session_from_options`` builds the record or replay session
the options describe, with the project config (``config.py``) joined in. The
addon (``proxy/addon.py``) decides when each is called.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from mitmproxy import exceptions
from mitmproxy.options import Options

from blackbox_mitm.errors import BlackboxError
from blackbox_mitm.proxy.hosts import DEFAULT_HOSTS, HostTable, host_table
from blackbox_mitm.session.engine import Session

__all__ = ["MATCH_MODES", "MODES", "SESSION_OPTIONS", "check", "declare", "hosts_option", "session_from_options"]

log = logging.getLogger(__name__)

MODES = ("record", "replay")
MATCH_MODES = ("strict", "sequence")
# The options a session is built from: a change to any of them rebuilds the addon's own session.
SESSION_OPTIONS = frozenset(
    {
        "blackbox_mode",
        "blackbox_cassette",
        "blackbox_match",
        "blackbox_overwrite",
        "blackbox_mask",
        "blackbox_default_masks",
        "blackbox_no_mask",
        "blackbox_redact",
        "blackbox_pace",
        "blackbox_order_gap",
        "blackbox_exchanges",
    }
)


def declare(loader: Any) -> None:
    """The ``blackbox_*`` options, each with its type, default and help (mitmproxy's ``load`` hook)."""
    loader.add_option("blackbox_mode", str, "", "Blackbox mode: record | replay (empty: the addon is inactive).", choices=("", *MODES))
    loader.add_option("blackbox_cassette", str, "", "The cassette file (trace format v2) to write or replay.")
    loader.add_option("blackbox_overwrite", bool, False, "Record over an existing cassette.")
    loader.add_option(
        "blackbox_hosts",
        Sequence[str],
        list(DEFAULT_HOSTS),
        "Provider hosts whose model calls are recorded/replayed (HOST or HOST=CODEC).",
    )
    loader.add_option("blackbox_match", str, "strict", "Replay matching: strict | sequence.", choices=MATCH_MODES)
    loader.add_option("blackbox_offline", bool, True, "Replay: answer every other host locally with an error; nothing leaves the machine.")
    loader.add_option("blackbox_report", str, "", "Replay: write the end-of-run status as JSON to this file.")
    loader.add_option("blackbox_stream_delay_ms", int, 0, "Replay: pause between streamed events (0: as fast as possible).")
    loader.add_option("blackbox_mask", Sequence[str], [], "Replay: a regular expression strict matching ignores (repeatable).")
    loader.add_option("blackbox_default_masks", bool, True, "Replay: use the built-in masks for known agents (blackbox masks).")
    loader.add_option("blackbox_no_mask", Sequence[str], [], "Replay: leave out the mask of this name (repeatable; blackbox masks).")
    loader.add_option("blackbox_redact", Sequence[str], [], "A regular expression replaced in every payload before hashing (repeatable).")
    loader.add_option(
        "blackbox_exchanges", str, "", "Record: other HTTP exchanges kept: all | model-hosts | none (empty: the config's, else all)."
    )
    loader.add_option(
        "blackbox_pace", str, "", "Replay: 'recorded' (each answer takes as long as its call did), a factor, or '' (at once)."
    )
    loader.add_option(
        "blackbox_order_gap",
        str,
        "",
        "Replay: ms between the ends of answers to calls that overlapped when recorded (released in recorded order); 'off'; '' (25).",
    )


def check(opts: Options, updated: set[str]) -> None:
    """Refuse a mode, match mode or stream delay mitmproxy's own type check lets through."""
    if "blackbox_mode" in updated and opts.blackbox_mode not in ("", *MODES):
        raise exceptions.OptionsError(f"blackbox_mode must be one of {', '.join(MODES)}, not {opts.blackbox_mode!r}")
    if "blackbox_match" in updated and opts.blackbox_match not in MATCH_MODES:
        raise exceptions.OptionsError(f"blackbox_match must be strict or sequence, not {opts.blackbox_match!r}")
    if "blackbox_stream_delay_ms" in updated and opts.blackbox_stream_delay_ms < 0:
        raise exceptions.OptionsError("blackbox_stream_delay_ms must be 0 or more")


def hosts_option(opts: Options) -> HostTable:
    """``blackbox_hosts`` as a host table; it must name at least one host (its default lists the providers')."""
    try:
        table = host_table(opts.blackbox_hosts, base=())
    except BlackboxError as exc:
        raise exceptions.OptionsError(f"blackbox_hosts: {exc}") from exc
    if not table.hosts:
        raise exceptions.OptionsError("blackbox_hosts must name at least one provider host")
    return table


def session_from_options(opts: Options, hosts: Sequence[str], use: Callable[[HostTable], None]) -> Session | None:
    """The session the options describe (None: ``blackbox_mode`` is empty).

    ``hosts`` is ``blackbox_hosts`` as given; the project config's hosts join it (its own codecs win) and the
    table is handed to ``use`` once the config is read, before the session is built.
    """
    if not opts.blackbox_mode:
        return None
    if not opts.blackbox_cassette:
        raise exceptions.OptionsError("blackbox_cassette must name the cassette file (set blackbox_cassette=RUN.json)")
    try:
        session = _build(opts, hosts, use)
    except BlackboxError as exc:
        raise exceptions.OptionsError(str(exc)) from exc
    log.info("blackbox: %s %s", opts.blackbox_mode, opts.blackbox_cassette)
    return session


def _build(opts: Options, hosts: Sequence[str], use: Callable[[HostTable], None]) -> Session:
    from blackbox_mitm.config import effective_settings
    from blackbox_mitm.session.build import record_session, replay_session_from

    # The project config (found from the working directory) plus these options (config.py).
    settings = effective_settings(
        masks=list(opts.blackbox_mask),
        no_default_masks=not opts.blackbox_default_masks,
        no_mask=list(opts.blackbox_no_mask),
        redact=list(opts.blackbox_redact),
        match=None if opts.blackbox_match == "strict" else opts.blackbox_match,
        pace=opts.blackbox_pace or None,
        order_gap=opts.blackbox_order_gap or None,
        exchanges=opts.blackbox_exchanges or None,
    )
    # The config's hosts join blackbox_hosts', whose own codecs win (the later spec's codec wins).
    use(host_table([*settings.host_specs, *hosts], base=()))
    if opts.blackbox_mode == "record":
        session = record_session(
            opts.blackbox_cassette,
            overwrite=opts.blackbox_overwrite,
            redactor=settings.redactor,
            environment=settings.environment,
            **{k: v.value for k, v in settings.exchange_settings().items()},
        )
        return session
    # mitmdump's own environment stands for the agent's (docs/cassette.md)
    session = replay_session_from(opts.blackbox_cassette, settings, settings.environment)
    if "upstream_cert" in opts and opts.upstream_cert:
        opts.update(upstream_cert=False)
    return session
