"""Where and when a command runs, as values: ``RunEnvironment``, captured from this process for the command it wraps.

The values (working directory, project root, ``HOME``, user, host, temporary
directory, local date and time zone) and their derived forms (``forms``: a
directory's slug, the home directory relative to the working one, the date in
the formats agents write it) are what ``session.environment`` replaces by
placeholders at record and restores at replay.
"""

from __future__ import annotations

import datetime as dt
import getpass
import os
import re
import socket
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RunEnvironment"]


@dataclass(frozen=True, slots=True)
class RunEnvironment:
    """Where and when a command runs: the values its agent may write into what it sends."""

    cwd: str
    root: str | None = None  # the project root, when it is not the working directory
    home: str | None = None
    user: str | None = None
    host: str | None = None
    tmp: str | None = None
    now: dt.datetime = field(default_factory=lambda: dt.datetime.now().astimezone())
    time_zone: str | None = None  # the IANA name (TZ, or /etc/localtime's link)

    @classmethod
    def capture(
        cls, *, cwd: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None, now: dt.datetime | None = None
    ) -> RunEnvironment:
        """This process's environment, which a wrapped command inherits: ``cwd``, ``HOME``, ``USER``, ``TZ``…"""
        env = os.environ if environ is None else environ
        here = os.path.abspath(os.fspath(cwd) if cwd is not None else os.getcwd())
        root = _project_root(here)
        return cls(
            cwd=here,
            root=root if root not in (None, here) else None,
            home=os.path.normpath(env["HOME"]) if env.get("HOME", "").startswith("/") else None,
            user=env.get("USER") or env.get("LOGNAME") or _login_name(),
            host=_host_name(),
            tmp=os.path.normpath(env.get("TMPDIR") or tempfile.gettempdir()),
            now=now or dt.datetime.now().astimezone(),
            time_zone=_zone_name(env),
        )

    def forms(self) -> dict[str, tuple[str, str]]:
        """Every form of every value: placeholder name -> (its text, the pattern kind that bounds it)."""
        out: dict[str, tuple[str, str]] = {}
        for name, path in (("cwd", self.cwd), ("root", self.root), ("home", self.home), ("tmp", self.tmp)):
            if path and all(path != text for text, _ in out.values()):  # one name per value: the first of cwd, root, home, tmp
                out[name] = (path, "path")
                if name in ("cwd", "root"):
                    out[f"{name}-slug"] = (re.sub(r"[^A-Za-z0-9]", "-", path), "slug")
        if self.home and "home" in out:
            rel = os.path.relpath(self.home, self.cwd)
            if rel.startswith("..") and set(rel.split("/")) != {".."}:
                out["home-from-cwd"] = (rel, "relative")
        for name, word in (("user", self.user), ("host", self.host)):
            if word:
                out[name] = (word, "word")
        day = self.now.date()
        out["date"] = (day.isoformat(), "date")
        out["date-js"] = (day.strftime("%a %b %d %Y"), "date")  # JavaScript's toDateString: Tue Dec 01 2026
        out["date-long"] = (f"{day.strftime('%A, %B')} {day.day}, {day.year}", "date")  # Tuesday, December 1, 2026
        out["date-medium"] = (f"{day.strftime('%B')} {day.day}, {day.year}", "date")  # December 1, 2026
        out["date-us"] = (f"{day.month}/{day.day}/{day.year}", "date")  # 12/1/2026
        if self.time_zone:
            out["tz"] = (self.time_zone, "tz")
        offset = self.now.strftime("%z")  # +1400
        if offset:
            out["tz-offset"] = (f"{offset[:3]}:{offset[3:]}", "offset")  # +14:00
            out["tz-gmt"] = (f"GMT{offset}", "offset")  # JavaScript's Date.toString: GMT+1400
        return out

    def to_json(self) -> dict[str, Any]:
        values = {"cwd": self.cwd, "root": self.root, "home": self.home, "user": self.user, "host": self.host, "tmp": self.tmp}
        out: dict[str, Any] = {k: v for k, v in values.items() if v is not None}
        out["startedAt"] = self.now.isoformat(timespec="seconds")
        if self.time_zone:
            out["timeZone"] = self.time_zone
        return out


def _project_root(start: str) -> str | None:
    """The nearest directory from ``start`` up holding a blackbox config or ``.git``."""
    here = Path(start)
    for d in (here, *here.parents):
        if (d / "blackbox.toml").is_file() or (d / ".git").exists():
            return str(d)
        pyproject = d / "pyproject.toml"
        try:
            if pyproject.is_file() and "[tool.blackbox]" in pyproject.read_text(encoding="utf-8", errors="replace"):
                return str(d)
        except OSError:
            continue
    return None


def _login_name() -> str | None:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return None


def _host_name() -> str | None:
    try:
        return socket.gethostname() or None
    except OSError:
        return None


def _zone_name(env: Mapping[str, str]) -> str | None:
    """The IANA name of the local time zone: ``TZ`` (``:Europe/Berlin`` too), else where /etc/localtime links."""
    tz = env.get("TZ", "").lstrip(":")
    if tz:
        return tz if re.fullmatch(r"[A-Za-z_]+(?:/[A-Za-z0-9_+\-]+)+", tz) else None
    try:
        link = os.readlink("/etc/localtime")
    except OSError:
        return None
    _, sep, name = link.partition("zoneinfo/")
    return name if sep and name else None
