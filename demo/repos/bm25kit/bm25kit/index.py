"""An inverted index with Okapi BM25 scoring."""

import math
from collections import Counter, defaultdict

import numpy as np


class BM25Index:
    def __init__(self, k1=0.9, b=0.4):
        self.k1 = k1
        self.b = b
        self.postings = defaultdict(list)  # term -> [(doc number, term frequency)]
        self.doc_ids = []
        self.doc_lengths = []

    def add(self, doc_id, tokens):
        number = len(self.doc_ids)
        self.doc_ids.append(doc_id)
        self.doc_lengths.append(len(tokens))
        for term, tf in Counter(tokens).items():
            self.postings[term].append((number, tf))

    def finalize(self):
        self.doc_lengths = np.array(self.doc_lengths, dtype=float)
        self.avgdl = float(self.doc_lengths.mean())
        n = len(self.doc_ids)
        self.idf = {t: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in self.postings.items()}
        return self

    def search(self, query_tokens, topk=100):
        scores = np.zeros(len(self.doc_ids))
        norm = self.k1 * (1 - self.b + self.b * self.doc_lengths / self.avgdl)
        for term in query_tokens:
            for number, tf in self.postings.get(term, ()):
                scores[number] += self.idf[term] * tf * (self.k1 + 1) / (tf + norm[number])
        # Stable sort on the negated scores: ties keep collection order.
        order = np.argsort(-scores, kind="stable")[:topk]
        return [(self.doc_ids[i], float(scores[i])) for i in order if scores[i] > 0]
