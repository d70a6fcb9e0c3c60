"""A trajectory's texts (its steps' outputs, or their code) joined, many steps at once, to be searched:
one search over many texts costs less than one per text. Landmarks and answer provenance search the same
joined outputs (``Chunks``), which are joined once for both."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from itertools import accumulate

from super_bench.trajectory import Step

_FIRST_CHUNK = 32  # steps: a whole short trajectory, searched at once
_CHUNK = 1 << 20  # characters joined at most into one text to search (beyond, a text is searched alone)
_PLUS_ONE = (1).__add__  # a text's length with the newline after it


class Text:
    """Texts joined by newlines and searched at once; it tells each hit's text. Where each text starts is
    read once, when first needed, as are the numbers it prints before a ``%`` (``shown.percents``)."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.text = "\n".join(texts)
        self.percents: list[tuple[int, str, Decimal]] | None = None
        self._starts: list[int] | None = None

    @property
    def starts(self) -> list[int]:
        """Where each text starts in the joined text, and one more entry: one past the joined text's end."""
        if self._starts is None:
            self._starts = list(accumulate(map(_PLUS_ONE, map(len, self.texts)), initial=0))
        return self._starts

    def locate(self, offset: int) -> tuple[int, int]:
        """Which text holds ``offset`` (its position), and the offset in it."""
        k = bisect_right(self.starts, offset) - 1
        return k, offset - self.starts[k]

    def after(self, k: int) -> int:
        """Where the text after the ``k``-th starts (past the joined text's end, after the last)."""
        return self.starts[k + 1]


class Chunks:
    """The texts of steps (``texts(steps)``: their outputs, or their code) in chunks of consecutive steps,
    joined as they are first needed and kept, so that a second search reads them again for free, and a
    value shown early is found with little joined. Chunks double in steps (32, 64, ...) up to about
    ``_CHUNK`` characters (a longer text alone, uncopied)."""

    def __init__(self, steps: Sequence[Step], texts: Callable[[Sequence[Step]], list[str]]) -> None:
        self.steps, self.texts = steps, texts
        self.chunks: list[tuple[Sequence[Step], Text]] = []
        self.joined = 0  # steps in the chunks so far

    def __iter__(self) -> Iterator[tuple[Sequence[Step], Text]]:
        k = 0
        while k < len(self.chunks) or self._grow():
            yield self.chunks[k]
            k += 1

    def _grow(self) -> bool:
        first = self.joined
        if first >= len(self.steps):
            return False
        steps = self.steps[first : first + max(_FIRST_CHUNK, 2 * first)]
        texts = self.texts(steps)
        n = len(texts)
        if sum(map(len, texts)) > _CHUNK:
            n = max(1, bisect_right(list(accumulate(map(len, texts))), _CHUNK))
        self.chunks.append((steps[:n], Text(texts[:n])))
        self.joined = first + n
        return True


def outputs(steps: Sequence[Step]) -> list[str]:
    """The steps' raw outputs (``Step.raw_output``, read without a property call per step: a trajectory has
    hundreds)."""
    return [s.observation if s.output is None else s.output for s in steps]
