"""The golden suite: a folder of verified cassettes, and the run facts a test needs from each.

A golden is ``<folder>/<name>.json``. ``add_golden`` copies a cassette in only
after it verifies, byte for byte (its hash chain is the recording's own);
``collect`` lists a folder's goldens sorted by name so that reports read the
same every time; ``load_case`` reads and verifies one golden without changing
anything on disk, so a broken golden becomes an error testcase and its
command never runs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blackbox_mitm.cassette import compression
from blackbox_mitm.cassette.journal import journal_path
from blackbox_mitm.cassette.payloads import is_terminal
from blackbox_mitm.cassette.store import write_atomic
from blackbox_mitm.cassette.trace import Trace
from blackbox_mitm.codecs.verified import load_verified
from blackbox_mitm.errors import CassetteError, CassetteExistsError, GoldenError, NoSuiteError
from blackbox_mitm.matcher.recorded import recorded_calls_of

__all__ = [
    "DEFAULT_GOLDENS",
    "GoldenCase",
    "GoldenError",
    "GoldenInfo",
    "NoSuiteError",
    "add_golden",
    "collect",
    "golden_info",
    "list_goldens",
    "load_case",
    "remove_golden",
    "resolve_runs",
    "run_input",
]

DEFAULT_GOLDENS = Path("tests") / "goldens"
SUFFIX = ".json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


@dataclass(frozen=True, slots=True)
class GoldenCase:
    """One golden to test: its file, and the run facts read from it (``error`` when it cannot be trusted)."""

    path: Path
    name: str
    run: str | None = None
    input: str = ""
    model_calls: int = 0
    error: str | None = None

    @property
    def testcase_name(self) -> str:
        """The JUnit testcase name: the run id, or the file's name for a golden that cannot be read."""
        return self.run if self.run is not None else self.name


@dataclass(frozen=True, slots=True)
class GoldenInfo:
    """A row of ``blackbox golden list``."""

    name: str
    path: Path
    run: str | None
    steps: int
    model_calls: int
    input: str
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": str(self.path),
            "run": self.run,
            "steps": self.steps,
            "model_calls": self.model_calls,
            "input": self.input,
            "error": self.error,
        }


def run_input(trace: Trace) -> str:
    """The text of the last user message of the run's first model call ("" when there is none).

    A string content is taken as is; a list of parts gives its text parts joined
    with "" (the codecs join adjacent text the same way).
    """
    first = next((s for s in trace.steps if s.type == "model_input"), None)
    messages = first.payload.get("messages") if first is not None and isinstance(first.payload, dict) else None
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "".join(
                    p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                )
            return ""
    return ""


def load_verified_readonly(path: Path) -> Trace:
    """Load and verify a golden without touching the disk.

    A recording journal beside a golden is refused rather than recovered: a test
    run must never rewrite the suite it is judging.
    """
    if journal_path(path).exists():
        raise CassetteError(
            f"a recording journal ({journal_path(path).name}) sits beside this golden; run `blackbox recover {path}` or delete the journal",
            path=str(path),
        )
    return load_verified(path, recover=False)


def load_case(path: Path) -> GoldenCase:
    """A golden ready to test, or one carrying the reason it cannot be (never raises ``CassetteError``)."""
    name = _name_of(path)
    try:
        trace = load_verified_readonly(path)
    except CassetteError as exc:
        return GoldenCase(path=path, name=name, error=str(exc))
    return GoldenCase(path=path, name=name, run=trace.id, input=run_input(trace), model_calls=len(recorded_calls_of(trace, digests=False)))


def golden_paths(folder: Path) -> list[Path]:
    """The goldens in ``folder`` sorted by name; ``GoldenError`` when the folder does not exist."""
    if not folder.exists():
        raise NoSuiteError(
            f"there is no goldens folder at {folder}; add a golden with `blackbox golden add RUN.json --goldens {folder}`, "
            "or point --goldens at the folder that holds them"
        )
    if not folder.is_dir():
        raise NoSuiteError(f"{folder} is not a folder; --goldens names the folder that holds the golden cassettes")
    found = [p for p in folder.iterdir() if _is_golden(p.name) and not p.name.startswith(".") and p.is_file()]
    return sorted(found, key=lambda p: p.name)


def collect(folder: Path) -> list[GoldenCase]:
    """Every golden in ``folder``, sorted by name, each read and verified."""
    return [load_case(p) for p in golden_paths(folder)]


def resolve_runs(runs: Sequence[str], folder: Path) -> list[GoldenCase]:
    """``--run`` values: a cassette file, or the name of a golden in ``folder``. Order kept, repeats dropped."""
    paths: list[Path] = []
    for value in runs:
        path = Path(value)
        if not path.is_file():
            named = folder / (value if value.endswith(SUFFIX) else value + SUFFIX)
            if not named.is_file():
                raise GoldenError(f"--run {value}: no such cassette file, and no golden named {value!r} in {folder}")
            path = named
        if all(not path.samefile(p) for p in paths):
            paths.append(path)
    return [load_case(p) for p in paths]


def golden_info(path: Path) -> GoldenInfo:
    name = _name_of(path)
    try:
        trace = load_verified_readonly(path)
    except CassetteError as exc:
        return GoldenInfo(name=name, path=path, run=None, steps=0, model_calls=0, input="", error=str(exc))
    return GoldenInfo(
        name=name,
        path=path,
        run=trace.id,
        steps=len(trace.steps),
        model_calls=len(recorded_calls_of(trace, digests=False)),
        input=run_input(trace),
    )


