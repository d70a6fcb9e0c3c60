"""TF-IDF vectors (numpy, on the host) for short texts."""

import math
import re
from collections import Counter

import numpy as np

STOPWORDS = frozenset("a an and as at by for from in into is of on over the to with after before its new".split())


def tokenize(text):
    return [t for t in re.findall(r"[a-z]+", text.lower()) if t not in STOPWORDS]


def tfidf_matrix(texts, min_df=1, max_df=1.0, sublinear_tf=True):
    docs = [Counter(tokenize(t)) for t in texts]
    df = Counter(term for doc in docs for term in doc)
    limit = max_df * len(docs)
    vocab = sorted(t for t, c in df.items() if min_df <= c <= limit)
    index = {t: i for i, t in enumerate(vocab)}
    x = np.zeros((len(docs), len(vocab)))
    for row, doc in enumerate(docs):
        for term, tf in doc.items():
            col = index.get(term)
            if col is not None:
                weight = 1 + math.log(tf) if sublinear_tf else tf
                x[row, col] = weight * (math.log((1 + len(docs)) / (1 + df[term])) + 1)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1, norms), vocab
