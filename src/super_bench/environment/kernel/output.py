"""Cell output: accumulating it, cleaning it for the model, and capping its size.

The raw output is what gets graded; the cleaned copy is what the model reads. Every
function here is linear in the size of its input (no regex that can backtrack across a
line), so a cell that prints 100 MB of progress bars costs a second, not hours.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator

from super_bench import messages
from super_bench.environment.kernel import spill as spill_module
from super_bench.environment.kernel.spill import Spilled, SpillFile, SpillFolder
from super_bench.spilled import OUTPUTS, blocks, open_output

# CSI sequences (colours, cursor moves), OSC sequences (titles, hyperlinks) and lone ESC pairs; none spans a line,
# so that a text cleaned a block of lines at a time gives what it gives in one pass.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# Control characters a terminal would not print; newline, tab and carriage return are handled apart.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_BLOCK = 1 << 20


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def clean_output(text: str) -> str:
    """What a terminal would show: no ANSI codes, each carriage-return redraw collapsed to its last state."""
    if len(text) <= _BLOCK:
        return _clean(text)
    return "".join(map(_clean, _blocks(text)))


def _blocks(text: str) -> Iterator[str]:
    """``text`` in blocks of about a megabyte, each ending at a newline. Cleaned block by block, a text
    gives the same result as in one pass (nothing in the cleaning spans a line), at the same speed for
    100 MB as for 1 MB, since each block's copies stay in the CPU's caches. A line longer than a block that
    holds a carriage return (a progress bar redrawn in place: tqdm's 2 million updates are one line of 100 MB)
    comes as what it shows, the text after its last redraw, found in place: that line is never copied whole."""
    start = 0
    while start < len(text):
        end = text.find("\n", start + _BLOCK)
        end = len(text) if end < 0 else end + 1
        if end - start <= 2 * _BLOCK:
            yield text[start:end]
            start = end
            continue
        # [start + _BLOCK, end) holds no newline: one long line runs from line_start to end.
        line_start = text.rfind("\n", start, start + _BLOCK) + 1 or start
        if line_start > start:
            yield text[start:line_start]  # the whole lines before it
        yield _shown(text, line_start, end)
        start = end


def _shown(text: str, start: int, end: int) -> str:
    """The line ``text[start:end]`` (its newline included, if it has one) as ``_clean`` reads it before its ANSI
    pass: past its trailing carriage returns, the text after its last one; copied no further than that."""
    newline = "\n" if text[end - 1 : end] == "\n" else ""
    stop = end - len(newline)
    if text.find("\r", start, stop) < 0:
        return text[start:end]
    while stop > start:  # past the trailing carriage returns, a few thousand at a time
        piece = text[max(start, stop - 4096) : stop]
        kept = piece.rstrip("\r")
        stop -= len(piece) - len(kept)
        if kept:
            break
    redraw = text.rfind("\r", start, stop)
    return text[redraw + 1 if redraw >= 0 else start : stop] + newline


def clean_and_cap(text: str | Spilled, limit: int, head_fraction: float = 0.1) -> str:
    """``cap_text(clean_output(text), limit, head_fraction)``, holding no more than about ``limit``
    characters of the cleaned text at a time (not all of it, as that would: a copy of a flood); of an output in a
    file, reading it a block at a time."""
    if isinstance(text, Spilled):
        return _clean_and_cap(_file_blocks(text), limit, head_fraction)
    if len(text) <= _BLOCK or limit <= 0:
        return cap_text(clean_output(text), limit, head_fraction)
    return _clean_and_cap(_blocks(text), limit, head_fraction)


def _clean_and_cap(blocks: Iterator[str], limit: int, head_fraction: float) -> str:
    if limit <= 0:
        return "".join(map(_clean, blocks))
    head_size = int(limit * head_fraction)
    tail_size = limit - head_size
    whole: list[str] | None = []  # all of it, while it still fits in the limit
    head: list[str] = []
    tail: deque[str] = deque()
    total = kept_head = kept_tail = 0
    for block in blocks:
        cleaned = _clean(block)
        total += len(cleaned)
        if whole is not None:
            whole.append(cleaned)
            if total > limit:
                whole = None
        if kept_head < head_size:
            head.append(cleaned)
            kept_head += len(cleaned)
        tail.append(cleaned)
        kept_tail += len(cleaned)
        while len(tail) > 1 and kept_tail - len(tail[0]) >= tail_size:
            kept_tail -= len(tail.popleft())
    if whole is not None:
        return "".join(whole)
    ending = "".join(tail)
    return (
        f"{''.join(head)[:head_size]}\n[... {total - head_size - tail_size:,} characters omitted ...]\n"
        f"{ending[len(ending) - tail_size :]}"
    )


def _file_blocks(output: Spilled) -> Iterator[str]:
    """The output in its file as ``_blocks`` gives a text: blocks of whole lines of about a megabyte; a line
    longer than that which holds a carriage return, as what it shows past its last redraw (the line itself is never
    held: only the text after its latest carriage return). A line longer than a block with no carriage return is
    held whole, as ``_blocks`` holds it."""
    with open_output(output.path.parent.parent, f"{OUTPUTS}/{output.path.name}") as file:
        line: list[str] = []  # the pieces of the line not yet ended
        size = 0
        for block in blocks(file, _BLOCK):
            cut = block.rfind("\n") + 1
            if cut:
                yield "".join([*line, block[:cut]])
                line, size = [], 0
            rest = block[cut:]
            if not rest:
                continue
            line.append(rest)
            size += len(rest)
            if size > _BLOCK and "\r" in rest:
                # Only the text after the last carriage return that something follows can show; the trailing
                # ones stay, for what comes next.
                text = "".join(line)
                redraw = text.rstrip("\r").rfind("\r")
                line = [text[redraw + 1 :]]
                size = len(line[0])
        if line:
            yield "".join(line)


def _clean(text: str) -> str:
    if "\r" in text:
        # Per line, the text after the last carriage return overdraws everything before it;
        # a trailing one (as in "\r\n") only moves the cursor. Done before the ANSI pass, which then
        # only reads what is left: progress bars shrink many times over here, and no escape sequence
        # holds a carriage return or a newline.
        text = "\n".join(
            [line if "\r" not in line else line.rstrip("\r").rpartition("\r")[2] for line in text.split("\n")]
        )
    return _CONTROL.sub("", strip_ansi(text))


def cap_text(text: str, limit: int, head_fraction: float = 0.1) -> str:
    """Keep at most ``limit`` characters: a short head and a long tail, with a marker between.

    The tail gets most of the room because that is where errors and final metrics appear.
    """
    if limit <= 0 or len(text) <= limit:
        return text
    head = int(limit * head_fraction)
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[... {omitted:,} characters omitted ...]\n{text[len(text) - tail :]}"


class OutputBuffer:
    """The output of one cell, in arrival order, kept under a memory ceiling.

    Beyond ``max_chars`` the middle is dropped (head and tail kept), so a runaway cell cannot exhaust the
    harness's memory; ``dropped`` says how much was lost. Small pieces are gathered into blocks of about a
    megabyte as they come (a progress bar sends millions of pieces of a few dozen characters, each a Python
    object several times its size), and the blocks are joined once when the text is asked for: for that
    moment, a long output is held twice. Past the ceiling, the head's blocks stay as they came and the tail's
    oldest blocks are let go as newer ones arrive, so the buffer holds about ``max_chars`` and one block (1.5
    times ``max_chars`` at most).

    Given ``spill`` (the folder of the task's spilled outputs), an output longer than ``spill_chars``
    (``SPILL_CHARS`` by default) goes on in a file there instead (``kernel.spill``), and ``finish`` gives the file:
    the harness then holds about two blocks of it, whatever its length.

    Nothing here touches the interpreter's internals, so a ``MemoryError`` raised in it is an ordinary
    exception: the kernel client then lets the buffer go and ends the step with an error that says so.
    """

    def __init__(self, max_chars: int, spill: SpillFolder | None = None, spill_chars: int | None = None) -> None:
        self._max_chars = max_chars
        self._spill = spill
        self._spill_chars = spill_module.SPILL_CHARS if spill_chars is None else spill_chars
        self._file: SpillFile | None = None
        self._head: list[str] = []  # the first blocks, once the ceiling has been passed
        self._head_size = 0
        self._chunks: deque[str] = deque()  # the blocks after the head
        self._size = 0  # characters in _chunks and _pending
        self._pending: list[str] = []  # the newest pieces, not yet gathered into a block
        self._pending_size = 0
        self._cut = False  # the ceiling was passed: the head is kept apart, the middle dropped
        self.dropped = 0

    @property
    def max_chars(self) -> int:
        return self._max_chars

    @max_chars.setter
    def max_chars(self, chars: int) -> None:
        self._max_chars = chars
        if self._file is not None:
            self._file.max_chars = chars

    def __len__(self) -> int:
        if self._file is not None:
            return len(self._file)
        return self._head_size + self._size + self.dropped

    def append(self, text: str) -> None:
        if not text:
            return
        if self._file is not None:
            self._file.append(text)
            return
        if self._spill is not None and not self._cut and self._size + len(text) > self._spill_chars:
            self._start_spill(text)
            return
        self._pending.append(text)
        self._pending_size += len(text)
        self._size += len(text)
        if self._pending_size >= _BLOCK and not self._cut and self._size <= self.max_chars:
            self._gather()
        elif self._cut or self._size > self.max_chars * 1.5:
            # As they came, not joined: the tail lets its oldest pieces go one by one.
            self._chunks.extend(self._pending)
            self._pending, self._pending_size = [], 0
            if self._cut:
                self._trim(exact=False)
            elif self._size > self.max_chars * 1.5:  # rarely: small outputs never pay for any of this
                self._split()

    def _start_spill(self, text: str) -> None:
        """Go on in a file: what is held so far first, then ``text``; the memory is let go."""
        assert self._spill is not None
        file = SpillFile(self._spill(), self.max_chars, self._spill.disk_limit)
        try:
            for piece in [*self._chunks, *self._pending, text]:
                file.append(piece)
        except BaseException:
            file.discard()
            raise
        self._file = file
        self._chunks, self._size, self._pending, self._pending_size = deque(), 0, [], 0

    def _gather(self) -> None:
        """The pending pieces, one block at the end of ``_chunks``."""
        if self._pending:
            block = self._pending[0] if len(self._pending) == 1 else "".join(self._pending)
            self._chunks.append(block)
            self._pending, self._pending_size = [], 0

    def _split(self) -> None:
        """Set the head apart (the first quarter of the ceiling), then drop what the tail does not need."""
        want = self.max_chars // 4
        while self._head_size < want and self._chunks:
            chunk = self._chunks.popleft()
            self._size -= len(chunk)
            room = want - self._head_size
            if len(chunk) > room:
                self._chunks.appendleft(chunk[room:])
                self._size += len(chunk) - room
                chunk = chunk[:room]
            self._head.append(chunk)
            self._head_size += len(chunk)
        self._cut = True
        self._trim(exact=False)

    def _trim(self, *, exact: bool) -> None:
        """Drop the oldest blocks the tail can do without (``exact``: down to the character)."""
        want = self.max_chars // 4
        while self._head_size > want:  # the ceiling was lowered: the head's end goes with the middle
            excess = self._head_size - want
            last = self._head.pop()
            keep = last[: max(0, len(last) - excess)]
            self.dropped += len(last) - len(keep)
            self._head_size -= len(last) - len(keep)
            if keep:
                self._head.append(keep)
        room = max(0, self.max_chars - self._head_size)
        while self._chunks and self._size - len(self._chunks[0]) >= room:
            gone = len(self._chunks.popleft())
            self._size -= gone
            self.dropped += gone
        if exact and self._size > room:
            excess = self._size - room
            self._chunks[0] = self._chunks[0][excess:]
            self._size -= excess
            self.dropped += excess

    def text(self) -> str:
        """The kept output; a marker stands where the middle was dropped."""
        self._gather()
        if not self._cut and self._size > self.max_chars:
            self._split()
        if self._cut:
            self._trim(exact=True)
        if not self.dropped:
            return "".join([*self._head, *self._chunks])
        return f"{''.join(self._head)}{messages.output_dropped(self.dropped)}{''.join(self._chunks)}"

    def finish(self) -> str | Spilled:
        """The kept output (``text``), or the file that holds it where it went to one; ``dropped`` says how much
        was left out. The file is the caller's from here on."""
        if self._file is None:
            return self.text()
        file, self._file = self._file, None
        try:
            spilled = file.finish()
        except BaseException:
            file.discard()
            raise
        self.dropped = spilled.dropped
        return spilled

    def take(self) -> str:
        """Return the text and empty the buffer (``clear``)."""
        text = self.text()
        self.clear()
        return text

    def clear(self) -> None:
        """Empty the buffer (its file removed, if it has one): the ceiling and the drop count start afresh."""
        if self._file is not None:
            self._file.discard()
            self._file = None
        self._head, self._head_size, self._chunks, self._size = [], 0, deque(), 0
        self._pending, self._pending_size = [], 0
        self._cut, self.dropped = False, 0
