"""What reaches the user's terminal. Much of what the commands print is agent-controlled or comes from files
anyone can write (task ids, submissions, observations, a run directory's records), and a terminal obeys
what it is sent: an ESC sequence can move the cursor, rewrite lines, set the window title or draw an
OSC-8 link; Rich markup in the text (``[/red]``) crashes the print or restyles it.

``SafeConsole`` is the one choke point every command prints through: each piece of text it renders has
its control characters shown as visible symbols (one for one: ESC as ``␛``, not obeyed) and no link; text
whose markup is broken is printed as it is written. Where a command puts such text inside its own markup,
it escapes it (``shown``), so that the agent's brackets are printed, never read as styles.
"""

from __future__ import annotations

import logging
import re
import shutil
import textwrap
from collections.abc import Iterable
from typing import Any, TextIO

from rich.console import Console, ConsoleOptions, RenderableType
from rich.errors import MarkupError
from rich.markup import escape
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

# C0 controls but tab and newline, DEL, and the C1 controls (a terminal may read 0x9b as CSI).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ESC is shown as ␛
    return "\u2421" if code == 0x7F else "\ufffd"


def defang(text: str) -> str:
    """``text`` with every control character but tab and newline replaced by a visible symbol, one for one."""
    return _CONTROL.sub(_picture, text)


def shown(value: object) -> str:
    """Text from elsewhere (an agent, a file) for a print that uses markup: brackets escaped, controls shown."""
    return escape(defang(str(value)))


def wrapped(text: str, stream: TextIO) -> str:
    """``text`` wrapped at word boundaries to the width of the terminal ``stream`` is (its own line breaks and
    each line's indentation kept; a word longer than a line left whole, for the terminal to fold), so that
    the terminal never cuts a word; unchanged where ``stream`` is no terminal (a log file, a pipe)."""
    try:
        at_a_terminal = stream.isatty()
    except ValueError:  # closed: whatever is written to it goes nowhere
        at_a_terminal = False
    if not at_a_terminal:
        return text
    width = shutil.get_terminal_size().columns

    def fill(line: str) -> str:
        if len(line) <= width:
            return line
        indent = line[: len(line) - len(line.lstrip())]
        return textwrap.fill(line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)

    return "\n".join(fill(line) for line in text.split("\n"))


class WrappedFormatter(logging.Formatter):
    """Log records for a person at a terminal: wrapped at word boundaries (see ``wrapped``)."""

    def __init__(self, fmt: str, stream: TextIO) -> None:
        super().__init__(fmt)
        self.stream = stream

    def format(self, record: logging.LogRecord) -> str:
        return wrapped(super().format(record), self.stream)


def _unlinked(style: Style | None) -> Style | None:
    return style.clear_meta_and_links() if style is not None and style.link else style


class SafeConsole(Console):
    """A Rich console that prints no control character and no link it was given (see the module's doc)."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        try:
            return super().render_str(text, **kwargs)
        except MarkupError:  # brackets that are no markup (a stray [/red]): printed as written
            return super().render_str(text, **{**kwargs, "markup": False})

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control:  # Rich's own cursor movements (a live display), not text
                yield segment
            else:
                yield Segment(defang(segment.text), _unlinked(segment.style))
