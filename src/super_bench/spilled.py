"""A step's raw output kept in a file beside its trajectory, when it is longer than the harness holds in memory.

Past ``kernel.spill.SPILL_CHARS`` characters, a cell's output goes to a file of the task's record
(``tasks/<name>/outputs/<n>.txt``, UTF-8, the output exactly as ``Step.output`` would hold it) instead of one
string in the harness's memory. The step then names the file (``Step.output_file``) and keeps only a head and a
tail of the raw output in ``Step.output``; the file is read a block at a time: the model's cleaned copy, the
landmarks' search (``scoring.landmarks``). A trajectory names such a file only as ``outputs/<n>.txt`` under its own
directory, opened without following a link.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from pydantic import ConfigDict, Field

from super_bench._files import UnsafeFileError
from super_bench._pydantic import Model

OUTPUTS = "outputs"  # the folder of a task's record that holds its spilled outputs
BLOCK = 1 << 20  # characters read at a time


class OutputFile(Model):
    """Where a step's raw output is kept, when it is kept in a file: its name beside the trajectory, its length."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^outputs/[0-9]{1,9}\.txt$", description="Relative to the trajectory's directory")
    chars: int = Field(ge=0, description="Characters of raw output the file holds")


def open_output(directory: Path, name: str) -> io.FileIO:
    """The spilled output ``name`` of the record in ``directory``, open for reading (``blocks`` reads its text),
    through neither a linked folder nor a linked file (``UnsafeFileError``)."""
    folder, _, file = name.partition("/")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        dir_fd = os.open(directory / folder, flags | os.O_DIRECTORY)
    except OSError as e:
        if e.errno in (errno.ENOTDIR, errno.ELOOP):  # ENOTDIR, ELOOP: a file or a link where the folder should be
            raise UnsafeFileError(directory / folder, "is not a folder of the record: not read") from None
        raise
    try:
        fd = os.open(file, flags | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UnsafeFileError(directory / name, "is a symbolic link: not followed") from None
        raise
    finally:
        os.close(dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafeFileError(directory / name, "is not a regular file: not read")
    os.set_blocking(fd, True)
    return io.FileIO(fd, "r")


def blocks(file: io.FileIO, size: int = BLOCK) -> Iterator[str]:
    """The file's text, newlines as they are, in blocks of at most ``size`` characters (``size`` bytes decoded at a
    time: a text file's reader would read it 8 KiB at a time)."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    while data := file.read(size):
        if text := decoder.decode(data):
            yield text
    if text := decoder.decode(b"", final=True):
        yield text


def excerpt(directory: Path, output: OutputFile, limit: int, head_fraction: float = 0.1) -> str:
    """The output's head and tail, ``limit`` characters in all, with a marker between (``kernel.cap_text``'s form),
    read from the file without holding more of it than that."""
    if output.chars <= limit:
        with open_output(directory, output.name) as file:
            return "".join(blocks(file))
    head_size = int(limit * head_fraction)
    tail_size = limit - head_size
    with open_output(directory, output.name) as raw:
        head = raw.read(4 * head_size).decode("utf-8", "replace")[:head_size]
        # A character is at most 4 bytes: the tail's characters lie in the file's last 4 * tail_size bytes.
        end = raw.seek(0, os.SEEK_END)
        raw.seek(max(0, end - 4 * tail_size - 3))
        data = raw.readall()
        skip = 0  # past the bytes of a character cut at the start
        while skip < min(3, len(data)) and 0x80 <= data[skip] < 0xC0:
            skip += 1
        tail = data[skip:].decode("utf-8", "replace")[-tail_size:] if tail_size else ""
    omitted = output.chars - head_size - tail_size
    return f"{head}\n[... {omitted:,} characters omitted ...]\n{tail}"
