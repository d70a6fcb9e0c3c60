"""Sparse n-gram features for the Naive Bayes classifier."""

from collections import Counter

import numpy as np
from polartok import Tokenizer


def ngrams(tokens, n_max):
    feats = list(tokens)
    for n in range(2, n_max + 1):
        feats.extend(" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return feats


class NgramVectorizer:
    def __init__(self, ngram_max=1, min_count=1, binary=False, negation=False, lowercase=True):
        self.tokenizer = Tokenizer(lowercase=lowercase, negation=negation)
        self.ngram_max = ngram_max
        self.min_count = min_count
        self.binary = binary
        self.vocab = {}

    def _features(self, sentence):
        feats = ngrams(self.tokenizer(sentence), self.ngram_max)
        return set(feats) if self.binary else feats

    def fit(self, sentences):
        counts = Counter()
        for sentence in sentences:
            counts.update(self._features(sentence))
        kept = sorted(f for f, c in counts.items() if c >= self.min_count)
        self.vocab = {f: i for i, f in enumerate(kept)}
        return self

    def transform(self, sentences):
        x = np.zeros((len(sentences), len(self.vocab)))
        for row, sentence in enumerate(sentences):
            for feat in self._features(sentence):
                col = self.vocab.get(feat)
                if col is not None:
                    x[row, col] += 1
        return x
