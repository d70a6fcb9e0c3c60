"""A cell's output written to a file as it comes, once it is longer than the harness holds in memory.

``OutputBuffer`` holds a cell's output in memory up to ``SPILL_CHARS`` characters; past them, where the
environment gives it a place (the task's record), the output goes on in a file instead, a block of about a
megabyte at a time, and the step names that file (``spilled.OutputFile``). The harness then holds about two
blocks of it, whatever its size, shape or width: a 100 MB output as one Python string is held twice while it is
joined, and four times over if one character of it is an emoji.

The ceiling of a step's output holds in the file as in memory: past it, the first quarter of the ceiling and the
last characters are kept and the middle dropped, with the same marker, so the file holds the text the buffer
would have held. Blocks of the middle are let go as newer ones come; the file is compacted (what is kept copied
to a fresh file) once it holds more dropped bytes than kept ones, so it stays within about twice the ceiling.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from super_bench import messages
from super_bench.actions import valid_text
from super_bench.spilled import OUTPUTS

SPILL_CHARS = 1 << 22  # characters of a cell's output held in memory before the rest goes to a file
_BLOCK = 1 << 20
_COPY = 1 << 20  # bytes copied at a time when the file is compacted or written out
_COMPACT = 64 << 20  # bytes of dropped blocks a file may hold before it is compacted


@dataclass(frozen=True)
class Spilled:
    """A finished cell's output, in the file at ``path``: ``chars`` characters, ``dropped`` more left out."""

    path: Path
    chars: int
    dropped: int = 0

    def __len__(self) -> int:
        return self.chars


@dataclass
class _Block:
    offset: int
    size: int  # bytes
    chars: int


