"""Where super-bench keeps what it builds once and reuses: kernel environments, the default task packages,
the base environment of ``super-bench sandbox build``; and how anything is built once (``build_into``, which the
package store's unpacked wheels use too)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from super_bench._paths import cache_dir, file_lock

# The file that marks a build finished (folders built before keep theirs: the name does not change).
DONE_MARKER = ".complete"
# How long a builder waits for another's build of the same thing (a kernel environment takes a minute or two):
# past it the other is taken for stuck (stopped, or a lock that agent code took), and this one builds alone.
_BUILD_WAIT = 900.0


def readable_by_all(root: Path) -> None:
    """Give a tree the modes that let any user read it and only its owner change it."""
    for dirpath, _, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            path = os.path.join(dirpath, name)
            os.chmod(path, 0o755 if os.stat(path).st_mode & 0o100 else 0o644)


def build_once(kind: str, key: object, fill: Callable[[Path], None]) -> Path:
    """``<cache>/<kind>/<digest of key>``, made once by ``fill`` (see ``build_into``; its marker records the
    key). Made readable by every user (sandboxes run agent code as users of their own)."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return build_into(cache_dir() / kind / digest, fill, marker=json.dumps(key, default=str) + "\n")


def build_into(
    target: Path, fill: Callable[[Path], None], *, marker: str = "", finish: Callable[[Path], None] = readable_by_all
) -> Path:
    """``target``, unless it is built already: made by ``fill`` in a temporary directory beside it, marked
    finished (a marker file holding ``marker``), given its modes by ``finish``, and renamed into place, so
    that concurrent builders (threads, runs, Ray workers) never see half of one. One builds while the others
    wait for it (a lock file beside the target: the first run's workers and its manifest would otherwise each
    build the same kernel environment at once); where the lock cannot be taken, the first to finish wins."""
    if is_built(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _building(target):
        if is_built(target):  # built while this builder waited
            return target
        building = Path(tempfile.mkdtemp(prefix=f".{target.name[:16]}-", dir=target.parent))
        try:
            fill(building)
            (building / DONE_MARKER).write_text(marker)
            finish(building)
            try:
                os.rename(building, target)
            except OSError:  # another builder finished first (the target is a directory that is not empty)
                if not is_built(target):
                    raise
        finally:
            shutil.rmtree(building, ignore_errors=True)
    return target


@contextlib.contextmanager
def _building(target: Path) -> Iterator[None]:
    """Held while ``target`` is built, by a lock file beside it."""
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(file_lock(target.parent / f".{target.name}.lock", timeout=_BUILD_WAIT))
        except OSError:  # a lock file another user made, or a holder stuck: build alone, the first to finish winning
            pass
        yield


def is_built(path: Path) -> bool:
    """Whether ``path`` is a finished build of ``build_into`` (or ``build_once``)."""
    return (path / DONE_MARKER).is_file()


@dataclass(frozen=True)
class Lookup:
    """Which build the harness's installed distributions led to last time: finding it again otherwise parses
    the metadata of each distribution it copies (tens of milliseconds at every start)."""

    note: Path

    @property
    def built(self) -> Path | None:
        try:
            name = self.note.read_text().strip()
        except (OSError, ValueError):
            return None
        # Only a finished build beside the note itself (named by a digest), whatever the note says.
        built = self.note.parent / name
        return built if re.fullmatch(r"[0-9a-f]{16}", name) and is_built(built) else None

    def remember(self, built: Path) -> None:
        try:
            partial = self.note.with_name(f".{self.note.name}-{os.getpid()}")
            partial.write_text(built.name + "\n")
            os.replace(partial, self.note)
        except OSError:
            pass  # found the long way next time too


def remembered(kind: str, key: object) -> Lookup:
    """Where the build of ``kind`` made from the harness's installed distributions is remembered: keyed by
    ``key`` and the names of the distributions' metadata directories (their names and versions, read without
    parsing any metadata)."""
    names: list[str] = []
    for entry in sys.path:
        try:
            names += [n for n in os.listdir(entry or ".") if n.endswith((".dist-info", ".egg-info"))]
        except OSError:
            continue
    digest = hashlib.sha256(json.dumps([key, sorted(names)], default=str).encode()).hexdigest()[:16]
    return Lookup(cache_dir() / kind / f"found-{digest}")


__all__ = ["Lookup", "build_once", "cache_dir", "is_built", "readable_by_all", "remembered"]


__all__ = ["DONE_MARKER", "build_into", "build_once", "cache_dir", "is_built", "readable_by_all", "remembered"]
