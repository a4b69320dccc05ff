"""One proxy for many runs: a ``RunRouter`` behind a real mitmproxy, started and stopped from synchronous code.

``blackbox proxy --cassette-dir DIR`` and ``blackbox test`` (its goldens all go
through one proxy) both live this::

    with serve_router(router, settings=ProxySettings(confdir=...)) as proxy:
        ... clients use http://<run>@127.0.0.1:{proxy.port} ...
    lines = finish_runs(router, report_dir=DIR)   # each run ended, reported, summed up in a line

The runs are the router's; the proxy only carries their flows (``BlackboxAddon``
with ``router=``). Nothing here ends a run behind the caller's back: the proxy
stops, then the caller ends the runs it wants.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from blackbox_mitm.cassette.store import write_atomic
from blackbox_mitm.errors import CassetteError
from blackbox_mitm.proxy.addon import BlackboxAddon
from blackbox_mitm.proxy.lifecycle import ProxySettings, wait_for_stop
from blackbox_mitm.proxy.runner import ProxyRunner
from blackbox_mitm.session.router import RunRouter, report_path

__all__ = ["finish_runs", "router_proxy", "run_line", "serve_router", "wait_for_stop"]


def router_proxy(router: RunRouter, *, settings: ProxySettings | None = None) -> ProxyRunner:
    """A proxy (not started) that serves every run of ``router``, each named in its client's proxy credentials."""
    settings = settings or ProxySettings()
    addon = BlackboxAddon(router=router, on_done=lambda: None)
    all_hosts = addon.use_hosts(settings.hosts)  # HOST or HOST=CODEC
    addon.offline = settings.offline
    offline = addon.replaying and settings.offline
    return ProxyRunner(
        addon,
        listen_host=settings.listen_host,
        listen_port=settings.listen_port,
        confdir=settings.confdir,
        map_remote=settings.map_remote,
        # As for one run: a recording intercepts only provider hosts; an offline replay intercepts all to refuse them.
        intercept_only=None if offline else all_hosts,
        offline=offline,
        extra_options={"blackbox_stream_delay_ms": settings.stream_delay_ms} if settings.stream_delay_ms else None,
    )


@contextmanager
def serve_router(router: RunRouter, *, settings: ProxySettings | None = None) -> Iterator[ProxyRunner]:
    """Start the proxy for ``router``, yield it, stop it (the runs stay open: end them with ``finish_runs``)."""
    runner = router_proxy(router, settings=settings).start()
    try:
        yield runner
    finally:
        runner.stop()


def finish_runs(router: RunRouter, *, report_dir: Path | None = None) -> list[str]:
    """End every run the clients named; a replay's report goes to ``report_dir/<run>.report.json`` (0600).

    Returns one line per run saying how it ended. A report that cannot be written
    is said in its run's line; the other runs' reports are written all the same.
    An earlier report of the same run is replaced; any other file by that name
    (one Blackbox did not write as this run's report) is left alone.
    """
    lines = []
    for run, report in router.finish_all().items():
        line = run_line(run, report)
        if report_dir is not None and "verdict" in report:
            path = report_path(report_dir, run)
            try:
                if path.exists() and not _is_report(path):
                    raise CassetteError("a file that is not this run's replay report is there; it is left as it is", path=str(path))
                write_atomic(path, orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n", overwrite=True)
                line += f"; report {path}"
            except (OSError, CassetteError) as exc:
                line += f"; the report {path} could not be written: {exc}"
        lines.append(line)
    return lines


def _is_report(path: Path) -> bool:
    """Whether ``path`` is a regular file holding a replay report (what ``finish_runs`` writes), not a cassette."""
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > 64 << 20:
            return False
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return False
    return isinstance(data, dict) and {"run", "verdict"} <= data.keys() and not {"steps", "version"} & data.keys()


def run_line(run: str, report: dict[str, Any]) -> str:
    """One line for one run's end: its verdict and calls, its recording, or why it was never served."""
    if "error" in report:
        return f"run {run}: not served — {report['error']}"
    if "verdict" not in report:
        problems = report.get("problems") or []
        extra = f", {len(problems)} refused or not recorded" if problems else ""
        return f"run {run}: recorded {report.get('cassette')} — {report.get('model_calls', 0)} model calls{extra}"
    served, total = report.get("model_calls_served", 0), report.get("model_calls", 0)
    return f"run {run}: {report['verdict']} — {served} of {total} recorded model calls served"
