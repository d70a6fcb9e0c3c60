"""Suggested landmarks: milestone lines of a solved notebook's outputs, as robust regexes.

A milestone is a line that says the run got somewhere: data was loaded, a training loop finished,
a model or a result file was saved, metrics were computed. Each kind gets at most one landmark:
the first data line, the line of the finished loop (``epoch 3/3``; else the last loop line), the
last saved file and the last metrics line. A line becomes a regex that matches the same milestone
in another run: the text is literal, numbers are generalised (``0.8125`` -> ``-?\\d+\\.\\d+``), except
the counter of a finished loop (``3/3``), which says the loop ran to its end; absolute paths keep
only their last two parts (a sandbox's directory differs from run to run); runs of spaces match
any spacing. Each regex is checked to match its own line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from super_bench.environment.kernel import clean_output

MAX_LINE = 300  # longer lines are not milestones (tables, dumps, progress bars)
KEEP_CHARS = 120  # a suggested landmark covers at most this much of its line

# Lines that are never milestones: git's and pip's chatter, tracebacks, warnings, dumps of values,
# and code or documentation that a cell printed (``cat train.py``, ``cat README.md``).
_NOISE = re.compile(
    r"^(Cloning into|Receiving objects|Resolving deltas|remote:|Note: switching|HEAD is now at|Updating files|"
    r"Collecting|Downloading|Requirement already|Installing collected|Successfully installed|Processing|"
    r"Looking in|Reading package lists|Building dependency tree|Reading state information|Building wheel|"
    r"Created wheel|Stored in|Attempting|Found existing|Uninstalling|Some weights|"
    r"You should probably|Traceback|File \"|\w*(Error|Warning|Exception)\b|ERROR|WARNING|warnings\.warn|note:|hint:|"
    r"[{\['\"(<>/#@|*•╰×-]|\d+\s+(#|\S+\s*=)|"
    r"(from|import|def|class|if|elif|for|while|return|with|raise|print|self)\b|[\w.\[\]'\"]+\s*[-+*/]?=\s*[^\d\s-])"
    r"|.*(`|https?://|\w\(.*\)\s*$|\\$|:$)"
)
# A leading time stamp and log level (``2024-08-19 19:47:46,794 [INFO ] module - ``): not part of the milestone.
_LOG_PREFIX = re.compile(
    r"^\W*\d{2,4}[-/]\d{2}[-/]\d{2,4}[ T,]+\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\W*"
    r"(?:(?:INFO|DEBUG|WARNING|WARN|ERROR|CRITICAL)\b\W*)?(?:[\w.]+ - )?"
)
# A progress bar (tqdm): a milestone once it is full.
_BAR = re.compile(r"^(?P<desc>.*?):?\s*(?P<percent>\d+)%\|[^|]*\|\s*(?P<done>\d+)/(?P<total>\d+)")
_LOOP = re.compile(r"\b(epoch|iteration|iter|step|round|restart|fold|run)s?\b\W{0,3}(\d+)\s*(?:/|of)\s*(\d+)", re.I)
_LOOP_PLAIN = re.compile(r"\b(epoch|iteration|round)\W{0,3}\d+\b", re.I)
_DATA = re.compile(
    r"\b(load(ed|ing)?|read(ing)?|found|indexed|kept|processed|prepared|tokeni[sz]ed|using)\b.*\b\d+\b|"
    r"\b\d+\s+(training |train |test |dev |validation )?(examples|samples|sentences|documents|docs|instances|rows|"
    r"records|images|queries|passages|articles|headlines|pairs|paragraphs|tokens|lines|files|utterances|dialogues)\b",
    re.I,
)
_SAVED = re.compile(r"\b(sav(ed|ing)|wrote|written|writing|stored|exported|dumped)\b.*\b(to|in|into|at)\s+\S", re.I)
_METRIC = re.compile(
    r"\b(accuracy|acc|f1|f-1|macro-f1|precision|recall|loss|perplexity|ppl|bleu|rouge[-\w]*|mrr[@\w]*|ndcg[@\w]*|"
    r"map|auc|mse|rmse|mae|nmi|purity|spearman|pearson|rho|exact.match|em|score|correlation|objective|wer|cer|r2)\b"
    r".{0,40}?-?\d+\.\d+",
    re.I,
)
# A number standing alone (not part of a name such as gpt2, F1, ROUGE-1 or top-100).
# Units may follow (``0.05s``, ``3.2GB``): durations and sizes vary too.
_NUMBER = re.compile(
    r"(?<![\w.@-])-?\d+(\.\d+)?([eE][-+]?\d+)?(?!\.\d)(?=(?:ms|s|sec|min|h|[KMGT]i?B)?\b(?!-[A-Za-z]))"
)
_SPECIAL = re.compile(r"([.^$*+?{}\[\]\\|()])")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_ABSOLUTE_PATH = re.compile(r"(?<![\w.])(/[\w.+-]+){3,}/?")
_SPACES = re.compile(r" {2,}|\t+")


@dataclass(frozen=True)
class Suggestion:
    kind: str  # data, loop, saved, metrics
    line: str  # the output line it was made from
    cell: int  # which output printed it (1-based)
    regex: str
    position: int = 0  # the line's place among all output lines


def milestone(line: str) -> tuple[str, str] | None:
    """The kind of milestone a line marks and the text to make its regex from; None for other lines."""
    line = _LOG_PREFIX.sub("", line.strip())
    if len(line) > MAX_LINE or len(re.findall(r"[A-Za-z]", line)) < 4:
        return None
    bar = _BAR.match(line)
    if bar:
        desc = bar["desc"]
        full = bar["percent"] == "100" and bar["done"] == bar["total"] and re.search(r"[A-Za-z]{3}", desc)
        if re.match(r"(Downloading|Fetching|Uploading)\b|\S+\.\w+$", desc):
            return None  # a file transfer, not a step of the experiment
        return ("loop", line) if full else None
    if _NOISE.match(line):
        return None
    for kind, pattern in (("loop", _LOOP), ("loop", _LOOP_PLAIN), ("metrics", _METRIC), ("saved", _SAVED)):
        if pattern.search(line):
            return kind, line
    return ("data", line) if _DATA.search(line) else None


def generalise(line: str) -> str:
    """A regex for ``line`` in which what varies between runs is generalised."""
    line = line.strip()
    bar = _BAR.match(line)
    if bar:  # the bar's width and speed vary; its description and count do not
        return _literal(bar["desc"]) + r":?\s*100%\|[^|]*\|\s*" + f"{bar['done']}/{bar['total']}"
    if len(line) > KEEP_CHARS:
        cut = line.rfind(" ", 0, KEEP_CHARS)
        line = line[: cut if cut > KEEP_CHARS // 2 else KEEP_CHARS]
    finished = {m.span(2) for m in _LOOP.finditer(line) if m.group(2) == m.group(3)} | {
        m.span(3) for m in _LOOP.finditer(line) if m.group(2) == m.group(3)
    }
    replacements: list[tuple[int, int, str]] = []
    for match in _ABSOLUTE_PATH.finditer(line):
        tail = "/".join(match.group(0).rstrip("/").split("/")[-2:])
        replacements.append((match.start(), match.end(), r"\S*" + _literal(tail)))
    for match in _HEX.finditer(line):
        replacements.append((match.start(), match.end(), r"0x[0-9a-fA-F]+"))
    for match in _NUMBER.finditer(line):
        if match.span() in finished:
            continue
        fraction = (r"\.\d+" if match.group(1) else "") + (r"[eE][-+]?\d+" if match.group(2) else "")
        sign = "-?" if fraction or match.group(0).startswith("-") else ""
        replacements.append((match.start(), match.end(), sign + r"\d+" + fraction))
    for match in _SPACES.finditer(line):
        replacements.append((match.start(), match.end(), r"\s+"))
    parts, position = [], 0
    for start, end, regex in sorted(replacements):
        if start < position:
            continue  # inside a path already replaced
        parts.append(_literal(line[position:start]) + regex)
        position = end
    parts.append(_literal(line[position:]))
    return "".join(parts)


def _literal(text: str) -> str:
    """``text`` as a regex; unlike ``re.escape``, spaces, dashes and the like stay readable."""
    return _SPECIAL.sub(r"\\\1", text)


def suggest_landmarks(outputs: Sequence[str], limit: int = 3) -> list[Suggestion]:
    """Landmarks for the cells' outputs (in cell order), at most ``limit``, in the order they appear."""
    found: dict[str, list[Suggestion]] = {"data": [], "loop": [], "saved": [], "metrics": []}
    position = 0
    for cell, output in enumerate(outputs, start=1):
        for raw in clean_output(output).splitlines():
            position += 1
            found_milestone = milestone(raw)
            if found_milestone is None:
                continue
            kind, line = found_milestone
            regex = generalise(line)
            if re.search(regex, line) and re.search(regex, "") is None:
                found[kind].append(Suggestion(kind, line, cell, regex, position))
    picks: list[Suggestion] = []
    loops = found["loop"]
    finished = [s for s in loops if any(m.group(2) == m.group(3) for m in _LOOP.finditer(s.line))]
    for candidates in (found["data"][:1], (finished or loops)[-1:], found["metrics"][-1:], found["saved"][-1:]):
        picks.extend(s for s in candidates if s.regex not in {p.regex for p in picks})
        if len(picks) >= limit:
            break
    return sorted(picks[:limit], key=lambda s: s.position)
