"""The SUPER reference agent's observation cleaning, reproduced exactly for ``--mode reference``.

The reference agent cleaned every observation before keeping it (its default), and its saved
history, on which the reference evaluator matches landmarks, holds that cleaned text. The rules,
applied in this order, each to the result of the one before (a "line" ends at ``\\n``; ``\\s``
and ``\\d`` are Python's Unicode whitespace and decimal digits):

1. Carriage returns become newlines (``\\r\\n`` and lone ``\\r`` alike).
2. Progress counts: a line with a colon followed by optional whitespace, one or two digits, ``%``,
   optional whitespace and ``(a/b)`` (digits optional on both sides of the slash) is removed with
   its newline, from the start of the line to the end of the line that holds the ``)``; the
   whitespace after the colon or the ``%`` may span blank lines. ``100%`` has three digits and is
   kept. A count on a last line with no newline is kept.
3. Every line containing ``MB/s`` is emptied (its newline stays).
4. ANSI colour codes (``ESC [`` digits and semicolons ``m``) are removed; other escape codes stay.
5. Progress bars: ``N% [...] a / b`` followed by a newline is removed. The removal starts at the
   whitespace and digits just before the line's first ``%`` (reaching back over blank lines and the
   previous line's trailing whitespace, so that the previous line is joined to what follows) and
   ends at the newline after ``a / b``; the line needs a ``[`` after that ``%`` and a ``]`` after
   that, its last ``]`` is followed only by whitespace and digits, a ``/``, and whitespace or
   digits up to a newline (all of which may span lines).
6. Removed with their newline, anywhere in a line: ``gcc``; ``INFO - allennlp.common.params - ``;
   ``INFO - allennlp.nn.initializers``; ``Linear(in_features=``; ``LayerNorm``; ``Dropout(p=``;
   ``allennlp.common.util`` (in the three AllenNLP names the dots stand for any character); and
   ``Downloading`` followed later in the line by ``http`` and later by a digit and ``%``. A last
   line with no newline is kept.

Every rule runs in time linear in the text: the reference's own regular expressions take
quadratic time on long lines, which super-bench avoids by scanning each line once.
"""

from __future__ import annotations

import re

_SGR = re.compile(r"\x1b\[[0-9;]*m")
# The AllenNLP lines; an unescaped dot stands for any character, as it did in the reference.
_NOISE = re.compile(
    "INFO - allennlp.common.params - |INFO - allennlp.nn.initializers|allennlp.common.util"
    r"|Linear\(in_features=|LayerNorm|Dropout\(p=|gcc"
)
_DIGIT_PERCENT = re.compile(r"\d%")


def reference_clean(text: str) -> str:
    """The observation as the reference agent kept it."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _drop_progress_counts(text)
    if "MB/s" in text:
        text = "\n".join("" if "MB/s" in line else line for line in text.split("\n"))
    text = _SGR.sub("", text)
    text = _drop_progress_bars(text)
    return _drop_noise_lines(text)


def _skip(text: str, i: int, kind: str) -> int:
    """The index after the run of whitespace (``kind`` "s") or decimal digits ("d") that starts at ``i``."""
    n = len(text)
    test = str.isspace if kind == "s" else str.isdecimal
    while i < n and test(text[i]):
        i += 1
    return i


def _count_end(text: str, i: int) -> int:
    """After a colon at ``i - 1``: the index after ``\\s* N{1,2} % \\s* ( a / b )``, or -1."""
    n = len(text)
    j = _skip(text, i, "s")
    k = j
    while k < n and k - j < 3 and text[k].isdecimal():
        k += 1
    if not 1 <= k - j <= 2 or k >= n or text[k] != "%":
        return -1
    k = _skip(text, k + 1, "s")
    if k >= n or text[k] != "(":
        return -1
    k = _skip(text, k + 1, "d")
    if k >= n or text[k] != "/":
        return -1
    k = _skip(text, k + 1, "d")
    return k + 1 if k < n and text[k] == ")" else -1


def _drop_progress_counts(text: str) -> str:
    if "%" not in text:
        return text
    out: list[str] = []
    pos = start = 0
    n = len(text)
    while start < n:
        end = text.find("\n", start)
        if end < 0:
            break  # a count on the last, unterminated line is kept
        colon = text.rfind(":", start, end)
        removed_to = -1
        while colon >= 0:  # the last colon first, as a greedy match tries them
            count = _count_end(text, colon + 1)
            if count >= 0:
                newline = end if count <= end else text.find("\n", count)
                if newline >= 0:
                    removed_to = newline + 1
                    break
            colon = text.rfind(":", start, colon)
        if removed_to >= 0:
            out.append(text[pos:start])
            pos = start = removed_to
        else:
            start = end + 1
    out.append(text[pos:])
    return "".join(out)


def _bar_end(text: str, i: int) -> int:
    """After a ``]`` at ``i - 1``: the index after ``\\s* \\d* \\s* / \\s* \\d* \\n``, or -1."""
    n = len(text)
    k = _skip(text, _skip(text, _skip(text, i, "s"), "d"), "s")
    if k >= n or text[k] != "/":
        return -1
    spaces_end = _skip(text, k + 1, "s")
    digits_end = _skip(text, spaces_end, "d")
    if digits_end > spaces_end and digits_end < n and text[digits_end] == "\n":
        return digits_end + 1
    # Otherwise the match backs off to the last newline in the whitespace after the slash.
    newline = text.rfind("\n", k + 1, spaces_end)
    return newline + 1 if newline >= 0 else -1


def _drop_progress_bars(text: str) -> str:
    if "%" not in text:
        return text
    out: list[str] = []
    pos = start = 0
    n = len(text)
    while start < n:
        # Only a line's first % can start a match (any later one would need the same "]" and tail), so
        # the lines before the next % are passed over at once.
        percent = text.find("%", start)
        if percent < 0:
            break
        newline = text.rfind("\n", start, percent)
        start = start if newline < 0 else newline + 1
        end = text.find("\n", percent)
        end = n if end < 0 else end
        bracket = text.rfind("]", percent + 1, end)
        removed_to = -1
        if bracket >= 0 and text.find("[", percent + 1, bracket) >= 0:
            removed_to = _bar_end(text, bracket + 1)
        if removed_to < 0:
            start = end + 1
            continue
        first = percent
        while first > pos and text[first - 1].isdecimal():
            first -= 1
        while first > pos and text[first - 1].isspace():
            first -= 1
        out.append(text[pos:first])
        pos = start = removed_to
    out.append(text[pos:])
    return "".join(out)


def _noise(line: str) -> bool:
    if _NOISE.search(line):
        return True
    at = line.find("Downloading")
    if at < 0:
        return False
    at = line.find("http", at + len("Downloading"))
    return at >= 0 and _DIGIT_PERCENT.search(line, at + len("http")) is not None


def _drop_noise_lines(text: str) -> str:
    if "Downloading" not in text and _NOISE.search(text) is None:
        return text  # the common case: nothing to drop, no need to look at each line
    lines = text.split("\n")
    kept = [line for line in lines[:-1] if not _noise(line)]
    kept.append(lines[-1])  # the last line has no newline: the reference kept it whatever it says
    return "\n".join(kept)
