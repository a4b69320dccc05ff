"""Run a command through the proxy: build the proxy for a session, hand the command the environment, wait.

The run's end is the command's exit (``proxy.lifecycle`` then ends the session
with the exit code). The command never outlives Blackbox: on Linux it gets a
parent-death signal, so a ``kill -9`` of ``blackbox record`` ends the agent too
instead of leaving it orphaned and failing at its next call.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from blackbox_mitm.proxy.addon import BlackboxAddon
from blackbox_mitm.proxy.environment import LOOPBACK, client_env
from blackbox_mitm.proxy.runner import ProxyRunner
from blackbox_mitm.session.engine import Session

__all__ = ["proxy_for", "run_command"]


def proxy_for(
    session: Session,
    *,
    hosts: Sequence[str] = (),
    confdir: str | Path | None = None,
    map_remote: Sequence[str] = (),
    offline: bool = True,
    listen_host: str = "127.0.0.1",
    listen_port: int = 0,
    stream_delay_ms: int = 0,
) -> ProxyRunner:
    addon = BlackboxAddon(session, on_done=lambda: None)
    replaying = addon.replaying
    all_hosts = addon.use_hosts(hosts)  # HOST or HOST=CODEC
    addon.offline = offline
    return ProxyRunner(
        addon,
        listen_host=listen_host,
        listen_port=listen_port,
        confdir=confdir,
        map_remote=map_remote,
        # An offline replay intercepts everything to serve or refuse it; a recording that keeps every exchange
        # intercepts everything to keep it; otherwise only provider hosts are intercepted.
        intercept_only=None if (replaying and offline) or _keeps_all(session) else all_hosts,
        offline=replaying and offline,
        extra_options={"blackbox_stream_delay_ms": stream_delay_ms} if stream_delay_ms else None,
    )


def _keeps_all(session: Session) -> bool:
    book = session.recorder.exchanges if session.recorder is not None else None
    return book is not None and book.policy == "all"


def run_command(
    argv: Sequence[str],
    runner: ProxyRunner,
    *,
    confdir: str | Path | None = None,
    replaying: bool = False,
    extra_env: dict[str, str] | None = None,
) -> int:
    """Run ``argv`` with the proxy environment; return its exit status (128+N for signal N)."""
    # A loopback host the user named (--host localhost) is recorded, so it leaves NO_PROXY.
    loopback = [h for h in runner.addon.hosts if h in LOOPBACK]
    env = client_env(runner.url, confdir=confdir, replaying=replaying, proxied_loopback=loopback)
    env.update(extra_env or {})
    try:
        proc = subprocess.Popen(list(argv), env=env, preexec_fn=_die_with_parent())
    except FileNotFoundError:
        return 127
    except OSError:  # permission denied, not an executable
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


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that asks Linux to SIGKILL the child when this process dies (``None`` elsewhere).

    Everything is looked up before the fork: the child only makes the one call. A
    parent that died between the fork and the call is caught by its pid changing.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(128 + signal.SIGKILL)

    return preexec