class SpillFile:
    """The file a cell's output is written to: append, then ``finish`` (or ``discard``)."""

    def __init__(self, path: Path, max_chars: int, max_bytes: int | None = None) -> None:
        self.path = path
        self._max_chars = max_chars
        self.max_bytes = max_bytes  # the task's disk limit: a character takes at most 4 bytes
        self.block, self.compact_at = _BLOCK, _COMPACT  # read here, so that a test can make them small
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        self._end = 0  # bytes written
        self._dead = 0  # bytes of dropped blocks still in the file
        self._head: list[_Block] = []  # once cut: the first blocks, kept
        self._head_chars = 0
        self._blocks: deque[_Block] = deque()  # the blocks after the head
        self._chars = 0  # characters in _blocks
        self._pending: list[str] = []
        self._pending_size = 0
        self._cut = False
        self._head_want = 0
        self.dropped = 0

    @property
    def max_chars(self) -> int:
        """The ceiling, in characters: the step's, and no more than the task's disk limit can hold."""
        return self._max_chars if self.max_bytes is None else min(self._max_chars, self.max_bytes // 4)

    @max_chars.setter
    def max_chars(self, chars: int) -> None:
        self._max_chars = chars

    def __len__(self) -> int:
        return self._head_chars + self._chars + self._pending_size + self.dropped

    def append(self, text: str) -> None:
        self._pending.append(text)
        self._pending_size += len(text)
        if self._pending_size >= self.block:
            self._write()

    def _write(self, *, final: bool = False) -> None:
        text = "".join(self._pending)
        self._pending, self._pending_size = [], 0
        if not final and text and "\ud800" <= text[-1] <= "\udbff":  # half of a pair: wait for the other half
            self._pending, self._pending_size, text = [text[-1]], 1, text[:-1]
        if not text:
            return
        text = valid_text(text)  # counted as written: a pair rejoined across pieces is one character
        data = text.encode("utf-8")
        _put(self._fd, data, self._end)
        self._blocks.append(_Block(self._end, len(data), len(text)))
        self._end += len(data)
        self._chars += len(text)
        self._limit()

    def _limit(self) -> None:
        """Past the ceiling (by half, while the output comes; at all, at its end), keep the head apart and let the
        middle go, block by block."""
        if not self._cut and self._head_chars + self._chars > self.max_chars * 1.5:
            self._split()
        if self._cut:
            room = max(0, self.max_chars - self._head_want)
            while self._blocks and self._chars - self._blocks[0].chars >= room:
                gone = self._blocks.popleft()
                self._chars -= gone.chars
                self.dropped += gone.chars
                self._dead += gone.size
            # With a disk limit, sooner: the file stays within twice the limit while the output comes.
            threshold = self.compact_at if self.max_bytes is None else min(self.compact_at, self.max_bytes // 2)
            if self._dead > threshold and self._dead > self._end - self._dead:
                self._compact()

    def _split(self) -> None:
        self._cut = True
        self._head_want = self.max_chars // 4
        while self._head_chars < self._head_want and self._blocks:
            block = self._blocks.popleft()
            need = self._head_want - self._head_chars
            if block.chars > need:  # the head ends inside this block: split it where that character ends
                size = len(self._read(block)[:need].encode("utf-8"))
                self._blocks.appendleft(_Block(block.offset + size, block.size - size, block.chars - need))
                block = _Block(block.offset, size, need)
            self._chars -= block.chars
            self._head.append(block)
            self._head_chars += block.chars

    def _compact(self) -> None:
        """Copy the kept blocks to a fresh file, which takes the old one's place."""
        fresh = self.path.with_name(self.path.name + ".new")
        fd = os.open(fresh, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        try:
            end = 0
            for block in [*self._head, *self._blocks]:
                _copy(self._fd, block.offset, block.size, fd, end)
                block.offset = end
                end += block.size
            os.replace(fresh, self.path)
        except BaseException:
            os.close(fd)
            fresh.unlink(missing_ok=True)
            raise
        os.close(self._fd)
        self._fd, self._end, self._dead = fd, end, 0

    def _read(self, block: _Block) -> str:
        return os.pread(self._fd, block.size, block.offset).decode("utf-8")

    def finish(self) -> Spilled:
        """The output as kept, in the file (which the result now owns): with its middle dropped and the marker
        in its place, where it passed the ceiling, as ``OutputBuffer.text`` gives it."""
        self._write(final=True)
        if not self._cut and self._chars > self.max_chars:
            self._split()
            self._limit()
        room = max(0, self.max_chars - self._head_want)
        dropped = self.dropped + max(0, self._chars - room)
        if not dropped and not self._dead:
            os.close(self._fd)
            return Spilled(self.path, self._head_chars + self._chars)
        kept = self._kept_file(room, dropped)
        os.close(self._fd)
        os.replace(kept, self.path)
        marker = len(messages.output_dropped(dropped)) if dropped else 0
        return Spilled(self.path, self._head_chars + marker + min(room, self._chars), dropped)

    def _kept_file(self, room: int, dropped: int) -> Path:
        """A new file: the head, the marker (where ``dropped``), the last ``room`` characters of the rest."""
        kept = self.path.with_name(self.path.name + ".kept")
        fd = os.open(kept, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        try:
            end = 0
            for block in self._head:
                _copy(self._fd, block.offset, block.size, fd, end)
                end += block.size
            if dropped:
                end += _put(fd, messages.output_dropped(dropped).encode("utf-8"), end)
            excess = max(0, self._chars - room)
            for block in self._blocks:
                if excess >= block.chars:  # only where the ceiling was lowered after the block came
                    excess -= block.chars
                    continue
                if excess:
                    end += _put(fd, self._read(block)[excess:].encode("utf-8"), end)
                    excess = 0
                else:
                    _copy(self._fd, block.offset, block.size, fd, end)
                    end += block.size
        except BaseException:
            os.close(fd)
            kept.unlink(missing_ok=True)
            raise
        os.close(fd)
        return kept

    def discard(self) -> None:
        """Close and remove the file: the output is let go."""
        try:
            os.close(self._fd)
        except OSError:
            pass
        self.path.unlink(missing_ok=True)


def _put(fd: int, data: bytes, offset: int) -> int:
    view, written = memoryview(data), 0
    while written < len(data):
        written += os.pwrite(fd, view[written:], offset + written)
    return len(data)


def _copy(src: int, offset: int, size: int, dst: int, at: int) -> None:
    done = 0
    while done < size:
        data = os.pread(src, min(_COPY, size - done), offset + done)
        if not data:
            raise OSError(f"the output file ended {size - done} bytes early")
        _put(dst, data, at + done)
        done += len(data)


class SpillFolder:
    """Names the files of one task's spilled outputs: ``<record>/outputs/<n>.txt``, made as they are first needed,
    each name new (a file left by an earlier run of the task is never written over: the runner clears the folder
    when the task starts again)."""

    def __init__(self, record: Path, disk_limit: int | None = None) -> None:
        self.record = record
        # The task's disk limit, where it has one: a spilled output's file holds at most that many bytes.
        self.disk_limit = disk_limit
        self._next = 0

    def __call__(self) -> Path:
        folder = self.record / OUTPUTS
        folder.mkdir(parents=True, exist_ok=True)
        while True:
            path = folder / f"{self._next}.txt"
            self._next += 1
            if not os.path.lexists(path):
                return path

    def name(self, spilled: Spilled) -> str:
        """The file's name as the step records it, relative to the record."""
        return f"{OUTPUTS}/{spilled.path.name}"


def joined(first: str | Spilled, second: str | Spilled, folder: SpillFolder | None) -> str | Spilled:
    """Two results of one cell, one after the other (a pre-executed cell's output before and after its interrupt)."""
    if isinstance(first, str) and isinstance(second, str):
        return first + second
    if folder is None:  # no file without a folder: only reached by a result made by hand
        raise ValueError("a spilled output needs a folder")
    path = folder()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    end = chars = dropped = 0
    try:
        for part in (first, second):
            if isinstance(part, str):
                end += _put(fd, valid_text(part).encode("utf-8"), end)
                chars += len(part)
                continue
            source = os.open(part.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                size = os.fstat(source).st_size
                _copy(source, 0, size, fd, end)
            finally:
                os.close(source)
            end, chars, dropped = end + size, chars + part.chars, dropped + part.dropped
            part.path.unlink()
    finally:
        os.close(fd)
    return Spilled(path, chars, dropped)