def list_goldens(folder: Path) -> list[GoldenInfo]:
    return [golden_info(p) for p in golden_paths(folder)]


def add_golden(source: str | os.PathLike[str], folder: Path, *, name: str | None = None, overwrite: bool = False) -> GoldenInfo:
    """Copy a verified cassette into the suite as ``<folder>/<name>.json`` (name: the file's stem by default).

    Refused: a cassette that does not verify (``CassetteError``), an existing golden
    of that name without ``overwrite`` (``CassetteExistsError``), a run that ended
    in ``run_failed``, a bad name, or a run already golden under another name
    (``GoldenError``: two testcases with one name).
    """

    src = Path(source)
    trace = load_verified(src)
    failed = _failure_of(trace)
    if failed is not None:
        raise GoldenError(
            f"{src}: the recorded run failed ({failed}); a golden is the baseline of a run that worked, "
            "and a command must exit 0 to pass it — re-record the run"
        )
    name = check_name(name if name is not None else _name_of(src))
    dest = folder / (name + SUFFIX + compression.SUFFIX_OF[compression.kind_of(src)])  # a compressed golden stays so
    if dest.exists() and not overwrite:
        raise CassetteExistsError(
            f"a golden named {name!r} already exists; pass --overwrite to replace it, or choose another --name", path=str(dest)
        )
    if folder.is_dir():
        for other in golden_paths(folder):
            if other.name == dest.name:
                continue
            info = golden_info(other)
            if info.run == trace.id:
                raise GoldenError(
                    f"run {trace.id} is already golden as {info.name!r} ({other}); remove it first, or add it under that name"
                )
    try:
        data = src.read_bytes()
    except OSError as exc:
        raise CassetteError(f"cannot read the file ({exc.strerror})", path=str(src)) from exc
    _copy_exchanges(src, trace, folder, overwrite=overwrite)  # the file the terminal event seals goes with it
    write_atomic(dest, data, overwrite=overwrite)
    return golden_info(dest)


def _copy_exchanges(src: Path, trace: Trace, folder: Path, *, overwrite: bool) -> None:
    """The side files the terminal event seals: the other HTTP exchanges, the media (``cassette/media.py``)."""
    from blackbox_mitm.cassette.exchanges import exchanges_ref_of
    from blackbox_mitm.cassette.media import media_ref_of

    for what, ref in (("exchanges", exchanges_ref_of(trace)), ("media", media_ref_of(trace))):
        if ref is None:
            continue
        name = str(ref["file"])
        try:
            data = src.with_name(name).read_bytes()
        except OSError as exc:
            raise CassetteError(f"cannot read the run's {what} {name} ({exc.strerror})", path=str(src)) from exc
        dest = folder / name
        same = dest.is_file() and dest.read_bytes() == data
        write_atomic(dest, data, overwrite=overwrite or same)  # another run's file under that name: refused


def _failure_of(trace: Trace) -> str | None:
    """Why the run failed, from its terminal event; None when it completed (or has no terminal event)."""
    last = trace.steps[-1].payload if trace.steps else None
    if not is_terminal(last) or not isinstance(last, dict) or last.get("event") != "run_failed":
        return None
    reason = str(last.get("reason") or "run_failed")
    code = last.get("exitCode")
    return f"{reason}, exit code {code}" if code is not None else reason


def remove_golden(folder: Path, name: str) -> Path:
    """Delete the golden named ``name`` (or whose run id is ``name``); return its path."""
    from blackbox_mitm.golden.settings import settings_path

    target = find_golden(folder, name)
    target.unlink()
    settings_path(target).unlink(missing_ok=True)  # the replay settings `golden add` kept beside it
    return target


def find_golden(folder: Path, name: str) -> Path:
    stem = name[: -len(SUFFIX)] if name.endswith(SUFFIX) else name
    paths = golden_paths(folder)
    for path in paths:
        if _name_of(path) == stem:
            return path
    by_run = [p for p in paths if golden_info(p).run == name]
    if len(by_run) == 1:
        return by_run[0]
    known = ", ".join(_name_of(p) for p in paths) or "none"
    raise GoldenError(f"no golden named {name!r} in {folder} (goldens: {known}); `blackbox golden list` shows them")


def check_name(name: str) -> str:
    stem = name[: -len(SUFFIX)] if name.endswith(SUFFIX) else name
    if not _NAME.match(stem):
        raise GoldenError(f"{name!r} is not a golden name; use letters, digits, '.', '_' and '-' (starting with a letter or digit)")
    return stem


def _name_of(path: Path) -> str:
    name = compression.plain_name(path).name  # run.json.zst: the golden "run"
    return name[: -len(SUFFIX)] if name.endswith(SUFFIX) else name


def _is_golden(name: str) -> bool:
    """``NAME.json``, or compressed: ``NAME.json.gz`` / ``NAME.json.zst``."""
    from blackbox_mitm.cassette.exchanges import is_exchanges_file
    from blackbox_mitm.cassette.media import is_media_file

    return compression.plain_name(Path(name)).suffix == SUFFIX and not is_exchanges_file(name) and not is_media_file(name)
