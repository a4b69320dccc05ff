"""Which cassette contents have verified before: so a replay of the same bytes does not re-hash every step.

``verify_trace`` is a pure function of three things: the cassette's bytes, the
providers' facts (``ProviderFacts``) and this package's cassette code. When all
three are the same as at an earlier check that found no problem, the answer is
the same, so ``load_verified`` (replay, fork, goldens) may skip it. An entry is
an empty-ish file named by the SHA-256 of

* the SHA-256 of the cassette's plain text as it was read this time (the loader
  hashes the pieces as it parses them: no second read),
* the facts, serialized, and
* the source of every module of ``blackbox_mitm.cassette``, the package's version and
  orjson's (an edited verifier never trusts an older one's answer).

So a changed byte, another Blackbox or other facts miss, and the file is verified
whole as before; nothing about what verify checks is weakened, and ``blackbox
verify`` never reads this cache (it always checks every step). Only a check that
found no problem is remembered.

Where: ``$BLACKBOX_CACHE_DIR``, else ``$XDG_CACHE_HOME/blackbox``, else
``~/.cache/blackbox``; ``BLACKBOX_NO_CACHE=1`` turns it off. Its ``verified/``
folder is made for this user alone (mode 0700), and one that another user owns or
may write (a shared folder) is never read: an entry vouches for a cassette. It is a
cache: a directory that cannot be made or written (read-only home, full disk) is
skipped without a word, and deleting it at any time is safe.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
from pathlib import Path

import orjson

from blackbox_mitm.cassette.facts import ProviderFacts

__all__ = ["cache_dir", "remember", "seen", "verified_key"]

_FORMAT = b"blackbox verified-cache 1\0"


def cache_dir() -> Path | None:
    """The cache's folder (not made here), or None when ``BLACKBOX_NO_CACHE`` turns it off."""
    if os.environ.get("BLACKBOX_NO_CACHE", "").strip() not in ("", "0"):
        return None
    explicit = os.environ.get("BLACKBOX_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "blackbox"


@functools.cache
def _verifier_id() -> bytes:
    """This Blackbox's cassette code: the version and the source of every module of the package's cassette layer."""
    from blackbox_mitm import __version__

    h = hashlib.sha256(orjson.dumps([__version__, orjson.__version__]))  # orjson writes the canonical JSON hashed
    folder = Path(__file__).parent
    for source in sorted(folder.glob("*.py")):
        h.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    return h.digest()


def _facts_id(facts: ProviderFacts) -> bytes:
    fields = [sorted(facts.id_prefixes), sorted(facts.response_keys), sorted(facts.neutral_params), sorted(facts.wire_params)]
    return hashlib.sha256(orjson.dumps(fields)).digest()


def verified_key(content_sha256: str, facts: ProviderFacts) -> str | None:
    """The entry's name for these contents under these facts and this verifier; None when the cache is off or unreadable."""
    try:
        verifier = _verifier_id()
    except OSError:  # the package's sources are not on disk (a zipped install): no cache
        return None
    return hashlib.sha256(_FORMAT + verifier + _facts_id(facts) + content_sha256.encode()).hexdigest()


def _entry(key: str) -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / "verified" / key[:2] / key


def _trusted(folder: Path) -> bool:
    """Whether only this user can have written ``folder``: an entry vouches for a cassette, so one anybody may write is ignored."""
    st = folder.stat()
    return st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def seen(key: str | None) -> bool:
    """Whether contents with this key verified with no problem before (in a folder only this user can write)."""
    entry = _entry(key) if key else None
    try:
        return entry is not None and entry.is_file() and _trusted(entry.parent.parent)
    except OSError:
        return False


def remember(key: str | None, steps: int) -> None:
    """Note that contents with this key verified with no problem (best effort: a write that fails is dropped)."""
    entry = _entry(key) if key else None
    if entry is None:
        return
    tmp = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
    try:
        entry.parent.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # verified/: this user's alone
        entry.parent.mkdir(exist_ok=True)
        tmp.write_bytes(orjson.dumps({"steps": steps}))
        os.replace(tmp, entry)  # whole or not at all: a reader never sees half an entry
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
