"""``blackbox view``: one self-contained HTML page of a run, its forks, a diff and a replay's divergences.

Plain Python (no mitmproxy import). ``model`` turns runs into the page's data
(repeated prompts and tool definitions stored once), ``compare`` adds the diff,
the replay report and the fork tree, and ``page`` puts the data, the script and
the styles (``page.html``, ``page.js``, ``page.css``, package data) into one file.
"""

from blackbox_mitm.view.page import build_page, default_output, open_page, page_data, write_page

__all__ = ["build_page", "default_output", "open_page", "page_data", "write_page"]
