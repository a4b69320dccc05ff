"""Output files checked before anything runs: ``-o``, ``--report``, ``--junit``, ``recover``'s cassette.

A run whose result cannot be written should not run at all, so each output is
checked when the command line is parsed: not an empty name, not a directory or
other non-file, not a dangling symbolic link, and its folder (or the nearest one
that exists, when folders are to be created) reachable and writable.
Whether the file may be replaced (``--overwrite``) is the library's to decide.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

import click

from blackbox_mitm.errors import OutputPathError

__all__ = ["OutputFile", "check_output_path"]


def check_output_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a ``Path`` if a file can be written there; ``OutputPathError`` saying why not."""
    text = os.fspath(path)
    if not text.strip():
        raise OutputPathError(text, "an empty file name", hint="name the file to write")
    out = Path(text)
    try:
        info = os.lstat(out)
    except (FileNotFoundError, NotADirectoryError):
        info = None  # a new file (or a folder on the way that is a file: said below)
    except OSError as exc:
        raise _unreachable(out, exc) from exc
    if info is not None:
        _check_existing(out, info)
    _check_folder(out)
    return out


def _check_existing(out: Path, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode):
        try:
            info = os.stat(out)
        except FileNotFoundError:
            target = os.readlink(out)
            raise OutputPathError(
                str(out),
                f"a symbolic link to {target}, which does not exist",
                hint="remove the link, or name the file it should point to",
            ) from None
        except OSError as exc:
            raise _unreachable(out, exc) from exc
    if stat.S_ISDIR(info.st_mode):
        raise OutputPathError(str(out), "a directory, not a file", hint="name a file inside it")
    if not stat.S_ISREG(info.st_mode):
        raise OutputPathError(str(out), "not a regular file (a device, FIFO or socket)", hint="name a regular file")


def _check_folder(out: Path) -> None:
    """The nearest existing folder of ``out`` must be a folder this process may create files in."""
    for folder in out.absolute().parents:
        try:
            info = os.stat(folder)
        except (FileNotFoundError, NotADirectoryError):
            continue  # created on writing, or a file further up: said when reached
        except OSError as exc:
            raise _unreachable(folder, exc, of=out) from exc
        if not stat.S_ISDIR(info.st_mode):
            raise OutputPathError(str(out), f"{folder} is not a folder", hint="choose a path whose folders are folders")
        if not os.access(folder, os.W_OK | os.X_OK, effective_ids=os.access in os.supports_effective_ids):
            raise OutputPathError(
                str(out), f"the folder {folder} is not writable", hint="choose a folder you can write to, or change its permissions"
            )
        return


def _unreachable(where: Path, exc: OSError, *, of: Path | None = None) -> OutputPathError:
    reason = "permission denied" if exc.errno in (errno.EACCES, errno.EPERM) else (exc.strerror or str(exc))
    subject = str(of if of is not None else where)
    detail = f"cannot reach {where}: {reason}" if of is not None else f"cannot be reached: {reason}"
    return OutputPathError(subject, detail, hint="choose a path you can write to")


class OutputFile(click.ParamType[Path]):
    """A click parameter type for a file to write, checked when the command line is parsed."""

    name = "file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        if isinstance(value, Path):
            value = str(value)
        try:
            return check_output_path(value)
        except OutputPathError as exc:
            message = f"{exc}" + (f"; {exc.hint}" if exc.hint else "")
            self.fail(message, param, ctx)
