"""Word-context co-occurrence counts in a symmetric window."""

from collections import Counter

import numpy as np


def read_corpus(path):
    with open(path, encoding="utf-8") as f:
        return [line.split() for line in f if line.strip()]


def build_vocab(sentences, min_count):
    counts = Counter(w for s in sentences for w in s)
    words = sorted(w for w, c in counts.items() if c >= min_count)
    return {w: i for i, w in enumerate(words)}


def cooccurrence(sentences, vocab, window):
    m = np.zeros((len(vocab), len(vocab)))
    for sentence in sentences:
        ids = [vocab[w] for w in sentence if w in vocab]
        for i, w in enumerate(ids):
            for j in range(max(0, i - window), min(len(ids), i + window + 1)):
                if j != i:
                    m[w, ids[j]] += 1
    return m
