"""Take the screenshot of a `blackbox view` page that docs/view.md shows, in headless Chromium (Debian's).

    .venv/bin/python docs/gen_view_screenshot.py PAGE.html docs/img/view.png [--open STEP ...] [--search TEXT] [--height PX]

Opens the page from file:// as the browser tests do (tests/view/view_browser.py),
opens the steps named, optionally types a search, and saves the top of the page.
It fails when the page logged an error or requested anything but itself.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "view"))

from view_browser import Browser  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("page", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--open", type=int, action="append", default=[], metavar="STEP", help="open this step (repeatable)")
    parser.add_argument("--search", default="", help="type this into the search box")
    parser.add_argument("--height", type=int, default=900, help="the height of the picture in pixels")
    args = parser.parse_args(argv)
    browser = Browser()
    try:
        loaded = browser.open(args.page)
        page = loaded.page
        page.set_viewport_size({"width": 1280, "height": args.height})
        for step in args.open:
            page.locator(f'#steps .step[data-index="{step}"] > .head').click()
        if args.search:
            page.fill("#search", args.search)
            page.wait_for_timeout(400)
        page.evaluate("() => window.scrollTo(0, 0)")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.out))
        problems = loaded.console_errors() + loaded.foreign_requests()
    finally:
        browser.close()
    if problems:
        print("the page was not clean: " + "; ".join(problems), file=sys.stderr)
        return 1
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
