r"""The pytest plugin (entry point ``blackbox``): recorded runs as regression tests.

    @pytest.mark.blackbox_tape("weather.json")            # strict
    @pytest.mark.blackbox_tape("weather.json", mode="sequence")
    @pytest.mark.blackbox_tape("weather.json", mask=[r"Now: \S+"], redact=[EMAIL], pace="recorded")
    def test_weather(blackbox_tape):
        run_agent(...)                                    # every model call answered from the tape
        subprocess.run([...], env=blackbox_tape.env())    # or a subprocess agent

For a marked test a replay proxy serves the tape (in-process, 127.0.0.1) and the
environment points at it from fixture set-up to teardown. A test that ran to an
end is then judged: ``TapeMismatch`` when the agent diverged, stopped early or
overran. A test that skipped itself, or is xfail and failed as expected, is
reported as it was. Unmarked tests are untouched.

Options: ``--blackbox-tapes DIR`` (where relative tape paths resolve),
``--blackbox-record`` (record missing tapes instead of failing; refused when
``CI`` is set unless given as ``--blackbox-record=ci``; ``=divergent`` also
re-records a tape the agent left, live from where it parted: the test body runs
a second time against the rewound tape, and the old tape is kept as
``.history/<name>.<run id>.json`` beside it; ``=all`` re-records every tape;
both refused with ``CI`` set), ``--blackbox-map-remote`` and ``--blackbox-confdir``.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

_TAPE = pytest.StashKey["Any"]()
_FAILED = pytest.StashKey[bool]()  # the test body raised: a tape being recorded ends in run_failed


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("blackbox", "blackbox tape tests")
    group.addoption(
        "--blackbox-tapes",
        metavar="DIR",
        default=None,
        help="directory that relative tape paths resolve against (default: the test file's folder)",
    )
    group.addoption(
        "--blackbox-record",
        nargs="?",
        const="missing",
        default=None,
        metavar="ci|divergent|all",
        help="record missing tapes against the real upstream instead of failing (with CI set, only as --blackbox-record=ci); "
        "divergent: also re-record a tape the agent left, live from where it parted; all: re-record every tape "
        "(both refused with CI set)",
    )
    group.addoption(
        "--blackbox-map-remote", action="append", default=[], metavar="SPEC", help="mitmproxy map_remote spec used while recording tapes"
    )
    group.addoption(
        "--blackbox-confdir",
        default=None,
        metavar="DIR",
        help="mitmproxy confdir holding the CA (default ~/.mitmproxy or $BLACKBOX_CONFDIR)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        'blackbox_tape(path, mode="strict", mask=[], redact=[], pace=None, default_masks=True, no_mask=[]): '
        "run the test against a replay of a recorded cassette",
    )
    record = config.getoption("--blackbox-record")
    if record not in (None, "missing", "ci", "divergent", "all"):
        raise pytest.UsageError(f"--blackbox-record takes no value, 'ci', 'divergent' or 'all'; not {record!r}")
    if record in ("all", "divergent") and os.environ.get("CI"):
        what = "every tape" if record == "all" else "the tapes an agent left"
        raise pytest.UsageError(f"CI is set: re-recording {what} in CI is refused; run --blackbox-record={record} on a developer machine")
    if record == "missing" and os.environ.get("CI"):
        raise pytest.UsageError(
            "CI is set: recording tapes in CI is refused, so a suite never records silently; pass --blackbox-record=ci to record anyway"
        )


def _tape_path(item: pytest.Item, name: str) -> Path:
    p = Path(name)
    if p.is_absolute():
        return p
    base = item.config.getoption("--blackbox-tapes")
    if base:
        return Path(base) / p
    return Path(str(item.path)).parent / p


def _start_tape(item: pytest.Item) -> Any:
    from blackbox_mitm.testing.tape import Tape

    marker = item.get_closest_marker("blackbox_tape")
    assert marker is not None
    if not marker.args:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.blackbox_tape needs the tape's path")
    path = _tape_path(item, str(marker.args[0]))
    mode = marker.kwargs.get("mode", "strict")
    record = item.config.getoption("--blackbox-record") is not None
    if not path.exists() and not record:
        pytest.fail(
            f"tape {path} does not exist; record it with `blackbox record -o {path} -- ...` or run pytest with --blackbox-record",
            pytrace=False,
        )
    unknown = sorted(set(marker.kwargs) - {"mode", "mask", "redact", "pace", "default_masks", "no_mask"})
    if unknown:
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.blackbox_tape has no {unknown[0]!r}; it takes mode, mask, redact, pace, default_masks, no_mask"
        )
    from blackbox_mitm.errors import BlackboxError

    try:
        tape = Tape(
            path,
            mode=mode,
            record=record,
            confdir=item.config.getoption("--blackbox-confdir"),
            map_remote=item.config.getoption("--blackbox-map-remote"),
            mask=marker.kwargs.get("mask", ()),
            redact=marker.kwargs.get("redact", ()),
            pace=marker.kwargs.get("pace"),
            default_masks=marker.kwargs.get("default_masks", True),
            no_mask=marker.kwargs.get("no_mask", ()),
            rerecord=item.config.getoption("--blackbox-record") == "all",
            update=item.config.getoption("--blackbox-record") == "divergent",
        )
    except (BlackboxError, ValueError) as exc:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.blackbox_tape: {exc}") from exc
    tape.start()
    tape.activate()
    return tape


@pytest.fixture(autouse=True)
def _blackbox_tape_lifecycle(request: pytest.FixtureRequest) -> Generator[None]:
    item = request.node
    if not isinstance(item, pytest.Item) or item.get_closest_marker("blackbox_tape") is None:
        yield
        return
    tape = _start_tape(item)
    item.stash[_TAPE] = tape
    try:
        yield
    finally:
        tape.stop(exit_code=1 if item.stash.get(_FAILED, False) else 0)


@pytest.fixture
def blackbox_tape(request: pytest.FixtureRequest, _blackbox_tape_lifecycle: None) -> Any:
    """The running ``Tape`` of a ``@pytest.mark.blackbox_tape`` test (``.env()`` for subprocess agents)."""
    tape = request.node.stash.get(_TAPE, None)
    if tape is None:
        raise pytest.UsageError("the blackbox_tape fixture needs @pytest.mark.blackbox_tape('path/to/tape.json') on the test")
    return tape


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    tape = item.stash.get(_TAPE, None)
    if tape is None:
        return (yield)
    from blackbox_mitm.matcher import render_report, verdict
    from blackbox_mitm.testing.tape import TapeMismatch

    try:
        result = yield
    except BaseException as exc:
        if isinstance(exc, pytest.skip.Exception) or item.get_closest_marker("xfail") is not None:
            item.stash[_FAILED] = True
            raise  # reported as it was: skipped, or xfail failing as expected
        status = tape.status()
        if not tape.recording and verdict(status) != "ok":
            if tape.update:
                return _rerun_rewound(item, tape, status)
            item.stash[_FAILED] = True
            raise TapeMismatch(render_report(status), status) from exc
        item.stash[_FAILED] = True
        raise
    status = tape.status()
    if tape.update and not tape.recording and verdict(status) != "ok":
        return _rerun_rewound(item, tape, status)
    tape.check()
    return result


def _rerun_rewound(item: pytest.Item, tape: Any, status: dict[str, Any]) -> None:
    """--blackbox-record=divergent: run the test body again against the tape rewound to where the agent parted."""
    tape.rewind(status)
    try:
        item.runtest()
    except BaseException:
        item.stash[_FAILED] = True  # a failed re-run leaves the tape as it was
        raise
    problem = tape.rewind_problem()
    if problem is not None:
        item.stash[_FAILED] = True
        raise AssertionError(f"tape {tape.cassette} was not re-recorded: {problem}")
