import re
from collections import Counter, namedtuple

Score = namedtuple("Score", ["precision", "recall", "fmeasure"])

_TOKEN = re.compile(r"[a-z0-9]+")
_SUFFIXES = ("ing", "ed", "es", "ly", "s")


def _stem(token):
    for suffix in _SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)]
    return token


def _score(overlap, candidate_total, reference_total):
    precision = overlap / candidate_total if candidate_total else 0.0
    recall = overlap / reference_total if reference_total else 0.0
    f = 2 * precision * recall / (precision + recall) if overlap else 0.0
    return Score(precision, recall, f)


def _lcs(a, b):
    row = [0] * (len(b) + 1)
    for x in a:
        prev = 0
        for j, y in enumerate(b, start=1):
            prev, row[j] = row[j], prev + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


class RougeScorer:
    """Score a candidate against a reference: ROUGE-1, ROUGE-2, ..., and ROUGE-L ("rougeL")."""

    def __init__(self, rouge_types=("rouge1", "rouge2", "rougeL"), use_stemmer=False):
        self.rouge_types = tuple(rouge_types)
        self.use_stemmer = use_stemmer

    def tokenize(self, text):
        tokens = _TOKEN.findall(text.lower())
        return [_stem(t) for t in tokens] if self.use_stemmer else tokens

    def score(self, reference, candidate):
        ref, cand = self.tokenize(reference), self.tokenize(candidate)
        scores = {}
        for rouge_type in self.rouge_types:
            if rouge_type == "rougeL":
                scores[rouge_type] = _score(_lcs(ref, cand), len(cand), len(ref))
                continue
            n = int(rouge_type[len("rouge") :])
            ref_ngrams = Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1))
            cand_ngrams = Counter(tuple(cand[i : i + n]) for i in range(len(cand) - n + 1))
            overlap = sum((ref_ngrams & cand_ngrams).values())
            scores[rouge_type] = _score(overlap, sum(cand_ngrams.values()), sum(ref_ngrams.values()))
        return scores
