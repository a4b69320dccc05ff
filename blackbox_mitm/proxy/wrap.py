"""Run a command through the proxy: start it in-process, hand the command the environment, wait.

The run's end is the command's exit. The caller (record, replay, fork, test)
then ends the session with the exit code.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

from blackbox_mitm.proxy.addon import DEFAULT_HOSTS, BlackboxAddon
from blackbox_mitm.proxy.environment import client_env
from blackbox_mitm.proxy.runner import ProxyRunner
from blackbox_mitm.session.engine import Session

__all__ = ["proxy_for", "run_command"]


def proxy_for(
    session: Session,
    *,
    replaying: bool,
    hosts: Sequence[str] = (),
    confdir: str | Path | None = None,
    map_remote: Sequence[str] = (),
    offline: bool = True,
    listen_host: str = "127.0.0.1",
    listen_port: int = 0,
    stream_delay_ms: int = 0,
) -> ProxyRunner:
    addon = BlackboxAddon(session, replaying=replaying, on_done=lambda: None)
    all_hosts = list(dict.fromkeys([*DEFAULT_HOSTS, *hosts]))
    addon.hosts = set(all_hosts)
    addon.offline = offline
    return ProxyRunner(
        addon,
        listen_host=listen_host,
        listen_port=listen_port,
        confdir=confdir,
        map_remote=map_remote,
        # Recording intercepts only provider hosts; an offline replay intercepts everything to refuse it.
        intercept_only=None if (replaying and offline) else all_hosts,
        offline=replaying and offline,
        extra_options={"blackbox_stream_delay_ms": stream_delay_ms} if stream_delay_ms else None,
    )


def run_command(
    argv: Sequence[str],
    runner: ProxyRunner,
    *,
    confdir: str | Path | None = None,
    replaying: bool = False,
    extra_env: dict[str, str] | None = None,
) -> int:
    """Run ``argv`` with the proxy environment; return its exit status (128+N for signal N)."""
    env = client_env(runner.url, confdir=confdir, replaying=replaying)
    env.update(extra_env or {})
    try:
        proc = subprocess.Popen(list(argv), env=env)
    except FileNotFoundError:
        return 127
    except PermissionError:
        return 126
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: proc.send_signal(signal.SIGTERM))
    try:
        while True:
            try:
                code = proc.wait()
                break
            except KeyboardInterrupt:
                # The terminal sent SIGINT to the command too: let it finish its own way.
                continue
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 128 - code if code < 0 else code
