"""``blackbox view``: write one self-contained HTML page of a run (``blackbox_mitm.view``).

Exit codes: 0 the page was written; 2 a file could not be read, or the output
would replace something that is not a page (``cli.base`` turns the library's
errors into those).
"""

from __future__ import annotations

from pathlib import Path

import click

from blackbox_mitm.cli.base import command
from blackbox_mitm.cli.paths import OutputFile

__all__ = ["view"]

_FILE = click.Path(dir_okay=False, path_type=Path)


@command()
@click.argument("run", type=_FILE)
@click.option("-o", "--output", type=OutputFile(), default=None, help="the page to write (default: RUN with .html)")
@click.option(
    "--diff", "other", type=_FILE, default=None, metavar="OTHER.json", help="show this run side by side, aligned, with where they part"
)
@click.option("--report", type=_FILE, default=None, metavar="REPORT.json", help="show a replay report's divergences at their steps")
@click.option("--no-forks", is_flag=True, help="do not look for forks beside RUN")
@click.option("--open", "open_it", is_flag=True, help="open the page in the default browser")
def view(run: Path, output: Path | None, other: Path | None, report: Path | None, no_forks: bool, open_it: bool) -> None:
    """Write one HTML page of a run: timeline, every step's content, forks, a diff, a replay's divergences.

    The page is one file with everything inline: it loads nothing and opens from file://.

    \b
    blackbox view runs/weather.json
    blackbox view runs/weather.json --diff runs/sunny.json -o weather-vs-sunny.html
    blackbox view runs/weather.json --report reports/report-div.json --open
    """
    from blackbox_mitm.view import open_page, write_page

    page = write_page(run, output, other=other, report=report, forks=not no_forks)
    click.echo(f"wrote {page} ({page.stat().st_size:,} bytes); open it in a browser: {page.resolve().as_uri()}")
    if open_it and not open_page(page):
        click.echo("no browser to open it with here; open the file yourself", err=True)
