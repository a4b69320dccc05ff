"""A real headless Chromium (Debian's package) driven by Playwright, for the page tests and the benchmark.

``Browser`` launches the system chromium — never a downloaded one — with a
fresh profile and the flags that keep it from reaching any network service on
its own, and ``open`` loads a page, recording every request, console message
and page error, so that tests can assert the page loaded nothing and logged
no error.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
MISSING = (
    "Debian's chromium is missing ({where}): the browser tests of `blackbox view` need it. "
    "Install it with scripts/setup-browser (apt-get update && apt-get install -y chromium), "
    "or set BLACKBOX_CHROMIUM to a Chromium executable"
)


def chromium_path() -> str | None:
    """The Chromium executable: $BLACKBOX_CHROMIUM, else Debian's (the binary itself, not the /usr/bin wrapper script)."""
    named = os.environ.get("BLACKBOX_CHROMIUM")
    for candidate in (named,) if named else CANDIDATES:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


@dataclass
class Loaded:
    """A page opened in the browser, with what it did while loading and since."""

    page: Any
    requests: list[str] = field(default_factory=list)
    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def console_errors(self) -> list[str]:
        return [text for kind, text in self.console if kind in ("error", "warning")] + self.errors

    def foreign_requests(self) -> list[str]:
        return [url for url in self.requests if not (url.startswith("file://") or url.startswith("data:"))]

    def dialog(self, d: Any) -> None:
        """A dialog (``alert()``...) is something a script ran: recorded as an error, and closed."""
        self.errors.append(f"a dialog opened: {d.message}")
        d.dismiss()

    def assert_clean(self) -> None:
        """The page logged no error or warning, raised nothing, and requested nothing but itself."""
        assert self.console_errors() == []
        assert self.foreign_requests() == []
        assert self.requests and all(url.startswith(("file://", "data:")) for url in self.requests)


class Browser:
    """One headless Chromium with a fresh --user-data-dir; ``open`` a page file in it."""

    def __init__(self) -> None:
        path = chromium_path()
        if path is None:
            raise RuntimeError(MISSING.format(where=os.environ.get("BLACKBOX_CHROMIUM") or " or ".join(CANDIDATES)))
        try:
            from playwright.sync_api import sync_playwright
        except ImportError as exc:  # pragma: no cover - scripts/setup installs it
            raise RuntimeError("the playwright package is missing: run scripts/setup (it installs the test extra)") from exc
        self._profile = tempfile.TemporaryDirectory(prefix="blackbox-chromium-")
        self._pw = sync_playwright().start()
        self.context = self._pw.chromium.launch_persistent_context(
            self._profile.name,
            executable_path=path,
            headless=True,
            args=FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        self.version = self.context.browser.version if self.context.browser else "?"

    def open(self, page_file: Path, *, timeout_ms: float = 30_000) -> Loaded:
        page = self.context.new_page()
        loaded = Loaded(page)
        page.on("request", lambda r: loaded.requests.append(r.url))
        page.on("console", lambda m: loaded.console.append((m.type, m.text)))
        page.on("pageerror", lambda e: loaded.errors.append(str(e)))
        page.on("dialog", lambda d: loaded.dialog(d))
        page.goto(page_file.resolve().as_uri())
        page.wait_for_selector("body[data-ready]", timeout=timeout_ms)
        return loaded

    def close(self) -> None:
        self.context.close()
        self._pw.stop()
        self._profile.cleanup()
