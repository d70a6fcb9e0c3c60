"""Landmark regexes that cannot hang the scorer.

Landmarks are searched in whole outputs (megabytes of pip logs and progress bars, newlines turned
into spaces) with a backtracking engine, the one scoring uses (``scoring.landmarks``). A pattern
whose repetitions can match the same text in many ways, such as ``(a+)+$`` or ``(a|aa)+$``, takes
exponential time on a line that almost matches. Each pattern is run on inputs built to provoke
that: every repeated part of the pattern pumped many times and followed by a character that breaks
the match, and a 100,000-character log with the pattern's matches removed. The engine stops a
search that exceeds the time limit (its ``timeout``), and the pattern is reported.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

import regex

from super_bench.tasks._regex_syntax import Node, parse
from super_bench.tasks.model import compile_landmark

DEFAULT_TIMEOUT = 2.0
# A repeated part is pumped this many times (enough for an exponential blowup), and to this many
# characters (enough for a polynomial one).
_PUMP_TIMES = 32
_PUMP_CHARS = 2000
_LOG_SIZE = 100_000
# Lines of the kind research code prints, for the large-output test.
_LOG_LINES = (
    "Collecting numpy>=1.24 (from -r requirements.txt (line 2))",
    "  Downloading numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.whl (18.3 MB)",
    "     |████████████████████████████████| 18.3 MB 42.1 MB/s eta 0:00:01",
    "Successfully installed numpy-1.26.4 tqdm-4.66.2",
    "Loading dataset from data/train.jsonl: 12000 examples",
    "Epoch 3/10:  45%|████▌     | 450/1000 [00:12<00:15, 36.21it/s, loss=0.4312]",
    "epoch 3 step 450 loss 0.43121 lr 2.0e-05 grad_norm 1.2203",
    "{'eval_loss': 0.5123, 'eval_accuracy': 0.8125, 'eval_runtime': 3.21, 'epoch': 3.0}",
    "Saving model checkpoint to output/checkpoint-450",
    "WARNING:root:Token indices sequence length is longer than the specified maximum (612 > 512)",
    'Traceback (most recent call last):   File "train.py", line 88, in <module>',
    "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB",
    "    0.7123  0.6543  0.8812  -0.0012  1e-08  3.14159",
)


def _class_char(negated: bool, items: Sequence[Node]) -> str:
    """A character the ``[...]`` class made of ``items`` matches."""
    named = {"d": "0", "s": " ", "w": "a"}
    if negated:
        excluded = set()
        for item in items:
            if item[0] == "lit":
                excluded.add(item[1])
            elif item[0] == "range":
                excluded.update(chr(c) for c in range(item[1], min(item[2], item[1] + 256) + 1))
            elif item[0] == "cat":
                excluded.add(named.get(item[1], ""))
        return next((c for c in "a0 x-#Z" if c not in excluded), "a")
    opposite = named | {"D": "a", "S": "a", "W": " "}
    for item in items:
        if item[0] == "lit":
            return str(item[1])
        if item[0] == "range":
            return chr(item[1])
        if item[0] == "cat":
            return opposite[item[1]]
    return "a"


def _sample(body: Sequence[Node]) -> str:
    """A short string the parsed pattern ``body`` matches (best effort: look-arounds are ignored)."""
    parts = []
    for node in body:
        kind = node[0]
        if kind == "lit":
            parts.append(node[1])
        elif kind == "any":
            parts.append("a")
        elif kind == "in":
            parts.append(_class_char(node[1], node[2]))
        elif kind == "group":
            parts.append(_sample(node[1]))
        elif kind == "branch":
            parts.append(_sample(node[1][0]))
        elif kind == "repeat":
            parts.append(_sample(node[3]) * min(node[1], 50))
    return "".join(parts)


def _pumps(body: Sequence[Node]) -> Iterator[str]:
    """One iteration of every repeated part of the pattern (and of each alternative inside one)."""
    for node in body:
        kind = node[0]
        if kind == "repeat":
            _, _, most, inner = node
            if most is None or most > 10:
                yield _sample(inner)
                for part in inner:
                    if part[0] == "group":
                        for sub in part[1]:
                            if sub[0] == "branch":
                                yield from (_sample(alternative) for alternative in sub[1])
            yield from _pumps(inner)
        elif kind in ("group", "look"):
            yield from _pumps(node[1])
        elif kind == "branch":
            for alternative in node[1]:
                yield from _pumps(alternative)


def adversarial_inputs(pattern: str) -> list[str]:
    """Inputs that make a backtracking pattern as slow as it can be."""
    parsed = parse(pattern)
    inputs: dict[str, None] = {}
    for i, item in enumerate(parsed):
        prefix = _sample(parsed[:i])
        for pump in dict.fromkeys(_pumps([item])):
            if not pump:
                continue
            for body in (pump * _PUMP_TIMES, pump * max(_PUMP_CHARS // len(pump), 1)):
                for tail in ("\x00", "!"):
                    inputs[prefix + body + tail] = None
    return list(inputs)


def realistic_log(pattern: regex.Pattern[str], timeout: float | None = None) -> str:
    """About 100,000 characters of log output without a match of ``pattern``, newlines as spaces (as
    landmarks are searched), so that the search has to fail on a large output. Raises ``TimeoutError``
    when removing the matches takes more than ``timeout`` seconds."""
    deadline = None if timeout is None else time.monotonic() + timeout
    lines = " ".join(pattern.sub("", line, timeout=_left(deadline)) for line in _LOG_LINES)
    text = (lines + " ") * (_LOG_SIZE // (len(lines) + 1) + 1)
    for _ in range(3):  # joining the lines may have made new matches
        stripped = pattern.sub("", text, timeout=_left(deadline))
        if stripped == text:
            break
        text = stripped
    return text


def slow_patterns(patterns: Sequence[str], timeout: float = DEFAULT_TIMEOUT) -> dict[int, str]:
    """The patterns (by index) that take longer than ``timeout`` seconds on adversarial input, with why.

    Every pattern must compile."""
    slow: dict[int, str] = {}
    for index, pattern in enumerate(patterns):
        if not _finishes(pattern, timeout):
            slow[index] = (
                f"takes more than {timeout:g} s on adversarial input (catastrophic backtracking: nested or adjacent "
                "repetitions that can match the same text, or a leading .*); simplify it"
            )
    return slow


def _finishes(pattern: str, timeout: float) -> bool:
    """Whether every search of the adversarial inputs, and of a large log, ends within ``timeout`` seconds in all."""
    compiled = compile_landmark(pattern)
    deadline = time.monotonic() + timeout
    try:
        for text in adversarial_inputs(pattern):
            compiled.search(text, timeout=_left(deadline))
        compiled.search(realistic_log(compiled, _left(deadline)), timeout=_left(deadline))
    except TimeoutError:
        return False
    return True


def _left(deadline: float | None) -> float | None:
    """Seconds until ``deadline``; a search given none left still starts, and stops at its first check."""
    return None if deadline is None else max(deadline - time.monotonic(), 1e-6)
